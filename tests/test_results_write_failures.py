"""Where the results go, checked before the first LLM call (superb.atomic.check_writable, check_replaceable) and a
write that fails after the calls (superb.cli._write), end to end with the fake OpenAI server on the local data set.

An unwritable --out is simulated as a path under a regular file (tests run as root, for whom chmod blocks nothing,
and a read-only mount needs privileges the test does not have): the kernel refuses it for every user. A disk that
fills during the write is simulated at the writing layer (superb.run.results._write_folder raises ENOSPC)."""

from __future__ import annotations

import errno

from superb.testing.fakeserver import FakeServer, yes
from local_data import data, dataset_table  # noqa: F401 (data: a fixture)
from superb.cli import main


def write_spec(folder, url: str, where=None):
    path = (where or folder) / "spec.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"""
name = "writable"
{dataset_table(folder)}
[evaluation]
measures = ["nDCG@10"]
[llm]
model = "fake-model"
base_urls = ["{url}"]
max_retries = 0
[[pipelines]]
name = "BM25"
first_stage = {{ engine = "pisa", depth = 5 }}
[[pipelines]]
name = "pointwise"
input = "BM25"
rerank = {{ type = "pointwise", variant = "yesno", top_k = 3, fields = ["title"] }}
""")
    return path


def run(data, out, spec_at=None):
    with FakeServer(responder=yes) as srv:
        spec = write_spec(data, srv.base_url, spec_at)
        code = main(["run", str(spec), "--out", str(out)])
        return code, srv.requests


def test_an_out_under_a_regular_file_is_refused_before_any_call(data, capsys):
    (data / "afile").write_text("not a folder")
    code, requests = run(data, data / "afile" / "sub")
    err = capsys.readouterr().err
    assert code == 2 and requests == 0
    assert f"cannot write the results folder {data / 'afile' / 'sub'}: {data / 'afile'} is a file" in err


def test_evaluate_refuses_an_unwritable_out_before_reading_anything(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "q.txt").write_text("1 0 a 1\n2 0 a 1\n")
    (tmp_path / "a.run").write_text("1 Q0 a 1 1 t\n2 Q0 a 1 1 t\n")
    code = main(["evaluate", "--qrels", str(tmp_path / "q.txt"), str(tmp_path / "a.run"), "--out",
                 str(tmp_path / "afile" / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "cannot write the results folder" in err and "Traceback" not in err


def test_a_write_that_fails_after_the_calls_is_an_error_and_the_answers_are_kept(data, capsys, monkeypatch):
    import superb.run.results

    def full_disk(result, ev, out_dir, *rest):
        (out_dir / "table.md").write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device", str(out_dir / "perquery.csv"))

    with monkeypatch.context() as patch:
        patch.setattr(superb.run.results, "_write_folder", full_disk)
        code, requests = run(data, data / "out")
    err = capsys.readouterr().err
    assert code == 2 and requests > 0
    assert f"superb: error: cannot write the results folder {data / 'out'}: No space left on device" in err
    assert "perquery.csv" in err and "kept in the response cache" in err and "Traceback" not in err
    assert not (data / "out").exists() and not list(data.glob(".out.*"))
    code, again = run(data, data / "out")  # the same command, the disk freed: nothing is paid twice
    assert code == 0 and again == 0


def test_a_file_of_the_users_in_the_folder_is_never_deleted(data, capsys):
    assert run(data, data / "out")[0] == 0
    (data / "out" / "notes.txt").write_text("my notes")
    (data / "out" / "README.md").write_text("# kept")
    code, requests = run(data, data / "out")
    err = capsys.readouterr().err
    assert code == 2 and requests == 0
    assert "holds 1 file(s) superb did not write there (notes.txt)" in err
    assert (data / "out" / "notes.txt").read_text() == "my notes"
    (data / "out" / "notes.txt").unlink()
    assert run(data, data / "out")[0] == 0  # README.md and report.html are superb's to keep or rewrite
    assert (data / "out" / "README.md").read_text() == "# kept"


def test_the_spec_being_run_is_never_deleted(data, capsys):
    assert run(data, data / "out")[0] == 0
    code, requests = run(data, data / "out", spec_at=data / "out")
    err = capsys.readouterr().err
    assert code == 2 and requests == 0
    assert f"{data / 'out' / 'spec.toml'} is inside {data / 'out'}" in err
    assert (data / "out" / "spec.toml").is_file()


def test_the_spec_inside_a_new_folder_is_refused_too(data):
    out = data / "new"
    code, requests = run(data, out, spec_at=out)
    assert code == 2 and requests == 0 and (out / "spec.toml").is_file()
