"""The results folder's one owner: its file names, the kinds of folder, the one reader, the check of every file read.

- ``superb.folder.layout``: every file name a results folder holds, in one place.
- ``superb.folder.kinds``: :func:`open_folder` reads provenance.json once and returns the folder as its kind (a run,
  a shard, a merged run, a ``superb table`` folder, a judge folder, results/bench), refusing a kind the command does
  not take; ``superb.folder.run_folder``: what a run's folder holds, read the one way (systems, runs, topics, qrels,
  tables, usage, per-query values, stage scores, each system's baseline by the spec's rule).
- ``superb.folder.verify``: each file read is checked against the sha256 provenance.json records; ``--unverified``
  reads it anyway and marks the output.
- ``superb.folder.spec``: the one place a folder's spec is parsed (merge, ``superb judge --fill``).

provenance.json itself is written by superb.provenance.write, once per folder a command writes.
"""
