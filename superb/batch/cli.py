"""`superb batch export|import|status|submit` and `superb responses replay` (registered by superb/cli.py).

Exit codes follow superb's (0 done, 2 error, 3 failed LLM requests, 130 interrupted):
- import: 0 every line stored (or already cached); 3 the file held error lines, i.e. failed requests (the answered
  lines are stored; the failed ones stay pending and the next export writes them again); 2 lines superb cannot use:
  an unknown custom_id (a result of another cache or spec) or a malformed line (the valid lines are stored, the rest
  named). 2 wins over 3. An interrupted import keeps what it stored; importing the file again is harmless.
- replay: 0 every row stored or already cached; 2 rows refused (their key is not the sha256 of their request).
- export, status: 0 (pending requests are the normal state between rounds); submit: 0 finished or stopped by
  --max-rounds (run it again to go on), 2 when it gives up (rounds in a row without one answer) or on bad input.
"""

from __future__ import annotations

import argparse
import sys

EXIT_UNUSABLE = 2  # lines or rows superb cannot use (superb's "error" code)
EXIT_FAILED_REQUESTS = 3  # failed LLM requests (superb's code for failed LLM calls)
from pathlib import Path
from typing import Any

from superb import paths
from superb.batch.collect import cache_path, llm_config, run_round
from superb.batch.submit import SubmitState, Submitter, work_dir
from superb.atomic import check_writable
from superb.errors import SpecError, SuperbError
from superb.llm.batch import PendingStore
from superb.llm.batch_api import BATCH_DISCOUNT, BatchAPI, MAX_BYTES, MAX_LINES
from superb.llm.batch_results import import_results
from superb.llm.cache import ResponseCache
from superb.llm.model import model_id
from superb.llm.ship import replay, write_shipped
from superb.options import read_toml
from superb.run.spec import load_spec, parse_spec
from superb.llm.recover import Recovered, recover_rows


def register(subparsers: Any) -> None:
    batch = subparsers.add_parser("batch", help="LLM work as OpenAI batch files (OpenAI Batch API, vllm run-batch, "
                                                "SGLang)")
    sub = batch.add_subparsers(title="batch commands", metavar="BATCH_COMMAND")

    export = sub.add_parser("export", help="write the requests the spec still needs as batch JSONL")
    export.add_argument("spec", type=Path)
    export.add_argument("--out", type=Path, required=True, help="the batch file to write (JSONL)")
    export.add_argument("--max-lines", type=int, default=None,
                        help="split into OUT-1.jsonl, OUT-2.jsonl, ... of at most this many requests (OpenAI: 50000)")
    export.add_argument("--max-mb", type=float, default=None,
                        help="split into files of at most this size (OpenAI: 200)")
    export.set_defaults(func=_export)

    imp = sub.add_parser("import", help="store the answers of batch result files in the response cache")
    imp.add_argument("files", type=Path, nargs="+", help="result (output or error) files, OpenAI/vLLM/SGLang format")
    _cache_args(imp)
    imp.add_argument("--replace", action="store_true", help="overwrite cached answers that differ (default: keep)")
    imp.set_defaults(func=_import)

    status = sub.add_parser("status", help="how many requests the spec still needs, and its submitted batches")
    status.add_argument("spec", type=Path)
    status.set_defaults(func=_status)

    submit = sub.add_parser("submit", help="rounds of the Batch API at llm.base_urls[0] until nothing is left")
    submit.add_argument("spec", type=Path)
    submit.add_argument("--dry-run", action="store_true",
                        help="print this round's requests, prompt tokens and estimated cost at batch prices")
    submit.add_argument("--poll-s", type=float, default=30.0, help="first wait between status checks (x1.5 each)")
    submit.add_argument("--max-poll-s", type=float, default=600.0, help="longest wait between status checks")
    submit.add_argument("--max-rounds", type=int, default=100, help="stop after this many rounds (resume later)")
    submit.set_defaults(func=_submit)
    batch.set_defaults(func=lambda args: batch.print_help() or 2)

    responses = subparsers.add_parser("responses", help="LLM responses shipped with results (responses.jsonl.gz)")
    rsub = responses.add_subparsers(title="responses commands", metavar="RESPONSES_COMMAND")
    replay = rsub.add_parser("replay", help="verify a results folder's responses and store them in the cache, so "
                                           "`superb run SPEC` makes 0 LLM calls")
    replay.add_argument("results", type=Path, nargs="+", help="results folders (results/NAME) or responses.jsonl.gz")
    _cache_args(replay)
    replay.add_argument("--replace", action="store_true", help="overwrite cached answers that differ (default: keep)")
    replay.set_defaults(func=_replay)
    save = rsub.add_parser("save", help="write the cached answers a run of SPEC (an experiment or a judge spec) "
                                       "would use to a responses file, without calling anything: a run cut short "
                                       "continues on another machine after `superb responses replay FILE`")
    save.add_argument("spec", type=Path)
    save.add_argument("--out", type=Path, required=True, help="the file to write (e.g. results/NAME.partial.jsonl.gz)")
    save.set_defaults(func=_save)
    remove = rsub.add_parser("remove", help="delete cached answers by key (e.g. one that cannot be loaded); the next "
                                           "run makes those requests again")
    remove.add_argument("keys", nargs="+", help="cache keys (64 hex digits, as an error names them)")
    _cache_args(remove)
    remove.set_defaults(func=_remove)
    recover = rsub.add_parser("recover", help="copy every answer still readable in a damaged cache file into a "
                                             "cache (each checked: its key must be the sha256 of its request)")
    recover.add_argument("damaged", type=Path, help="the damaged cache, moved aside (e.g. llm-cache.sqlite.corrupt)")
    _cache_args(recover)
    recover.set_defaults(func=_recover)
    responses.set_defaults(func=lambda args: responses.print_help() or 2)


def _cache_args(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--spec", type=Path, help="use the response cache this spec's [llm] names")
    where.add_argument("--cache", type=Path, help="the response cache file (default $SUPERB_HOME/llm-cache.sqlite)")


def _cache_path(args: argparse.Namespace) -> Path:
    if args.cache:
        return args.cache
    if args.spec:
        return cache_path(llm_config(load_spec(args.spec)))
    return paths.llm_cache_path()


def _export(args: argparse.Namespace) -> int:
    max_bytes = None if args.max_mb is None else int(args.max_mb * 2**20)
    check_writable(Path(args.out).parent / ".batch")  # before the spec runs: its folder takes new files
    found = run_round(load_spec(args.spec), args.out, max_lines=args.max_lines, max_bytes=max_bytes)
    for part in found.parts:
        print(f"wrote {part.lines} requests to {part.path} (sha256 {part.sha256[:12]})")
    for line in found.lines():
        print(line)
    return 0


def _import(args: argparse.Namespace) -> int:
    path = _cache_path(args)
    bad = failed = 0
    with ResponseCache(path) as cache, PendingStore(path) as store:
        for f in args.files:
            report = import_results(f, cache, store, replace=args.replace)
            for line in report.lines_out():
                print(line)
            bad += report.unknown + report.malformed
            failed += sum(report.errors.values())
        left = store.pending()
    print(f"{left} exported requests still wait for an answer in {path}"
          + ("; export again for the next round" if left == 0 else "; error lines are exported again next round"))
    if bad:
        print(f"superb: {bad} result lines could not be used (unknown custom_id or malformed; named above); the "
              f"valid lines are stored. Exit code {EXIT_UNUSABLE}", file=sys.stderr)
        return EXIT_UNUSABLE
    if failed:
        print(f"superb: {failed} requests failed in the batch (error lines, by code above); the next export writes "
              f"them again. Exit code {EXIT_FAILED_REQUESTS}", file=sys.stderr)
        return EXIT_FAILED_REQUESTS
    return 0


def _status(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    found = run_round(spec)
    for line in found.lines():
        print(line)
    config = llm_config(spec)
    if config.base_urls:
        state = SubmitState.load(work_dir(spec, config.base_urls[0], model_id(config)) / "state.json")
        for r in state.rounds:
            print(f"submitted round {r['round']}: {r['requests']} requests, batch {r.get('batch_id') or '-'}, "
                  f"{r.get('status') or 'in progress'}{', imported' if r.get('imported') else ''}")
    return 0


def _submit(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    config = llm_config(spec)
    if args.dry_run:
        found = run_round(spec)
        for line in found.lines():
            print(line)
        price = config.prices.get(model_id(config))
        if price and not found.done:
            t = found.totals
            full = (t.prompt_tokens * price.get("prompt", 0.0)
                    + t.max_completion_tokens * price.get("completion", 0.0)) / 1e6
            print(f"estimated cost of this round at batch prices ({BATCH_DISCOUNT:.0%} of [llm].prices): "
                  f"${full * BATCH_DISCOUNT:.4f} (at most; completion tokens counted at max_tokens)")
        elif not found.done:
            print(f"no [llm].prices entry for {model_id(config)!r}: no cost estimate")
        return 0
    if not config.base_urls:
        raise SpecError("llm.base_urls", "batch submit needs an endpoint with /v1/files and /v1/batches (OpenAI: "
                                         "https://api.openai.com/v1; an SGLang server); for vLLM use `superb batch "
                                         "export` and `vllm run-batch`")
    folder = work_dir(spec, config.base_urls[0], model_id(config))
    api = BatchAPI(config.base_urls[0], config.api_key())

    def export(path: Path):
        return run_round(spec, path, max_lines=MAX_LINES, max_bytes=MAX_BYTES).parts

    try:
        report = Submitter(api, export, cache_path(config), SubmitState.load(folder / "state.json"),
                           poll_s=args.poll_s, max_poll_s=args.max_poll_s, max_rounds=args.max_rounds,
                           log=lambda m: print(m, flush=True)).run()
    finally:
        api.close()
    done = "done: `superb run SPEC` makes 0 LLM calls" if report.finished else "not finished (run it again to go on)"
    print(f"{report.rounds} rounds in this call; {done}")
    return 0


def _save(args: argparse.Namespace) -> int:
    if not str(args.out).endswith(".jsonl.gz"):
        raise SuperbError(f"--out {args.out}: a responses file is gzip JSONL; name it NAME.jsonl.gz")
    check_writable(Path(args.out).parent / ".responses")  # before the spec runs: its folder takes a new file
    responses, left = _dry_run_of(args.spec)
    if responses is None:
        print(f"{args.spec}: no LLM stage, or its [llm] has no response cache: nothing to save")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary = write_shipped(responses, args.out)
    print(f"wrote {summary['rows']} cached answers to {args.out} (sha256 {summary['sha256'][:12]}); a run of "
          f"{args.spec} still needs {left} calls")
    return 0


def _dry_run_of(path: Path) -> tuple[Any, int]:
    """The cached answers a run of the spec at ``path`` would use and the calls it would still make, by a dry run:
    of `superb judge` for a judge spec (superb.judges.commands.spec.is_judge_spec), else of `superb run`."""
    from superb.judges.commands.spec import is_judge_spec, parse_judge_spec

    raw = read_toml(path, what="spec", hint="an experiment spec (superb run) or a judge spec (superb judge)")
    if is_judge_spec(raw):
        from superb.judges.commands.run import run_judge_spec

        result = run_judge_spec(parse_judge_spec(raw, source=Path(path)), Path(path).parent, mode="dry_run")
        return result.get("responses"), sum(int(row.get("calls", 0)) for row in result["usage"].values())
    from superb.run.experiment import run_experiment

    result = run_experiment(parse_spec(raw, source=Path(path)), dry_run=True, progress=False)
    return result.responses, int((result.llm_info or {}).get("usage_total", {}).get("dry_run", 0))


def _replay(args: argparse.Namespace) -> int:
    path = _cache_path(args)
    refused = 0
    with ResponseCache(path) as cache:
        for where in args.results:
            report = replay(where, cache, replace=args.replace)
            for line in report.lines():
                print(line)
            refused += report.invalid
    print(f"responses are in {path}")
    if refused:
        print(f"superb: {refused} rows refused (each named above with why: a key that is not its request's sha256, "
              f"a missing or mistyped field, malformed logprobs, a line that is not JSON); the valid rows are stored. "
              f"Exit code {EXIT_UNUSABLE}", file=sys.stderr)
    return EXIT_UNUSABLE if refused else 0


def _remove(args: argparse.Namespace) -> int:
    import re

    bad = [k for k in args.keys if not re.fullmatch(r"[0-9a-f]{64}", k)]
    if bad:
        raise SuperbError(f"not a cache key: {', '.join(map(repr, bad[:5]))} (a key is 64 lower-case hex digits)")
    path = _cache_path(args)
    if not path.exists():  # opening it would create an empty cache there and "remove 0": name the path instead
        raise SuperbError(f"the LLM response cache {path} does not exist: give the cache the error named (--cache)")
    with ResponseCache(path) as cache:
        removed = cache.remove(args.keys)
    print(f"removed {removed} of {len(args.keys)} answers from {path}; the next run makes those requests again")
    return 0


def _recover(args: argparse.Namespace) -> int:
    path = _cache_path(args)
    if path.resolve() == args.damaged.resolve():
        raise SuperbError(f"--cache {path} is the damaged file itself: move it aside first (`mv {path} "
                          f"{path}.corrupt`), then recover from {path}.corrupt into {path}")
    found = Recovered()
    with ResponseCache(path) as cache:
        stored = cache.store_rows(recover_rows(args.damaged, found), source=f"recovered:{args.damaged.name}")
    print(f"recovered {found.read} answers from {args.damaged} into {path} ({stored.stored} new, "
          f"{stored.identical} already there); {found.unreadable} rows could not be read, {found.refused} were "
          "refused (key not the sha256 of the request); the next run makes only those requests again")
    return 0
