"""Every reranker and judge reads its answers through superb.llm.answers (issue 44): a second implementation of a
reader (label probabilities, written labels, letters, permutations) anywhere else fails this test."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READERS = {"superb/llm/answers.py", "superb/llm/parsing.py"}
#: the low-level parsers: only the readers module may call them
LOW_LEVEL = {"first_distribution", "token_distribution", "first_letter_distribution", "letter_distribution",
             "parse_label", "parse_yes_no", "parse_grade", "grade_distribution", "parse_listwise",
             "parse_permutation", "parse_letter", "parse_confidence", "parse_umbrela", "distribution_after",
             "grade_after"}


def sources() -> list[Path]:
    return sorted(p for folder in ("superb", "transformers", "pipelines") for p in (ROOT / folder).rglob("*.py"))


def test_no_module_but_the_readers_calls_a_low_level_parser_or_exponentiates_logprobs():
    found = []
    for path in sources():
        rel = str(path.relative_to(ROOT))
        if rel in READERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "superb.llm.parsing":
                found += [f"{rel}: imports {a.name}" for a in node.names if a.name in LOW_LEVEL]
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                if name in LOW_LEVEL:
                    found.append(f"{rel}:{node.lineno}: calls {name}")
                if name == "exp" and "logprob" in ast.unparse(node):
                    found.append(f"{rel}:{node.lineno}: exponentiates a logprob ({ast.unparse(node)})")
    assert not found, "a second answer reader:\n" + "\n".join(found)


def test_each_llm_reranker_and_judge_imports_the_readers():
    users = ["transformers/pointwise.py", "transformers/deliberated.py", "transformers/setwise.py",
             "transformers/window.py", "superb/judges/base.py", "superb/judges/pointwise.py", "superb/judges/listwise.py",
             "superb/llm/preference.py"]
    for rel in users:
        tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
        assert any(isinstance(n, ast.ImportFrom) and n.module == "superb.llm.answers" for n in ast.walk(tree)), rel
