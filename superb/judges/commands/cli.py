"""`superb judge SPEC`: label a pool of (query, product) pairs with LLM judges and measure agreement with humans;
`superb judge --fill results/NAME`: label the unjudged products of a results folder with a calibrated judge and add
the view "filled" to its table.

The integrator's superb/cli.py calls :func:`register`. See superb.judges.commands.spec for the spec shape,
superb.judges.commands.run for what is written to results/NAME/, and superb.judges.fill.label for the fill.

Both forms take ``--dry-run`` (count the LLM calls the response cache cannot serve, per judge; nothing is called or
written) and ``--from-cache`` (write the results from the cached answers alone, no model started: a partial report
whose coverage is stated).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from superb.errors import SuperbError
from superb.judges.commands.run import run_judge_spec
from superb.judges.commands.spec import load_judge_spec
from superb.judges.fill.inputs import FillOptions
from superb.judges.fill.label import fill
from superb.llm.exit_code import folder_usage, llm_exit_code
from superb.llm.pace import time_line
from superb.report import write_report


def register(subparsers: Any) -> None:
    judge = subparsers.add_parser("judge", help="label query-product pairs with LLM judges; agreement with humans "
                                                "(and a label study), or build a benchmark ([benchmark] specs); "
                                                "--fill results/NAME: LLM labels for a folder's unjudged products")
    judge.add_argument("spec", type=Path, nargs="?", help="a judge spec (TOML), e.g. experiments/judges_chorus.toml")
    judge.add_argument("--out", type=Path, default=None,
                       help="results folder (default: results/NAME from the spec); with --fill: write the filled "
                            "copy there and leave the --fill folder unchanged (default: fill it in place)")
    judge.add_argument("--fill", type=Path, default=None, metavar="RESULTS",
                       help="a `superb run` results folder: label the products in every system's top ranks with a "
                            "calibrated judge, write llm_qrels.trec and the view \"filled\" into it")
    # the --fill options default to None so that giving one without --fill is refused (FILL_ONLY), not ignored
    judge.add_argument("--judge", default=None,
                       help="with --fill: a scoring preset, or presets joined by '+' (an ensemble) "
                            "(default umbrela: UMBRELA's rubric, a prompt no reranker uses by default; a judge that "
                            "shares a reranker's model or prompt is flagged as circular)")
    judge.add_argument("--depth", type=int, default=None,
                       help="with --fill: label each system's top DEPTH (default 10)")
    judge.add_argument("--scope", choices=("all", "unjudged"), default=None,
                       help="with --fill: label every top product (all, default: also gives the LLM-only label "
                            "study) or only those without a human label")
    judge.add_argument("--dev-sample", type=int, default=None, metavar="N",
                       help="with --fill: fit the cut points on N seeded dev queries' rated pairs (default: all)")
    judge.add_argument("--allow-plugins", action="store_true",
                       help="with --fill: import and run the plug-ins (code from outside superb) the folder's spec "
                            "names; without it such a folder is refused. Give it only for a folder whose code you "
                            "trust")
    modes = judge.add_mutually_exclusive_group()
    modes.add_argument("--dry-run", action="store_true",
                       help="count the LLM calls the response cache cannot serve (per judge), without calling any "
                            "model or writing anything")
    modes.add_argument("--from-cache", action="store_true",
                       help="write the results from the cached answers alone (no model); pairs without a cached "
                            "answer are counted, each judge's coverage is reported")
    judge.set_defaults(func=_cmd_judge)


FILL_ONLY = ("judge", "depth", "scope", "dev_sample")  # options that only a fill reads


def _cmd_judge(args) -> int:
    mode = "dry_run" if args.dry_run else "from_cache" if args.from_cache else "live"
    if (args.spec is None) == (args.fill is None):
        raise SuperbError("superb judge: give a judge spec (superb judge SPEC) or --fill results/NAME, not both")
    if args.fill is not None:
        return _fill(args, mode)
    stray = [f"--{name.replace('_', '-')}" for name in FILL_ONLY if getattr(args, name) is not None]
    stray += ["--allow-plugins"] * bool(args.allow_plugins)
    if stray:
        raise SuperbError(f"superb judge {args.spec}: {', '.join(stray)} only apply with --fill results/NAME (the "
                          "fill of a results folder); a judge spec sets its judges and pool in the spec itself: drop "
                          f"{'them' if len(stray) > 1 else 'it'}, or give --fill instead of the spec")
    spec = load_judge_spec(args.spec)
    out = args.out or Path(spec.output or Path("results") / spec.name)
    result = run_judge_spec(spec, out, mode=mode)
    if mode == "dry_run":
        counts = result["counts"]
        what = [f"{counts['pairs']} pool pairs"] * bool(spec.variants) + \
            [f"{counts['pairwise_pairs']} pairwise pairs"] * bool(spec.pairwise)
        return _print_dry_run(result["usage"], f"{spec.name}: {', '.join(what)}", result.get("llm") or {},
                              result.get("ceilings"))
    if spec.benchmark is not None:
        print(f"{spec.name}: benchmark of {result['counts']['queries']} queries, {result['counts']['judgments']} "
              f"judged pairs, labels {result['counts']['labels']}, rewrites {result['stats']}")
        return 0
    print((out / "agreement.md").read_text(encoding="utf-8"))
    for name in ("agreement_calibrated.md", "pairwise.md"):
        if (out / name).is_file():
            print((out / name).read_text(encoding="utf-8"))
    if (out / "label_study.md").is_file() and spec.label_study is not None:
        print((out / "label_study.md").read_text(encoding="utf-8"))
    print(f"results written to {out}/")
    return llm_exit_code(spec.llm, folder_usage(out))  # counts on stderr; 3 when failures exceed max_failure_share


def _fill(args, mode: str) -> int:
    given = {name: getattr(args, name) for name in FILL_ONLY if getattr(args, name) is not None}
    options = FillOptions(**given)
    result = fill(args.fill, options, mode=mode, out=args.out, allow_plugins=args.allow_plugins)
    if mode == "dry_run":
        return _print_dry_run(result["usage"], f"fill {args.fill}: {result['targets']} target pairs and "
                                               f"{result['dev_pairs']} dev pairs for the cut points",
                              result.get("llm") or {})
    counts = result["fingerprint"]["counts"]
    print(f"{args.fill}: {counts['labelled']} of {counts['targets']} top-{options.depth} pairs labelled by "
          f"{result['fingerprint']['judge']} ({counts['unjudged_labelled']} of {counts['unjudged']} unjudged); "
          f"statuses {counts['status']}")
    print(result["sentence"])
    print((Path(result["folder"]) / "label_study.md").read_text(encoding="utf-8"))
    _page(Path(result["folder"]))

    return llm_exit_code(result["llm_spec"], result["usage"])


def _page(folder: Path) -> None:
    """report.html again, so that the page shows the table the fill rewrote (with its filled view and notes)."""

    try:
        print(f"report: {write_report(folder)} (open it in a browser; it needs no network)")
    except (SuperbError, OSError) as exc:  # the fill is written; the page can be made again from it
        print(f"superb: report.html not written ({exc}); `superb report {folder}` writes it", file=sys.stderr)


def _print_dry_run(usage: dict, what: str, llm_info: dict, ceilings: dict | None = None) -> int:
    """The dry run's table: per tag the calls a real run would make, the cache hits, the prompt tokens and, for a
    judge, ``at_most``: the most requests its pairs can make whatever the answers (its max_calls)."""
    calls = hits = tokens = 0
    ceilings = ceilings or {}
    print(f"{'tag':40} {'calls':>8} {'at_most':>8} {'cache hits':>10} {'prompt tokens':>14}")
    for tag, row in sorted(usage.items()):
        c, h, t = int(row.get("calls", 0)), int(row.get("cache_hits", 0)), int(row.get("prompt_tokens", 0))
        calls, hits, tokens = calls + c, hits + h, tokens + t
        most = str(ceilings[tag]) if tag in ceilings else "-"
        print(f"{tag:40} {c:8d} {most:>8} {h:10d} {t:14d}")
    print(f"dry run ({what}): {calls} calls a real run would make ({tokens} prompt tokens, estimated), {hits} "
          "requests served by the response cache; nothing was called or written")
    print(time_line(tokens, llm_info))
    return 0
