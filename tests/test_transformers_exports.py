"""Every registered reranker type imports from ``superb.transformers`` by its class name (issue 35: six could not),
and importing the package stays cheap (no PyTerrier, no model client)."""

from __future__ import annotations

import subprocess
import sys

import superb.transformers as st
from superb.transformers.registry import RERANKERS, reranker_class


def test_every_registered_type_is_exported_by_its_class_name():
    for type_name, path in RERANKERS.items():
        name = path.partition(":")[2]
        assert name in st.__all__, type_name
        assert getattr(st, name) is reranker_class(type_name), type_name
    for helper in ("ProductText", "BuildContext", "build_reranker", "Reranker"):
        assert getattr(st, helper) is not None


def test_importing_the_package_loads_no_heavy_backend():
    code = ("import sys, superb.transformers; heavy = [m for m in ('pyterrier', 'openai', 'pandas', 'xllamacpp') "
            "if m in sys.modules]; print(heavy)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
