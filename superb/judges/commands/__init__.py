"""The command layer of `superb judge`: the spec it reads, the run that writes results/NAME/, the CLI.

  spec   judge specs (TOML), checked strictly when read
  run    a judge spec run: the pool, each judge variant, the agreement tables and the studies it names
  cli    `superb judge SPEC` and `superb judge --fill results/NAME` (superb/cli.py registers it)
"""
