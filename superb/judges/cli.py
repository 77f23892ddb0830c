"""`superb judge SPEC`: label a pool of (query, product) pairs with LLM judges and measure agreement with humans.

The integrator's superb/cli.py calls :func:`register`. See superb.judges.spec for the spec shape and
superb.judges.run for what is written to results/NAME/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    judge = subparsers.add_parser("judge", help="label query-product pairs with LLM judges; agreement with humans "
                                                "(and a label study), or build a benchmark ([benchmark] specs)")
    judge.add_argument("spec", type=Path, help="a judge spec (TOML), e.g. experiments/judges_chorus.toml")
    judge.add_argument("--out", type=Path, default=None, help="results folder (default: results/NAME from the spec)")
    judge.set_defaults(func=_cmd_judge)


def _cmd_judge(args) -> int:
    from superb.exit_codes import folder_usage, llm_exit_code
    from superb.judges.run import run_judge_spec
    from superb.judges.spec import load_judge_spec

    spec = load_judge_spec(args.spec)
    out = args.out or Path(spec.output or Path("results") / spec.name)
    result = run_judge_spec(spec, out)
    if spec.benchmark is not None:
        print(f"{spec.name}: benchmark of {result['counts']['queries']} queries, {result['counts']['judgments']} "
              f"judged pairs, labels {result['counts']['labels']}, rewrites {result['stats']}")
    else:
        print((out / "agreement.md").read_text(encoding="utf-8"))
    if (out / "label_study.md").is_file() and spec.label_study is not None:
        print((out / "label_study.md").read_text(encoding="utf-8"))
    print(f"results written to {out}/")
    return llm_exit_code(spec.llm, folder_usage(out))  # counts on stderr; 3 when failures exceed max_failure_share
