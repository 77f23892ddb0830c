"""The `superb` command: run experiments, show and compare results, serve or check the LLM, judge.

Exit codes (superb.exit_codes): 0 done; 2 an error stopped the command (bad spec, missing data, an LLM endpoint that
refuses every call); 3 (EXIT_LLM_FAILURES) `superb run` or `superb judge` finished and wrote its results, but more
LLM requests failed than ``llm.max_failure_share`` allows (default 0: any failure), so some scores are fallbacks;
130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from pathlib import Path

from superb.errors import SuperbError
from superb.llm.exit_code import llm_exit_code
from superb import faults, interrupt, provenance
from superb.atomic import check_replaceable, check_writable, replacing
from superb.folder import layout
from superb.folder.verify import reading_unverified
from superb.report import write_report
from superb.run.dry_run_report import dry_run_report
from superb.run.plugin_changes import changed_plugins
from superb.run.spec import load_spec
from superb.terminal import shown, wrap_log_lines
from superb.transformers.registry import plugin_records


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(message)s")
    wrap_log_lines()  # on a terminal, warnings wrap to its width
    for noisy in ("httpx", "httpx2", "httpcore", "openai"):  # one line per HTTP request drowns the progress
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if not hasattr(args, "func"):
        parser.print_help()
        return 2

    with interrupt.handling():
        try:
            # results record the code as it was when the command began; --unverified reaches every folder it opens
            with provenance.code_at_start(), reading_unverified(getattr(args, "unverified", False)):
                status: int | None = int(args.func(args) or 0)
        except KeyboardInterrupt:  # a plug-in's own is a StageError where superb runs it (superb.faults)
            status = None
        except SuperbError as exc:
            if not interrupt.requested():
                print(shown(f"superb: error: {exc}", sys.stderr), file=sys.stderr)
                return 2
            status = None  # an error of the interrupted work's unwinding: the interrupt is what happened
        except OSError as exc:  # a full disk, an unwritable or vanished folder: the path and the fix, not a traceback
            if interrupt.requested():
                status = None
            else:
                print(shown(f"superb: error: {os_error(exc)}", sys.stderr), file=sys.stderr)
                return 2
        except SystemExit as exc:  # superb's commands never raise it: code a spec named did, outside a stage's guard
            print(shown(f"superb: error: {faults.fault('code run by this command', exc)}; the command stopped there",
                        sys.stderr), file=sys.stderr)
            return 2
        if status is None:
            if argv is None:  # the `superb` command owns its process: end it without interpreter shutdown, which
                interrupt.exit_now()  # would release the embedded server and join threads (superb/interrupt.py)
            print(interrupt.MESSAGE, file=sys.stderr)
            return 130
        if argv is None and interrupt.requested():  # a command that ended on Ctrl-C by itself (`superb llm serve`)
            interrupt.exit_now(status=status, line=None)
        return status


def os_error(exc: OSError) -> str:
    """An operating system's refusal as superb reports it: the path, the reason and what to do (a writer that failed
    left no temporary file: superb.atomic, and each file writer removes its own)."""
    where = exc.filename or "a file"
    reason = exc.strerror or str(exc)
    return (f"cannot write or read {where}: {reason}. Nothing half-written was left behind; free disk space, or "
            "choose a writable --out (or path), and run the command again")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="superb", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress of each stage")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    run = sub.add_parser("run", help="run an experiment spec and write results/NAME/")
    run.add_argument("spec", type=Path, help="a TOML spec, e.g. experiments/chorus_first_stage.toml")
    run.add_argument("--out", type=Path, default=None, help="results folder (default: results/NAME from the spec)")
    run.add_argument("--dry-run", action="store_true",
                     help="count the LLM calls (and their prompt tokens) the response cache cannot serve, without "
                          "calling any model or writing results")
    run.add_argument("--shard", type=_shard, default=None, metavar="I/N",
                     help="run only part I of N of the queries (default folder results/NAME.shard-I-of-N); "
                          "`superb merge` joins the N folders")
    run.add_argument("--no-preflight", action="store_true",
                     help="skip the free preflight (every stage on one query with placeholder answers, before the "
                          "first LLM call) that a run whose stages call the LLM makes first")
    run.set_defaults(func=_cmd_run)

    merge = sub.add_parser("merge", help="check the shard folders of one spec and write its one table")
    merge.add_argument("shards", type=Path, nargs="+", help="the folders of `superb run SPEC --shard i/n`")
    merge.add_argument("--out", type=Path, default=None, help="results folder (default: results/NAME from the spec)")
    merge.add_argument("--allow-plugins", action="store_true",
                       help="import and run the plug-ins (code from outside superb) the shards' spec names; without "
                            "it such shards are refused. Give it only for folders whose code you trust")
    _unverified_flag(merge)
    merge.set_defaults(func=_cmd_merge)

    show = sub.add_parser("show", help="print the table of a results folder")
    show.add_argument("result", type=Path)
    _unverified_flag(show)
    show.set_defaults(func=_cmd_show)

    compare = sub.add_parser("compare", help="set two results folders side by side")
    compare.add_argument("a", type=Path)
    compare.add_argument("b", type=Path)
    compare.add_argument("--measure", action="append", help="measures to show (default: all in both)")
    compare.add_argument("--different-queries", action="store_true",
                         help="print folders evaluated on different query sets side by side anyway (warned)")
    compare.add_argument("--names", default=None, help="the two columns' labels, comma-separated (default: the "
                                                       "folders' names, or their paths when the names are the same)")
    _unverified_flag(compare)
    compare.set_defaults(func=_cmd_compare)

    evaluate = sub.add_parser("evaluate", help="evaluate run files against qrels with superb's statistics (no LLM): "
                                               "the same table, per-query values, power and report as `superb run`")
    evaluate.add_argument("runs", type=Path, nargs="+", help="TREC run files (or rank_llm .json candidates)")
    evaluate.add_argument("--qrels", type=Path, required=True, help="TREC qrels: qid 0 docno label")
    evaluate.add_argument("--names", default=None, help="system names, comma-separated, one per run (default: stems)")
    evaluate.add_argument("--baseline", default="", help="the system every other is tested against (default: the "
                                                         "first run; 'none': no tests)")
    evaluate.add_argument("--hypotheses", type=Path, default=None, help="a TOML file of [[hypotheses]] tables")
    evaluate.add_argument("--measures", nargs="+", default=None, help="ir_measures names (default P@5/10/20, "
                                                                      "nDCG@5/10/20)")
    evaluate.add_argument("--views", nargs="+", default=None, help="full (default) and/or condensed")
    evaluate.add_argument("--rel", type=int, default=1, help="binary measures count labels >= REL (TREC DL: 2)")
    evaluate.add_argument("--topics", type=Path, default=None, help="qid<TAB>query: the queries to evaluate")
    evaluate.add_argument("--name", default="evaluate", help="the table's name (default: evaluate)")
    evaluate.add_argument("--out", type=Path, default=None, help="results folder (default: results/NAME)")
    _unverified_flag(evaluate)
    evaluate.set_defaults(func=_cmd_evaluate)

    table = sub.add_parser("table", help="the table a paper prints: systems by collections (one results folder "
                                         "each), each cell the folder's own mean and mark; Markdown, CSV and LaTeX")
    table.add_argument("folders", type=Path, nargs="+", help="results folders, one per collection, e.g. "
                                                             "results/trec_dl19 results/trec_dl20")
    table.add_argument("--measures", nargs="+", default=None, help="measures, each a column per collection "
                                                                    "(default: nDCG@10)")
    table.add_argument("--names", default=None, help="collection names, comma-separated, one per folder "
                                                     "(default: the folders' names)")
    table.add_argument("--anchors", type=Path, default=None, help="a CSV of published rows to quote (method, model, "
                                                                  "source, COLLECTION_MEASURE columns), e.g. "
                                                                  "experiments/anchors_trec_dl.csv")
    table.add_argument("--average", action="store_true", help="add the mean of the collections' means (no test)")
    table.add_argument("--view", default="full", help="the folders' view to read (default: full)")
    table.add_argument("--narrow", action="store_true", help="table.tex for one column: system and model names "
                                                             "wrap in columns of fixed width (\\usepackage{array})")
    table.add_argument("--resize", action="store_true", help="table.tex scaled to \\linewidth whatever its width "
                                                             "(\\usepackage{graphicx})")
    table.add_argument("--out", type=Path, default=None, help="write table.md, table.csv and table.tex there "
                                                              "(default: print table.md only)")
    _unverified_flag(table)
    table.set_defaults(func=_cmd_table)

    report = sub.add_parser("report", help="write report.html: the table, the cost plot and two systems' rankings "
                                           "side by side per query, one self-contained page")
    report.add_argument("result", type=Path, help="a results folder, e.g. results/quickstart")
    report.add_argument("--out", type=Path, default=None, help="the page (default: RESULT/report.html)")
    _unverified_flag(report)
    report.set_defaults(func=_cmd_report)

    _register_optional(sub, "superb.llm.cli")
    _register_optional(sub, "superb.judges.commands.cli")
    _register_optional(sub, "superb.batch.cli")
    _unverified_flag(sub.choices["judge"])  # --fill and a [label_study] read a results folder
    return parser


def _unverified_flag(parser: argparse.ArgumentParser) -> None:
    """``--unverified``: every command that reads a results folder checks each file it reads against the sha256 its
    provenance.json records and refuses a changed one (superb.folder.verify); this reads it anyway."""
    parser.add_argument("--unverified", action="store_true",
                        help="read a results folder's files even where they differ from the sha256 its provenance.json "
                             "records (the output is marked unverified)")


def _register_optional(sub, module: str) -> None:
    """Subcommands that live with their layer (llm, judge, batch/responses) register themselves."""
    import importlib

    importlib.import_module(module).register(sub)


def _cmd_run(args) -> int:
    from superb.run.experiment import run_experiment

    spec = load_spec(args.spec)
    out = args.out or Path(spec.output or Path("results") / spec.name)
    if args.shard is not None and args.out is None:
        out = out.with_name(out.name + args.shard.suffix)
    check_replaceable(out, inputs=[args.spec])  # refused before the run, not after its LLM calls
    if not args.dry_run:  # a dry run writes nothing, not even a probe
        check_writable(out)
    _warn_changed_plugins(spec, out)
    result = run_experiment(spec, dry_run=args.dry_run, shard=args.shard, preflight=not args.no_preflight)
    if args.dry_run:
        print(shown(dry_run_report(result)))
        return 0
    _write(result, out)
    print(shown((out / layout.TABLE_MD).read_text(encoding="utf-8")))
    print(f"results written to {out}/ in {result.timings['total_s']:.1f} s")
    try:
        _report(out)
    except (SuperbError, OSError) as exc:  # the results are written; the page can be made again from them
        print(f"superb: report.html not written ({exc}); `superb report {out}` writes it", file=sys.stderr)
    return _llm_exit_code(spec, result)


def _warn_changed_plugins(spec, out: Path) -> None:
    """A warning line per plug-in whose file changed since ``out`` was written (superb.run.plugin_changes)."""
    if (out / layout.PROVENANCE).is_file():
        for line in changed_plugins(out, plugin_records(spec.pipelines)):
            print(shown(f"superb: warning: {line}", sys.stderr), file=sys.stderr)


def _cmd_evaluate(args) -> int:
    from superb.run.evaluate_runs import evaluate_runs

    out = args.out or Path("results") / args.name
    check_replaceable(out, inputs=[*args.runs, args.qrels, *(p for p in (args.topics, args.hypotheses) if p)])
    check_writable(out)
    baseline = None if args.baseline.lower() == "none" else args.baseline
    result, unverified = evaluate_runs(args.runs, qrels=args.qrels, names=args.names, baseline=baseline,
                                       measures=args.measures, views=args.views, rel=args.rel,
                                       hypotheses=args.hypotheses, name=args.name, topics=args.topics,
                                       unverified=args.unverified)
    _write(result, out, unverified)
    print(shown((out / layout.TABLE_MD).read_text(encoding="utf-8")))
    print(f"results written to {out}/ (0 LLM calls)")
    try:
        _report(out)
    except (SuperbError, OSError) as exc:
        print(f"superb: report.html not written ({exc}); `superb report {out}` writes it", file=sys.stderr)
    return 0


def _write(result, out: Path, unverified=()) -> None:
    """write_results, with a failure to write (a full disk, a folder made read-only during the run) a SuperbError
    naming the path and what became of the LLM answers (exit 2, not a traceback). ``unverified``: input files read
    with --unverified (superb.folder.verify.Mismatch), marked in the folder."""
    from superb.run.results import write_results

    try:
        write_results(result, out, unverified=tuple(unverified))
    except OSError as exc:
        where = exc.filename or out
        cache = ((result.llm_info or {}).get("cache") or {}).get("path")
        kept = (f" The LLM answers of this run are kept in the response cache {cache}: the same command with a "
                "writable --out is served from it and pays for no call again." if cache else
                " No response cache kept this run's LLM answers (the cache is absent, off or refresh)."
                if result.llm_info else "")
        raise SuperbError(f"cannot write the results folder {out}: {exc.strerror or exc} ({where}); an earlier "
                          f"folder there is as it was.{kept}") from None


def _llm_exit_code(spec, result) -> int:
    """The LLM request counts on stderr; EXIT_LLM_FAILURES when failures exceed llm.max_failure_share."""
    return llm_exit_code(spec.llm, (result.llm_info or {}).get("usage_total"))


def _shard(text: str):
    from superb.run.shards import Shard

    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _cmd_merge(args) -> int:
    from superb.run.merge import merge_shards
    from superb.run.results import write_results

    result, unverified = merge_shards(args.shards, allow_plugins=args.allow_plugins)
    spec = result.spec
    out = args.out or Path(spec.output or Path("results") / spec.name)
    if any(out.resolve() == Path(s).resolve() for s in args.shards):
        raise SuperbError(f"--out {out} is one of the shard folders: write the merge elsewhere")
    write_results(result, out, unverified=tuple(unverified))
    print((out / layout.TABLE_MD).read_text(encoding="utf-8"))
    for s in result.sharding["merged"]:
        print(f"shard {s['shard']}: {s['queries']} queries from {s['folder']}")
    shipped = json.loads((out / layout.PROVENANCE).read_text(encoding="utf-8")).get("responses")
    if shipped:
        print(f"responses: {shipped['rows']} rows ({shipped['duplicates']} keys used by several shards)")
        if shipped["conflicts"]:
            print(f"superb: {shipped['conflicts']} keys were answered differently by different shards (e.g. "
                  f"{', '.join(k[:12] for k in shipped['conflict_keys'])}); responses.jsonl.gz keeps the lower "
                  "shard's answer, so replaying it may not reproduce every shard's ranking", file=sys.stderr)
    print(f"{len(result.topics)} queries of {len(result.sharding['merged'])} shards merged into {out}/")
    return _llm_exit_code(spec, result)  # the shards' failed LLM calls, summed, against llm.max_failure_share


def _report(folder: Path, out: Path | None = None) -> Path:
    page = write_report(folder, out)
    print(f"report: {page} (open it in a browser; it needs no network)")
    return page


def _cmd_report(args) -> int:
    target = Path(args.out) if args.out else Path(args.result) / layout.REPORT
    check_writable(target.parent / ".report")  # the page's folder must take a new file, before the page is made
    _report(args.result, args.out)  # a folder without systems.json, table.md... is a DataError naming the file
    return 0


def _cmd_table(args) -> int:
    from superb.eval.judge_table import is_judge_folder
    from superb.eval.paper_table import paper_table
    from superb.eval.paper_table_files import write_paper_table
    from superb.eval.paper_table_markdown import format_markdown

    names = [n.strip() for n in args.names.split(",")] if args.names else None
    if args.out is not None:  # before any folder is read: a full disk or a read-only place is named first
        check_writable(args.out)
    if args.folders and all(is_judge_folder(f) for f in args.folders):
        return _judge_table(args, names)
    frame = paper_table(args.folders, measures=args.measures, names=names, anchors=args.anchors,
                        average=args.average, view=args.view, unverified=args.unverified)
    if args.out is None:
        print(format_markdown(frame))
        print("pass --out DIR to write table.md, table.csv and table.tex")
        return 0
    with replacing(args.out) as tmp:  # replaced as a whole, as a results folder; refused if not superb's
        write_paper_table(frame, tmp, title=args.out.name, narrow=args.narrow, resize=args.resize)
        record = {"command": _table_command(args), "collections": frame.attrs["collections"],
                  "measures": frame.attrs["measures"], "average": frame.attrs["average"],
                  "inputs": frame.attrs["inputs"]}  # each folder read: its provenance's and files' sha256
        if frame.attrs["unverified"]:
            record["unverified"] = frame.attrs["unverified"]
        provenance.write(tmp, record, hash_files=True)
    print((args.out / layout.TABLE_MD).read_text(encoding="utf-8"))
    _wrote_tex(args.out, args.resize)
    return 0


def _wrote_tex(out: Path, resize: bool) -> None:
    """The closing line of `superb table --out`: what table.tex needs, and whether it fits one column (its width as
    its second line states it; scaled to \\linewidth with ``resize``)."""
    from superb.eval.latex_width import ARTICLE_TEXT
    from superb.eval.paper_table_latex import latex_width

    text = (out / layout.TABLE_TEX).read_text(encoding="utf-8")
    packages = re.search(r"\\usepackage\{([^}]*)\}", text.splitlines()[0])
    print(f"written to {out}/: table.md, table.csv, table.tex (\\input it; \\usepackage{{{packages.group(1)}}})")
    width = latex_width(text)
    if width > ARTICLE_TEXT and not resize:
        print(f"table.tex is about {width:.0f}pt wide, wider than a one-column article's {ARTICLE_TEXT:.0f}pt text: "
              "--narrow wraps its names, --resize scales it to \\linewidth (docs/paper-table.md)")


def _judge_table(args, names: list[str] | None) -> int:
    """`superb table` on `superb judge` folders: the table a judging paper prints (superb.eval.judge_table)."""
    from superb.eval.judge_table import format_markdown, judge_table, write_judge_table

    if args.narrow:
        raise SuperbError("--narrow is a layout of the reranking table; a judge table is narrow already (a column "
                          "per statistic): use --resize to scale it to \\linewidth")
    measure = args.measures[0] if args.measures else "nDCG@10"
    frame = judge_table(args.folders, names, anchors=args.anchors, measure=measure, unverified=args.unverified)
    if args.out is None:
        print(format_markdown(frame))
        print("pass --out DIR to write table.md, table.csv and table.tex")
        return 0
    with replacing(args.out) as tmp:
        write_judge_table(frame, tmp, title=args.out.name, resize=args.resize)
        record = {"command": _table_command(args),
                  "collections": [{"name": i["name"], "folder": i["folder"]} for i in frame.attrs["inputs"]],
                  "measures": [measure], "judges": True, "inputs": frame.attrs["inputs"]}
        if frame.attrs["unverified"]:
            record["unverified"] = frame.attrs["unverified"]
        provenance.write(tmp, record, hash_files=True)
    print((args.out / layout.TABLE_MD).read_text(encoding="utf-8"))
    _wrote_tex(args.out, args.resize)
    return 0


def _table_command(args) -> list[str]:
    """The `superb table` command that writes the same table again (what its folder's provenance.json records)."""
    command = ["superb", "table", *map(str, args.folders)]
    if args.measures:
        command += ["--measures", *args.measures]
    if args.names:
        command += ["--names", args.names]
    if args.anchors:
        command += ["--anchors", str(args.anchors)]
    if args.average:
        command.append("--average")
    if args.view != "full":
        command += ["--view", args.view]
    command += [flag for flag, on in (("--narrow", args.narrow), ("--resize", args.resize)) if on]
    if args.unverified:
        command.append("--unverified")
    return command


def _cmd_show(args) -> int:
    """table.md of a `superb run` folder (checked against its recorded sha256, as every read of a results folder:
    superb.folder); agreement.md and pairwise.md of a `superb judge` folder."""
    path = args.result / layout.TABLE_MD
    if path.is_file():
        from superb.eval.compare import shown_table

        print(shown(shown_table(args.result, unverified=args.unverified)))
        return 0
    shown_files = [args.result / n for n in ("agreement.md", "pairwise.md") if (args.result / n).is_file()]
    if not shown_files:
        raise SuperbError(f"{path} does not exist: give a folder written by `superb run` or `superb judge` "
                          "(e.g. results/NAME)")
    print(shown("\n".join(p.read_text(encoding="utf-8") for p in shown_files)))
    return 0


def _cmd_compare(args) -> int:
    from superb.eval.compare import compare

    done = compare(args.a, args.b, names=args.names, measures=args.measure, different_queries=args.different_queries,
                   unverified=args.unverified)
    for warning in done.warnings:
        print(f"superb: warning: {warning}", file=sys.stderr)
    print(done.text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
