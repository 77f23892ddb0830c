"""Shared test setup: where the Chorus mirror is, for tests that read real data.

CI runs a clean clone with shared/ beside it and sets SUPERB_DATA_MIRROR=../shared/data; a developer checkout under
/work/main finds the same folder two levels up.
"""

import os
from pathlib import Path

import pytest

DEFAULT_MIRROR = Path(__file__).resolve().parents[2] / "shared" / "data"

# CI passes a relative mirror (../shared/data); some tests change the working directory, so pin it once, here.
if os.environ.get("SUPERB_DATA_MIRROR"):
    os.environ["SUPERB_DATA_MIRROR"] = str(Path(os.environ["SUPERB_DATA_MIRROR"]).resolve())


@pytest.fixture()
def chorus_mirror(monkeypatch) -> Path:
    mirror = Path(os.environ.get("SUPERB_DATA_MIRROR") or DEFAULT_MIRROR).resolve()
    if not (mirror / "chorus-icecat" / "Broad_Query_Set_rated.csv").is_file() and \
            not (mirror / "Broad_Query_Set_rated.csv").is_file():
        pytest.fail(f"the Chorus mirror is not at {mirror}: set SUPERB_DATA_MIRROR to a folder holding chorus-icecat/")
    monkeypatch.setenv("SUPERB_DATA_MIRROR", str(mirror))
    return mirror


@pytest.fixture()
def chorus_run_home(tmp_path, monkeypatch, chorus_mirror) -> Path:
    """``superb run`` on Chorus against the fake server: SUPERB_HOME under ``tmp_path`` (returned), the chorus_specs
    API key in SUPERB_TEST_KEY."""
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_TEST_KEY", "fake-key-testsecret-0123456789")
    return tmp_path
