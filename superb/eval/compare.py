"""``superb compare A B``: two run folders' tables side by side, with the difference of every mean (b - a); and
``superb show A``: a run folder's table.md.

Both folders are opened through superb.folder (each file read checked against its recorded sha256; ``--unverified``
reads a changed one anyway and the printout says so). Columns are labelled ``--names A,B``, else by the folders'
names, else (two folders of one name, or one folder given twice) by as much of their paths as tells them apart.
Folders evaluated on different queries are refused unless ``--different-queries``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from superb.errors import SpecError, SuperbError
from superb.eval.table_markdown import format_side_by_side, side_by_side
from superb.folder.base import ResultsFolder
from superb.folder.kinds import open_folder
from superb.folder.layout import TABLE_MD
from superb.folder.run_folder import RunFolder
from superb.folder.verify import note

TAKES = "a folder written by `superb run`, `superb evaluate` or `superb merge` (e.g. results/quickstart)"


def labels(a: Path, b: Path, names: str | None = None) -> tuple[str, str]:
    """The two columns' labels: ``names`` ("A,B"), else the folders' names, else the shortest ends of their paths
    that differ, else (the same folder twice) its name numbered."""
    if names is not None:
        given = [n.strip() for n in names.split(",")]
        if len(given) != 2 or not all(given) or given[0] == given[1]:
            raise SpecError("--names", f"{names!r}: give two different labels, one per folder, e.g. --names "
                                       "committed,mine")
        return given[0], given[1]
    if a.name != b.name:
        return a.name, b.name
    pa, pb = a.parts, b.parts
    for k in range(2, max(len(pa), len(pb)) + 1):
        la, lb = "/".join(pa[-k:]), "/".join(pb[-k:])
        if la != lb:
            return la, lb
    return f"{a.name} (1)", f"{a.name} (2)"


def query_sets_differ(a: RunFolder, b: RunFolder, names: Sequence[str]) -> str:
    """"" when two folders were evaluated on the same queries (their topics.tsv), else a sentence naming the
    counts: shared, only in one, only in the other."""
    qa, qb = set(a.topics()["qid"]), set(b.topics()["qid"])
    if qa == qb:
        return ""
    return (f"{a.path} and {b.path} were evaluated on different queries: {len(qa & qb)} shared, {len(qa - qb)} only "
            f"in {names[0]}, {len(qb - qa)} only in {names[1]}")


def compared_measure(name: str, known: set[str]) -> str:
    """The table's name for ``--measure name``: itself, or the one measure it names once the binary threshold is set
    (a spec's ``P@5`` is written ``P(rel=2)@5`` on a data set whose threshold is 2); else a SuperbError listing them."""
    import ir_measures

    if name in known:
        return name

    def key(text: str, keep_rel: bool):
        try:
            m = ir_measures.parse_measure(text)
        except Exception:  # noqa: BLE001 - ir_measures raises NameError, ValueError, AssertionError... on bad names
            return None
        return m.NAME, tuple(sorted((k, v) for k, v in m.params.items() if keep_rel or k != "rel"))

    explicit = "rel" in name
    wanted = key(name, keep_rel=explicit)
    same = sorted(k for k in known if wanted is not None and key(k, keep_rel=explicit) == wanted)
    if len(same) == 1:
        return same[0]
    why = f"it could be any of {same}" if same else "it is in neither table"
    raise SuperbError(f"--measure {name!r}: {why}; the tables have {', '.join(sorted(known))}")


@dataclass
class Comparison:
    """What ``superb compare`` prints: the side-by-side table, and the warnings for stderr."""

    text: str
    warnings: list[str] = field(default_factory=list)


def compare(a: str | Path, b: str | Path, *, names: str | None = None, measures: Sequence[str] | None = None,
            different_queries: bool = False, unverified: bool | None = None) -> Comparison:
    """The two folders' tables side by side (see the module docstring)."""
    first, second = (open_folder(p, RunFolder, unverified=unverified, what=TAKES, record_optional=True)
                     for p in (a, b))
    shown = labels(Path(a), Path(b), names)
    ta, tb = first.tables(), second.tables()
    warnings = []
    differ = query_sets_differ(first, second, shown)
    if differ and not different_queries:
        raise SuperbError(f"{differ}: their means are not comparable. Compare folders evaluated on the same queries, "
                          "or pass --different-queries to print them side by side anyway")
    if differ:
        warnings.append(f"{differ}; the differences below mix query sets")
    if first.path.resolve() == second.path.resolve():
        warnings.append(f"{first.path} is given twice: every difference is 0")
    chosen = None if not measures else [compared_measure(m, set(ta["measure"]) | set(tb["measure"]))
                                         for m in measures]
    text = format_side_by_side(side_by_side(ta, tb, names=shown, measures=chosen), shown)
    marked = note(list({(m.folder, m.name): m for m in first.mismatches + second.mismatches}.values()))
    return Comparison(f"{marked}\n\n{text}" if marked else text, warnings)


def shown_table(folder: str | Path, *, unverified: bool | None = None) -> str:
    """``superb show``: table.md of a run's folder or a ``superb table`` folder, checked against its record (marked
    when read unverified)."""
    opened = open_folder(folder, ResultsFolder, unverified=unverified, what=TAKES, record_optional=True)
    text = opened.read_text(TABLE_MD)
    marked = note(opened.mismatches)
    return f"{marked}\n\n{text}" if marked else text
