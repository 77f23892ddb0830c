"""The table a judging paper prints: per judge and collection, its agreement with the human labels and how well the
system orderings under its labels follow the human ones, from `superb judge` folders, with other papers' published
rows quoted beside (never tested).

Per collection (a judge folder), per judge (a variant; its model from the folder's calibration.json):

- kappa, linear kappa, quadratic kappa and exact agreement with the human label on the folder's TEST pairs
  (agreement_calibrated.csv: ``split = "test"``, against the collection's label), each with its 95% query-bootstrap
  interval;
- Kendall's tau, tau_ap and Spearman's rho between the system orderings by one measure (default nDCG@10) under the
  human qrels and under the judge's LLM-only qrels ("llm") and the human qrels filled with its labels ("filled"), with
  their intervals (label_study.csv of a `[label_study] depth` study).

Quoted rows come from a CSV with columns ``method``, ``model``, ``source`` (paper, table, and where the number is)
and one column per collection and statistic named ``<collection>_<statistic>`` in lower case (``dl19_kappa``,
``dl20_tau_llm``); an empty cell is "not published" (or not read), shown as "–".

Written: table.csv (long form: judge, model, collection, statistic, value, low, high, n, kind, source), table.md and
table.tex (one booktabs tabular; the collections as column groups).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from superb.errors import SuperbError
from superb.eval.latex_width import ARTICLE_TEXT, TWO_COLUMN, tabular_width, text_width
from superb.eval.paper_table_latex import escape
from superb.folder import layout
from superb.folder.kinds import JudgeFolder, kind_of, open_folder
from superb.folder.verify import as_records

#: statistic -> (label in the tables, file it comes from)
STATISTICS: dict[str, str] = {
    "kappa": "kappa", "kappa_linear": "linear kappa", "kappa_quadratic": "quadratic kappa",
    "agreement": "exact agreement", "tau_llm": "tau (LLM qrels)", "tau_filled": "tau (filled)",
    "tau_ap_llm": "tau_ap (LLM qrels)", "tau_ap_filled": "tau_ap (filled)", "rho_llm": "rho (LLM qrels)",
    "rho_filled": "rho (filled)",
}
DEFAULT_STATISTICS = ("kappa_linear", "tau_llm", "tau_filled")
COLUMNS = ["judge", "model", "collection", "statistic", "value", "low", "high", "n", "kind", "source"]


TAKES = "a folder written by `superb judge SPEC` with judge variants (e.g. results/judges_dl19)"


def is_judge_folder(path: str | Path) -> bool:
    """Whether ``path`` is the folder of a judge study (superb.folder's JudgeFolder), from its provenance.json."""
    record = Path(path) / layout.PROVENANCE
    try:
        return kind_of(json.loads(record.read_text(encoding="utf-8"))) is JudgeFolder
    except (OSError, ValueError):
        return False


def folder_rows(path: Path, collection: str, measure: str = "nDCG@10", *, unverified: bool | None = None
                ) -> tuple[pd.DataFrame, Any]:
    """The long rows of one judge folder (see the module docstring), read through superb.folder (each file checked
    against the sha256 its provenance.json records), and the opened folder."""
    folder = open_folder(path, JudgeFolder, unverified=unverified, what=TAKES)
    if not folder.has("agreement_calibrated.csv"):
        raise SuperbError(f"{path}: no agreement_calibrated.csv: give {TAKES}")
    models = {}
    if folder.has("calibration.json"):
        models = {name: entry.get("model") or "" for name, entry in folder.read_json("calibration.json").items()}
    agreement = pd.read_csv(folder.file("agreement_calibrated.csv"))
    test = agreement[(agreement["split"] == "test") & agreement["against"].isin(["qrels", "final"])
                     & ~agreement["judge"].astype(str).str.startswith("human")]
    rows = []
    for r in test.to_dict("records"):
        for stat in ("kappa", "kappa_linear", "kappa_quadratic", "agreement"):
            rows.append({"judge": r["judge"], "model": models.get(r["judge"], ""), "collection": collection,
                         "statistic": stat, "value": r.get(stat), "low": r.get(f"{stat}_low"),
                         "high": r.get(f"{stat}_high"), "n": r.get("n"), "kind": "run", "source": str(path)})
    if folder.has("label_study.csv"):
        orderings = pd.read_csv(folder.file("label_study.csv"))
        if "labels" in orderings.columns:
            mine = orderings[(orderings["measure"] == measure) & orderings["labels"].isin(["llm", "filled"])]
            for r in mine.to_dict("records"):
                for stat in ("tau", "tau_ap", "rho"):
                    rows.append({"judge": r["judge"], "model": models.get(r["judge"], ""), "collection": collection,
                                 "statistic": f"{stat}_{r['labels']}", "value": r.get(stat),
                                 "low": r.get(f"{stat}_low"), "high": r.get(f"{stat}_high"),
                                 "n": r.get("n_systems"), "kind": "run", "source": str(path)})
    return pd.DataFrame(rows, columns=COLUMNS), folder


def anchor_rows(path: Path, collections: list[str]) -> pd.DataFrame:
    """Quoted rows of an anchors CSV (module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise SuperbError(f"--anchors {path}: no such file (a CSV with columns method, model, source and one "
                          "<collection>_<statistic> column per quoted value, e.g. dl19_kappa_linear)")
    anchors = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in ("method", "model", "source") if c not in anchors.columns]
    if missing:
        raise SuperbError(f"--anchors {path}: missing columns {missing}; each row names its method, the model it "
                          "used and its source (paper and table)")
    rows = []
    for r in anchors.to_dict("records"):
        for collection in collections:
            for stat in STATISTICS:
                value = r.get(f"{collection.lower()}_{stat}", "")
                if value == "":
                    continue
                rows.append({"judge": r["method"], "model": r["model"], "collection": collection, "statistic": stat,
                             "value": float(value), "low": np.nan, "high": np.nan, "n": np.nan, "kind": "quoted",
                             "source": r["source"]})
        if not any(r.get(f"{c.lower()}_{s}", "") for c in collections for s in STATISTICS):
            rows.append({"judge": r["method"], "model": r["model"], "collection": collections[0],
                         "statistic": "", "value": np.nan, "low": np.nan, "high": np.nan, "n": np.nan,
                         "kind": "quoted", "source": r["source"]})
    return pd.DataFrame(rows, columns=COLUMNS)


def judge_table(folders: list[Path], names: list[str] | None = None, anchors: Path | None = None,
                measure: str = "nDCG@10", *, unverified: bool | None = None) -> pd.DataFrame:
    """The long frame of every folder's rows and the anchors' (module docstring); ``attrs``: collections (each with
    its folder, the sha256 of its provenance.json and of each file read: the table's ``inputs``), measure."""
    names = names or [Path(f).name for f in folders]
    if len(folders) != len(names):
        raise SuperbError(f"{len(folders)} folders and {len(names)} names: give one name per folder (--names)")
    if len(set(names)) != len(names):
        raise SuperbError(f"two collections named alike ({names}): give --names A,B")
    parts, inputs, unchecked = [], [], []
    for f, n in zip(folders, names):
        rows, folder = folder_rows(f, n, measure, unverified=unverified)
        parts.append(rows)
        inputs.append({"name": n, **folder.inputs_record()})
        unchecked += as_records(folder.mismatches)
    if anchors is not None:
        parts.append(anchor_rows(anchors, names))
    frame = pd.concat([p for p in parts if len(p)], ignore_index=True)
    frame.attrs.update(collections=list(names), measure=measure, inputs=inputs, unverified=unchecked)
    return frame


def _cell(row: pd.Series | None, interval: bool = True) -> str:
    if row is None or pd.isna(row["value"]):
        return "–"
    text = f"{row['value']:.3f}"
    if interval and not pd.isna(row["low"]):
        text += f" [{row['low']:.2f}, {row['high']:.2f}]"
    return text


def _grid(frame: pd.DataFrame, statistics) -> tuple[list[tuple], list[tuple[str, str]]]:
    columns = [(c, s) for c in frame.attrs["collections"] for s in statistics]
    keys = list(dict.fromkeys(zip(frame["kind"], frame["judge"], frame["model"])))
    keys.sort(key=lambda k: k[0] == "quoted")  # run rows first, quoted rows below (order kept within each)
    index = {(r["kind"], r["judge"], r["model"], r["collection"], r["statistic"]): r for _, r in frame.iterrows()}
    rows = [(kind, judge, model, [index.get((kind, judge, model, c, s)) for c, s in columns])
            for kind, judge, model in keys]
    return rows, columns


def format_markdown(frame: pd.DataFrame, statistics=DEFAULT_STATISTICS, title: str = "") -> str:
    rows, columns = _grid(frame, statistics)
    head = ["Judge", "Model", *[f"{c} {STATISTICS[s]}" for c, s in columns]]
    lines = ([f"# {title}", ""] if title else []) + ["| " + " | ".join(head) + " |",
                                                     "|:---|:---|" + "---:|" * len(columns)]
    quoted = False
    for kind, judge, model, cells in rows:
        if kind == "quoted" and not quoted:
            lines.append("| *quoted from their sources, not run here* |" + " |" * (len(columns) + 1))
            quoted = True
        lines.append("| " + " | ".join([str(judge), str(model) or "–",
                                        *[_cell(c, kind == "run") for c in cells]]) + " |")
    measure = frame.attrs.get("measure", "nDCG@10")
    notes = [f"kappa: against the collection's human label on each folder's test pairs (dev pairs fit a score's cut "
             f"points; a written grade is its label); tau, tau_ap (the human ordering as reference) and rho: system "
             f"orderings by {measure} under the human qrels vs the judge's LLM-only qrels of the pooled top ranks "
             "(LLM qrels) or the human qrels with the judge's labels in their holes (filled). Brackets: 95% "
             "intervals resampling queries. Quoted rows: published numbers, copied from their sources (not run "
             "here, never tested); '–': not published there, or not read."]
    sources = list(dict.fromkeys(frame.loc[frame["kind"] == "quoted", "source"]))
    if sources:
        notes.append("Sources of the quoted rows: " + "; ".join(sources) + ".")
    return "\n".join(lines) + "\n\n" + "\n\n".join(notes) + "\n"


def format_latex(frame: pd.DataFrame, statistics=DEFAULT_STATISTICS, label: str = "tab:judges",
                 resize: bool = False) -> str:
    """table.tex: one booktabs tabular in \\small, its width measured on its second line (superb.eval.latex_width);
    ``resize``: scaled to \\linewidth (\\usepackage{graphicx})."""
    rows, columns = _grid(frame, statistics)
    collections = frame.attrs["collections"]
    span = len(statistics)
    head = ["", "", *[f"\\multicolumn{{{span}}}{{c}}{{{escape(c)}}}" for c in collections]]
    rules = "".join(f"\\cmidrule(lr){{{3 + i * span}-{2 + (i + 1) * span}}}" for i in range(len(collections)))
    short = {"kappa_linear": "$\\kappa_{lin}$", "kappa": "$\\kappa$", "kappa_quadratic": "$\\kappa_{quad}$",
             "agreement": "agr.", "tau_llm": "$\\tau$ LLM", "tau_filled": "$\\tau$ filled",
             "tau_ap_llm": "$\\tau_{AP}$ LLM", "tau_ap_filled": "$\\tau_{AP}$ filled", "rho_llm": "$\\rho$ LLM",
             "rho_filled": "$\\rho$ filled"}
    widths = [text_width("Judge", 9.0), text_width("Model", 9.0)] + [text_width(s, 9.0) for _, s in columns]
    for kind, judge, model, cells in rows:
        texts = [judge, model or "--", *[_cell(c, interval=False) for c in cells]]
        widths = [max(w, text_width(t, 9.0)) for w, t in zip(widths, texts)]
    packages = "booktabs" + (", graphicx" if resize else "")
    lines = [f"% superb judge table (generated; \\usepackage{{{packages}}})",
             f"% width: about {tabular_width(widths):.0f}pt at 9pt (measured in Computer Modern; a one-column "
             f"article's text is {ARTICLE_TEXT:.0f}pt, a two-column paper's column {TWO_COLUMN:.0f}pt)"
             + ("; scaled to \\linewidth" if resize else ""),
             "\\begin{table}[t]", "\\centering",
             "\\small",
             f"\\caption{{LLM judges: linear-weighted $\\kappa$ with the human labels and Kendall's $\\tau$ of the "
             f"system orderings by {escape(frame.attrs.get('measure', 'nDCG@10'))}; quoted rows from their "
             "sources, not run here.}", f"\\label{{{label}}}",
             *(["\\resizebox{\\linewidth}{!}{%"] if resize else []),
             f"\\begin{{tabular}}{{ll{'r' * len(columns)}}}", "\\toprule", " & ".join(head) + " \\\\", rules,
             " & ".join(["Judge", "Model", *[short[s] for _, s in columns]]) + " \\\\", "\\midrule"]
    quoted = False
    for kind, judge, model, cells in rows:
        if kind == "quoted" and not quoted:
            lines.append("\\midrule")
            quoted = True
        values = [escape(_cell(c, interval=False)).replace("–", "--") for c in cells]
        lines.append(" & ".join([escape(judge), escape(model) or "--", *values]) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}" + ("}" if resize else ""), "\\end{table}"]
    return "\n".join(lines) + "\n"


def write_judge_table(frame: pd.DataFrame, out: Path, *, title: str = "", resize: bool = False) -> list[Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / layout.TABLE, out / layout.TABLE_MD, out / layout.TABLE_TEX]
    frame.to_csv(paths[0], index=False)
    paths[1].write_text(format_markdown(frame, title=title), encoding="utf-8")
    paths[2].write_text(format_latex(frame, resize=resize), encoding="utf-8")
    return paths
