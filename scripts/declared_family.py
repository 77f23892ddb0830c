"""Holm over a declared family whose tests span views one table cannot hold (condensed in table.csv, filled in
table_filled.csv): each declared test's raw p (paired t, as superb computed it) is read from the folder's tables and
the family is corrected with superb's own Holm (superb.eval.stats.correct). Writes FOLDER/declared_family.csv.

    python scripts/declared_family.py results/chorus_expansion_test experiments/chorus_expansion_test.declared.toml
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pandas as pd

from superb.eval.stats import correct
from superb.run.results import read_table

def raw_test(table: pd.DataFrame, system: str, against: str, view: str, measure: str) -> tuple[float, float]:
    """(delta of system minus against, raw p) of the table row comparing the two, in either orientation."""
    rows = table[(table["view"] == view) & (table["measure"] == measure)]  # read_table: spec names in every view
    for a, b, sign in ((system, against, 1.0), (against, system, -1.0)):
        hit = rows[(rows["system"] == a) & (rows["baseline"] == b)]
        if len(hit):
            return sign * float(hit["delta"].iloc[0]), float(hit["p"].iloc[0])
    raise SystemExit(f"no row compares {system!r} with {against!r} on {measure} ({view})")


def main(folder: Path, declared: Path) -> Path:
    table = read_table(folder)
    hypotheses = tomllib.loads(declared.read_text(encoding="utf-8"))["hypotheses"]
    rows = []
    for h in hypotheses:
        for view in h["views"]:
            for measure in h["measures"]:
                delta, p = raw_test(table, h["system"], h["against"], view, measure)
                rows.append({"system": h["system"], "against": h["against"], "view": view, "measure": measure,
                             "family": h["family"], "delta": delta, "p": p})
    frame = pd.DataFrame(rows)
    frame["family_size"] = frame.groupby("family")["p"].transform("size")
    for family, index in frame.groupby("family").groups.items():
        corrected, reject = correct(frame.loc[index, "p"].to_numpy(), "holm", 0.05)
        frame.loc[index, "p_holm"] = corrected
        frame.loc[index, "reject"] = reject
    out = folder / "declared_family.csv"
    frame.to_csv(out, index=False)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python scripts/declared_family.py RESULTS_FOLDER DECLARED.toml")
    print(main(Path(sys.argv[1]), Path(sys.argv[2])))
