"""TOML files read by superb (specs, `superb evaluate --hypotheses`, `superb llm check --spec`): bytes that are not
UTF-8 and syntax errors are reported as FILE:LINE:COLUMN with exit 2, never a UnicodeDecodeError traceback."""

from __future__ import annotations

import pytest

from superb.cli import main
from superb.errors import SpecError
from superb.run.spec import load_spec

SPEC = b'name = "x"\n# caf\xe9 au lait\n[dataset]\nname = "chorus"\n'


def test_a_latin1_byte_in_a_spec_comment_is_named_by_line_and_column(tmp_path):
    spec = tmp_path / "latin.toml"
    spec.write_bytes(SPEC)
    with pytest.raises(SpecError) as err:
        load_spec(spec)
    assert str(err.value).startswith(f"{spec}:2:6: not UTF-8 text: byte(s) b'\\xe9'")


def test_a_syntax_error_is_named_by_line_and_column(tmp_path):
    spec = tmp_path / "bad.toml"
    spec.write_text('name = "x"\n[dataset\nname = 1\n')
    with pytest.raises(SpecError) as err:
        load_spec(spec)
    assert str(err.value).startswith(f"{spec}:2:9: not valid TOML: ")


def test_a_syntax_error_at_the_end_names_the_last_line(tmp_path):
    spec = tmp_path / "cut.toml"
    spec.write_text('name = "x"\ndescription = "cut')
    with pytest.raises(SpecError) as err:
        load_spec(spec)
    assert str(err.value).startswith(f"{spec}:2:")


def test_a_byte_order_mark_is_not_a_syntax_error(tmp_path):
    spec = tmp_path / "bom.toml"
    spec.write_bytes(b"\xef\xbb\xbf" + b'name = "x"\n')
    from superb.options import read_toml

    assert read_toml(spec) == {"name": "x"}


@pytest.mark.parametrize("command", ["run", "evaluate", "llm"])
def test_every_command_reports_a_bad_toml_file_without_a_traceback(tmp_path, capsys, command):
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"# caf\xe9\n[[hypotheses]]\n")
    run = tmp_path / "a.run"
    run.write_text("1 Q0 a 1 1 t\n")
    qrels = tmp_path / "q.txt"
    qrels.write_text("1 0 a 1\n2 0 a 1\n")
    argv = {"run": ["run", str(bad), "--out", str(tmp_path / "out")],
            "evaluate": ["evaluate", "--qrels", str(qrels), str(run), "--hypotheses", str(bad), "--out",
                         str(tmp_path / "out")],
            "llm": ["llm", "check", "--spec", str(bad)]}[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"superb: error: {bad}:1:6: not UTF-8 text" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()
