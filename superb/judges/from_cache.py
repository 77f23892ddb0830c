"""The dev-calibrated agreement table of the scoring judges, computed from the LLM response cache ALONE.

No model is started and no call is made: requests go to a cache-only client (superb.llm.dryrun.DryRunClient over a
READ-ONLY superb.llm.cache.ResponseCache), which answers a cached request from the cache and a miss with a failed
completion that the judges count as "missing". The judges build exactly the requests a live run builds (same
templates, product text settings and label request), so whatever part of the work is cached is scored, the rest is
counted, and the table covers the scored pairs. Run it while a fill is still going: the cache is opened read-only
(SQLite WAL: readers never block the writer).

    python -m superb.judges.from_cache --out /tmp/judges_from_cache                    # every preset, all rated pairs
    python -m superb.judges.from_cache --judges yesno_product --splits dev --out /tmp/yesno_dev
    python -m superb.judges.from_cache --judges yesno_product,superb_product --ensemble yesno_product+superb_product

From Python: ``scores = score_from_cache(["yesno_product"], dataset, pool, cache_path=..., model=...)`` and then
``superb.judges.studies.calibration_agreement.calibrated_agreement(scores, dataset.ratings())``.

Pool: every pair with individual ratings (Chorus: 3,188 pairs; 842 of dev queries, 2,346 of test queries), the query
text from the data set's topics, the product text the title cut to 64 tokens (ProductText defaults), model the
embedded 1.5B's id. Progress is logged (logger ``superb.judges.from_cache``; the CLI logs INFO to stderr).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from superb.judges.registry import PRESETS, build_judge
from superb import paths
from superb.llm.cache import ResponseCache
from superb.llm.config import LLMConfig
from superb.llm.dryrun import DryRunClient

log = logging.getLogger(__name__)
DEFAULT_JUDGES = ("yesno_product", "superb_product", "umbrela", "yesno", "superb", "deliberated")


def cache_only_client(cache_path: str | Path | None = None, model: str | None = None, embedded_model: str = "1.5b"):
    """A client that answers from the cache only (read-only; a miss -> a failed "dry-run" completion). ``model``:
    the model id the cache was filled under (default: the embedded model's id, e.g.
    qwen2.5-coder-1.5b-instruct-q4_k_m)."""

    path = Path(cache_path) if cache_path else paths.llm_cache_path()
    cache = ResponseCache(path, "read-only")
    config = LLMConfig(embedded_model=embedded_model, cache="read-only", cache_path=str(path))
    client = DryRunClient(config, cache=cache)
    if model:
        client.model = model
        client.info["model"] = model
    return client


def rated_pool(dataset: Any, splits: Sequence[str] | None = None, split_of=None) -> pd.DataFrame:
    """qid, query, docno, split of every individually rated pair of the given splits (default: dev and test;
    ratings order)."""
    from superb.data.splits import DEV_TEST, split_of as split_by_qid

    splits = DEV_TEST if splits is None else tuple(splits)
    bad = sorted(set(splits) - set(DEV_TEST))
    if bad:
        raise ValueError(f"splits {bad} are not {'/'.join(DEV_TEST)}")
    ratings = dataset.ratings()
    if ratings is None:
        raise ValueError(f"data set {dataset.name!r} has no individual ratings: nothing to calibrate against")
    topics = dataset.topics()[["qid", "query"]].astype({"qid": str})
    pool = ratings[["qid", "docno"]].astype(str).merge(topics, on="qid", how="left")
    pool["split"] = pool["qid"].map(split_of or split_by_qid)
    return pool[pool["split"].isin(splits)][["qid", "query", "docno", "split"]].reset_index(drop=True)


def score_from_cache(judges: Sequence[str | Mapping[str, Any]], dataset: Any, pool: pd.DataFrame, *, llm: Any = None,
                     cache_path: str | Path | None = None, model: str | None = None, fields=("title",),
                     text_tokens: int = 64) -> tuple[dict[str, pd.DataFrame], dict[str, dict]]:
    """(scores, info): per judge name, the frame qid, docno, score, status of every pool pair, and the judge's
    stats and template ids. ``llm`` defaults to ``cache_only_client(cache_path, model)`` (closed here)."""
    own = llm is None
    llm = llm or cache_only_client(cache_path, model)
    scores, info = {}, {}
    try:
        for spec in judges:
            name = spec if isinstance(spec, str) else spec.get("name") or spec.get("preset")
            options = {"preset": spec} if isinstance(spec, str) else {k: v for k, v in spec.items() if k != "name"}
            options.setdefault("fields", list(fields))
            options.setdefault("text_tokens", text_tokens)
            judge = build_judge(options, llm=llm, dataset=dataset, name=name, path=f"judges[{name}]")
            t = time.perf_counter()
            frame = judge.score(pool)
            if "split" in pool.columns:
                frame = frame.merge(pool[["qid", "docno", "split"]].astype(str).drop_duplicates(["qid", "docno"]),
                                    on=["qid", "docno"], how="left")
                for split, part in frame.groupby("split"):
                    log.info("%s: %s split, %d of %d pairs scored from the cache (%s)", name, split,
                             int(part["score"].notna().sum()), len(part),
                             ", ".join(f"{k} {v}" for k, v in part["status"].value_counts().items()))
            log.info("%s: %d pairs in %.1f s; templates %s; stats %s", name, len(frame), time.perf_counter() - t,
                     judge.template_ids(), dict(judge.stats))
            scores[name] = frame
            info[name] = {"templates": judge.template_ids(), "stats": dict(judge.stats),
                          "ideals": dict(getattr(judge, "ideals", {}) or {}) or None}
    finally:
        if own:
            llm.close()
            llm.cache.close()
    return scores, info


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m superb.judges.from_cache", description=__doc__.split("\n\n")[0])
    parser.add_argument("--judges", default=",".join(DEFAULT_JUDGES),
                        help=f"comma-separated presets (default: all of {', '.join(DEFAULT_JUDGES)})")
    parser.add_argument("--ensemble", action="append", default=[],
                        help="members joined by '+', e.g. yesno_product+superb_product (repeatable)")
    parser.add_argument("--normaliser", default="rank", choices=("rank", "minmax"), help="ensemble normaliser")
    parser.add_argument("--splits", default="dev,test", help="dev,test (default) or dev")
    parser.add_argument("--cache", default=None, help="cache file (default: $SUPERB_HOME/llm-cache.sqlite)")
    parser.add_argument("--model", default=None, help="model id the cache was filled under (default: embedded 1.5B)")
    parser.add_argument("--dataset", default="chorus")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples of queries")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("judges_from_cache"), help="output folder")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)

    from superb.data import load_dataset
    from superb.judges.bootstrap import QueryBootstrap
    from superb.judges.studies.calibration_agreement import calibrated_agreement, format_markdown, write_study
    from superb.judges.studies.calibration import Ensemble

    judges = [j.strip() for j in args.judges.split(",") if j.strip()]
    unknown = [j for j in judges if j not in PRESETS]
    if unknown:
        parser.error(f"unknown judges {unknown}; presets: {sorted(PRESETS)}")
    ensembles = {}
    for text in args.ensemble:
        members = [m.strip() for m in text.split("+") if m.strip()]
        outside = [m for m in members if m not in judges]
        if outside:
            parser.error(f"--ensemble {text}: {outside} not among --judges {judges}")
        ens = Ensemble(members, normaliser=args.normaliser)
        ensembles[ens.name] = ens
    dataset = load_dataset({"name": args.dataset}, path="dataset")
    pool = rated_pool(dataset, [s.strip() for s in args.splits.split(",")])
    log.info("%d rated pairs (%s), %d judges, cache-only", len(pool),
             ", ".join(f"{k} {v}" for k, v in pool["split"].value_counts().items()), len(judges))
    scores, _ = score_from_cache(judges, dataset, pool, cache_path=args.cache, model=args.model)
    ratings = dataset.ratings().merge(pool[["qid", "docno"]], on=["qid", "docno"])
    study = calibrated_agreement(scores, ratings, ensembles=ensembles,
                                 bootstrap=QueryBootstrap(args.bootstrap, seed=args.seed), seed=args.seed)
    write_study(study, args.out, title=f"{args.dataset}: judges calibrated on dev, from the LLM cache")
    print(format_markdown(study))
    print(f"written to {args.out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
