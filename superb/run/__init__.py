"""The run backbone: a spec read and checked (``spec``, ``spec_pipelines``, ``spec_names``), its systems run over the
data set's queries (``experiment``), evaluated and written as a results folder (``results``), run in shards and
merged (``shards``, ``merge``), and other tools' run files evaluated the same way (``evaluate_runs``). Importing this
package imports none of them."""
