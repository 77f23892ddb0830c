"""The folder of a run: systems evaluated on one set of queries (``superb run``, ``superb evaluate``, ``superb merge``
and a shard of a run), read back the one way every command reads it.

Its systems and their run files (systems.json, runs/), the queries and labels evaluated (topics.tsv, qrels.trec, an
LLM judge's llm_qrels.trec), the tables (table.csv and table_<view>.csv), table.md, usage.csv, perquery.csv,
stage_scores.csv.gz, and each system's baseline by the spec's rule (:func:`baselines_of`). Every file comes out of
:meth:`ResultsFolder.file`, checked against its recorded sha256.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from superb.errors import DataError, SpecError
from superb.folder import layout
from superb.folder.base import ResultsFolder
from superb.options import baseline
from superb.stage_scores import read_stage_scores


def baselines_of(pipelines: Any, where: str = "the spec") -> dict[str, str | None]:
    """Each pipeline's baseline by the spec's one rule (superb.options.baseline). ``pipelines``: a spec's
    [[pipelines]] tables as provenance.json keeps them; a malformed one is a DataError naming ``where``."""
    if not isinstance(pipelines, list):
        raise DataError(f"{where}: its spec's pipelines are not a list of tables")
    out: dict[str, str | None] = {}
    for i, table in enumerate(pipelines):
        name = table.get("name") if isinstance(table, dict) else None
        if not isinstance(name, str):
            raise DataError(f"{where}: pipelines[{i}] has no name")
        try:
            out[name] = baseline(table, f"pipelines[{i}]")
        except SpecError as exc:
            raise DataError(f"{where}: {exc}") from exc
    return out


class RunFolder(ResultsFolder):
    """A folder of systems evaluated on one set of queries (see the module docstring)."""

    kind = "the results folder of a run"
    written_by = "`superb run`, `superb evaluate` or `superb merge`"

    @classmethod
    def recognises(cls, record: dict[str, Any]) -> bool:
        spec = record.get("spec")
        return isinstance(spec, dict) and isinstance(spec.get("pipelines"), list)

    def fix(self, name: str) -> str:
        spec = self.provenance.get("spec_file") or "SPEC"
        return (f"Restore it (`git checkout -- {self.path / name}` for a committed folder) or write the folder again "
                f"(`superb responses replay {self.path}`, then `superb run {spec} --out {self.path}`: 0 LLM calls)")

    # --- what the run was ----------------------------------------------------------------------------------------
    @property
    def spec_raw(self) -> dict[str, Any]:
        """The spec as provenance.json keeps it (the TOML's tables; {} for a folder copied without provenance.json);
        superb.folder.spec parses it."""
        return self.provenance.get("spec") or {}

    @property
    def name(self) -> str:
        return str(self.spec_raw.get("name") or self.path.name)

    @property
    def baselines(self) -> dict[str, str | None]:
        """Each system's baseline by the spec's rule (:func:`baselines_of`)."""
        return baselines_of(self.spec_raw.get("pipelines") or [], f"{self.path / layout.PROVENANCE}")

    @property
    def hypotheses(self) -> list[dict[str, Any]]:
        """The declared [[hypotheses]] tables that name a system and what it is tested against."""
        return [h for h in self.spec_raw.get("hypotheses") or []
                if isinstance(h, dict) and h.get("system") and h.get("against")]

    @property
    def rel(self) -> int:
        """The label from which a product counts as relevant in binary measures."""
        return int((self.provenance.get("dataset") or {}).get("rel_threshold")
                   or (self.spec_raw.get("evaluation") or {}).get("rel") or 1)

    # --- systems and runs ------------------------------------------------------------------------------------------
    def systems(self) -> dict[str, str]:
        """System name -> run file (relative path), in the table's order."""
        systems = self.read_json(layout.SYSTEMS)
        if not isinstance(systems, dict) or not all(isinstance(v, str) for v in systems.values()):
            raise DataError(f"{self.path / layout.SYSTEMS} does not map system names to run files: "
                            f"{self.fix(layout.SYSTEMS)}")
        return systems

    def runs(self, names: Sequence[str] | None = None) -> dict[str, pd.DataFrame]:
        """The run of each system (``names``: those, in that order), as superb.trec.runs.read_run reads it."""
        from superb.trec.runs import read_run

        systems = self.systems()
        chosen = list(systems) if names is None else list(names)
        unknown = [n for n in chosen if n not in systems]
        if unknown:
            raise DataError(f"{self.path}: no system {unknown[0]!r} in {layout.SYSTEMS} (it has {list(systems)})")
        return {n: read_run(self.file(systems[n])) for n in chosen}

    def stage_scores(self) -> pd.DataFrame | None:
        """stage_scores.csv.gz (superb.stage_scores), or None for a folder written before it existed."""
        if not self.has(layout.STAGE_SCORES):
            return None
        self.file(layout.STAGE_SCORES)
        return read_stage_scores(self.path)

    # --- queries, labels, tables ---------------------------------------------------------------------------------
    def topics(self) -> pd.DataFrame:
        """qid, query (text) of the queries evaluated, in the folder's order: topics.tsv as the results writer wrote
        it (tab-separated, a text holding a quote CSV-quoted)."""
        frame = pd.read_csv(self.file(layout.TOPICS), sep="\t", header=None, names=["qid", "query"], dtype=str,
                            keep_default_na=False)
        return frame

    def qrels(self) -> pd.DataFrame:
        from superb.trec.runs import read_qrels

        return read_qrels(self.file(layout.QRELS))

    def llm_qrels(self) -> pd.DataFrame | None:
        """An LLM judge's labels (``superb judge --fill``), or None when the folder has none."""
        from superb.trec.runs import read_qrels

        return read_qrels(self.file(layout.LLM_QRELS)) if self.has(layout.LLM_QRELS) else None

    def tables(self) -> pd.DataFrame:
        """Every row of table.csv and table_<view>.csv, measures under their spec names (superb.eval.table_files)."""
        from superb.eval.table_files import read_table_files

        names = [layout.TABLE] + sorted(p.name for p in self.path.glob(layout.view_table("*")))
        return read_table_files([self.file(n, missing=f"is {self.path} a folder written by `superb run`?")
                                 for n in names])

    def table_md(self) -> str:
        return self.read_text(layout.TABLE_MD)

    def usage(self) -> pd.DataFrame | None:
        """usage.csv, or None when the folder has none."""
        return pd.read_csv(self.file(layout.USAGE)) if self.has(layout.USAGE) else None

    def perquery(self) -> pd.DataFrame:
        return pd.read_csv(self.file(layout.PERQUERY), dtype={"qid": str})


class ShardFolder(RunFolder):
    """One shard of a run (``superb run SPEC --shard i/n``): a run folder over part of the queries, whose
    provenance.json records the shard (``sharding``: index, count, the whole selection and its own qids)."""

    kind = "one shard of a run"
    written_by = "`superb run SPEC --shard i/n`"

    @classmethod
    def recognises(cls, record: dict[str, Any]) -> bool:
        sharding = record.get("sharding")
        return super().recognises(record) and isinstance(sharding, dict) and "shard" in sharding

    @property
    def record(self) -> dict[str, Any]:
        return self.provenance["sharding"]

    @property
    def label(self) -> str:
        return str(self.record.get("shard"))

    def fix(self, name: str) -> str:
        return f"Run shard {self.label} again (`superb run SPEC --shard {self.label}`), or restore the file"


class MergedFolder(RunFolder):
    """The n shards of a run merged into one folder (``superb merge``)."""

    kind = "a merged run"
    written_by = "`superb merge`"

    @classmethod
    def recognises(cls, record: dict[str, Any]) -> bool:
        sharding = record.get("sharding")
        return super().recognises(record) and isinstance(sharding, dict) and "merged" in sharding
