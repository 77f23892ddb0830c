"""Every superb command README.md and docs/ show runs as copied and writes outside the committed folders (issue 50.7).

A command is a line of a code block, or an inline code span naming a concrete spec or folder (``superb run
experiments/x.toml``; ``superb run SPEC`` is syntax, not a command). Each one: is ``.venv/bin/superb``, or its page
says how to put ``superb`` on PATH (``source .venv/bin/activate``); parses with superb's own parser; reads specs,
folders and files that exist (or that an earlier command of the page writes, or that the page asks the reader to
write); and writes nowhere inside a folder git tracks (results/, experiments/, ...): a run, judge, merge or evaluate
names ``--out`` (``my-results/`` is git-ignored), a report names ``--out``, a dry run writes nothing.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from superb.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
ON_PATH = "source .venv/bin/activate"
PLAIN = {None, "bash", "sh", "shell", "console", "text"}  # code blocks whose lines are commands
# what a page has the reader write, or another tool make (vllm run-batch's output file)
YOURS = {"docs/local-data.md": {"my_products.toml"}, "docs/large-runs.md": {"round1.out.jsonl"}}
PLACEHOLDER = re.compile(r"\b(SPEC|NAME|FILE|DIR|FOLDER|QRELS|RUN|KEY|CACHE|A|B|X)\b|\.\.\.|\[|\|")


def commands(page: str) -> list[tuple[int, str]]:
    """(line, command) of every superb command on the page, in order."""
    found, fence, pending = [], None, ""
    for n, line in enumerate((ROOT / page).read_text(encoding="utf-8").splitlines(), 1):
        opened = re.match(r"^\s*```(\w*)", line)
        if opened:
            fence = None if fence is not None else (opened.group(1) or "text")
            continue
        if fence is None:
            for span in re.findall(r"`((?:\.venv/bin/)?superb [a-z][^`]*)`", line):
                if not PLACEHOLDER.search(span) and re.search(r"\.toml|results/|my-results/", span):
                    found.append((n, span))
            continue
        if fence not in PLAIN:
            continue
        text = pending + line
        if text.rstrip().endswith("\\"):
            pending = text.rstrip()[:-1] + " "
            continue
        pending = ""
        code = re.split(r"\s#\s|\s{2,}#", text)[0]
        for part in code.split("&&"):
            part = re.sub(r"^\s*(export\s+)?([A-Z_]+=\S+\s+)*", "", part).strip()
            if re.match(r"(\.venv/bin/)?superb\s", part):
                found.append((n, part))
    return found


def tracked_folders() -> set[str]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return {line.split("/")[0] for line in listed.splitlines() if "/" in line}


def written(args) -> list[str]:
    """Where the command writes (paths as given), by superb's own defaults."""
    command = args.command
    if getattr(args, "dry_run", False) or command in {"show", "compare", "llm", "batch"}:
        return [str(args.out)] if command == "batch" and getattr(args, "out", None) else []
    if command == "responses":
        return [str(args.out)] if getattr(args, "out", None) else []
    if command == "report":
        return [str(args.out) if args.out else f"{args.result}/report.html"]
    if getattr(args, "out", None) is not None:
        return [str(args.out)]
    if command == "table":
        return []  # prints table.md only
    if command == "judge" and getattr(args, "fill", None):
        return [str(args.fill)]  # in place
    return ["results/(the spec's name)"]


def read(args) -> list[str]:
    """The specs, folders and files the command reads (globs as written)."""
    paths = []
    for key in ("spec", "result", "fill", "qrels", "anchors", "hypotheses", "topics"):
        value = getattr(args, key, None)
        if value is not None and not isinstance(value, bool):
            paths.append(str(value))
    for key in ("shards", "folders", "runs", "files", "paths"):
        paths += [str(v) for v in getattr(args, key, None) or []]
    if args.command in {"show", "compare"}:
        paths += [str(v) for v in vars(args).values() if isinstance(v, Path)]
    return paths


def exists(path: str, earlier: list[str], yours: set[str]) -> bool:
    if any(fnmatch.fnmatch(e, path) or e == path or path.startswith(e.rstrip("/") + "/") for e in earlier):
        return True
    return path in yours or bool(list(ROOT.glob(path))) or (ROOT / path).exists()


def test_the_pages_show_commands():
    shown = {page: commands(page) for page in PAGES}
    assert len(shown["README.md"]) >= 4 and sum(len(c) for c in shown.values()) >= 20


@pytest.mark.parametrize("page", PAGES)
def test_every_command_runs_as_copied_and_writes_outside_committed_folders(page):
    parser, tracked = build_parser(), tracked_folders()
    text = (ROOT / page).read_text(encoding="utf-8")
    earlier: list[str] = []
    problems = []
    for n, command in commands(page):
        words = shlex.split(command)
        if words[0] == "superb" and ON_PATH not in text:
            problems.append(f"{page}:{n}: `{command}`: say how to put superb on PATH ({ON_PATH}) or write "
                            ".venv/bin/superb")
        try:
            args = parser.parse_args(words[1:])
        except SystemExit:
            problems.append(f"{page}:{n}: `{command}` does not parse")
            continue
        args.command = words[1]
        for path in read(args):
            if not exists(path, earlier, YOURS.get(page, set())):
                problems.append(f"{page}:{n}: `{command}` reads {path}, which does not exist")
        for out in written(args):
            top = Path(out).parts[0] if Path(out).parts else out
            if out.startswith("results/") or top in tracked:
                problems.append(f"{page}:{n}: `{command}` writes {out}, inside a committed folder: give --out "
                                "my-results/...")
            earlier.append(out)
    assert not problems, "\n".join(problems)
