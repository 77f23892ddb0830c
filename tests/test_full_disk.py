"""A full disk, met while writing: every command that writes (table, report, responses save) ends with exit 2 naming
the path and the fix, never a traceback, and leaves no temporary file or folder behind (issue 50, item 5). The disk
is filled by making the one write that matters fail with ENOSPC, as the kernel would."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

from superb.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _full_disk_on(monkeypatch, suffix: str) -> None:
    """Every write of a file whose name ends in ``suffix`` fails as on a full disk, part-way through."""
    real_write_text, real_open = Path.write_text, open

    def write_text(self, data, *args, **kw):
        if str(self).endswith(suffix):
            real_write_text(self, data[: len(data) // 2], *args, **kw)  # what made it to the disk before it filled
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
        return real_write_text(self, data, *args, **kw)

    monkeypatch.setattr(Path, "write_text", write_text)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if ".writing" in p.name or p.name.endswith((".tmp", ".part")))


def test_superb_table_on_a_full_disk_exits_2_naming_the_file_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    _full_disk_on(monkeypatch, "table.tex")
    out = tmp_path / "table"
    code = main(["table", "results/trec_dl19", "results/trec_dl20", "--names", "DL19,DL20", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "table.tex" in err and os.strerror(errno.ENOSPC) in err and "free disk space" in err
    assert not out.exists() and _leftovers(tmp_path) == []


def test_superb_report_on_a_full_disk_exits_2_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "quickstart"
    shutil.copytree(ROOT / "results" / "quickstart", folder)
    before = (folder / "report.html").read_bytes()
    _full_disk_on(monkeypatch, ".report.html.writing")
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "report.html" in err and "Traceback" not in err
    assert (folder / "report.html").read_bytes() == before and _leftovers(tmp_path) == []


def test_an_output_that_takes_no_new_file_is_refused_before_any_folder_is_read(tmp_path, monkeypatch, capsys):
    import tempfile

    def no_space(*args, **kw):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(tempfile, "mkstemp", no_space)  # the probe superb.atomic.check_writable makes
    read = []
    monkeypatch.setattr("superb.eval.paper_table.paper_table", lambda *a, **k: read.append(1))
    assert main(["table", str(ROOT / "results" / "trec_dl19"), "--out", str(tmp_path / "t")]) == 2
    assert "does not take a new file" in capsys.readouterr().err and read == []


def test_shipped_answers_written_to_a_full_disk_leave_no_temporary_part(tmp_path, monkeypatch):
    from superb.llm import ship

    class Full:
        def __init__(self, *a, **k):
            pass

        def __enter__(self):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "r.jsonl.gz.tmp"))

        def __exit__(self, *a):
            return False

    monkeypatch.setattr(ship.gzip, "GzipFile", Full)
    with pytest.raises(OSError):
        ship.write_lines(tmp_path / "r.jsonl.gz", iter(['{"key": "a"}']))
    assert sorted(p.name for p in tmp_path.iterdir()) == []
