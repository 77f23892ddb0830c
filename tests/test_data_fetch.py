"""The pinned-file fetcher: cache, mirror, download (file:// URLs stand in for upstream), checksums, atomic writes."""

import hashlib
import io
import urllib.request

import pytest

from superb.data.fetch import PinnedFile, fetch
from superb.errors import DataError

CONTENT = b"query,docid,rating\nlaptop,1,3\n"
SHA = hashlib.sha256(CONTENT).hexdigest()


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SUPERB_DATA_MIRROR", raising=False)
    return tmp_path / "home"


def _pinned(url="https://example.invalid/rated.csv", sha=SHA):
    return PinnedFile(name="rated.csv", url=url, size=len(CONTENT), sha256=sha)


def _leftovers(folder):
    return [p.name for p in folder.iterdir()] if folder.exists() else []


def test_mirror_copy_then_cache(home, tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    (mirror / "toy").mkdir(parents=True)
    (mirror / "toy" / "rated.csv").write_bytes(CONTENT)
    monkeypatch.setenv("SUPERB_DATA_MIRROR", str(mirror))
    path = fetch(_pinned(), "toy")
    assert path == home / "data" / "toy" / "rated.csv"
    assert path.read_bytes() == CONTENT
    (mirror / "toy" / "rated.csv").unlink()  # the verified cached copy is used from now on
    assert fetch(_pinned(), "toy").read_bytes() == CONTENT
    assert _leftovers(home / "data" / "toy") == ["rated.csv"]


def test_flat_mirror_layout(home, tmp_path, monkeypatch):
    (tmp_path / "flat").mkdir()
    (tmp_path / "flat" / "rated.csv").write_bytes(CONTENT)
    monkeypatch.setenv("SUPERB_DATA_MIRROR", str(tmp_path / "flat"))
    assert fetch(_pinned(), "toy").read_bytes() == CONTENT


def test_checksum_mismatch_refused(home, tmp_path, monkeypatch):
    (tmp_path / "mirror" / "toy").mkdir(parents=True)
    (tmp_path / "mirror" / "toy" / "rated.csv").write_bytes(CONTENT + b"tampered\n")
    monkeypatch.setenv("SUPERB_DATA_MIRROR", str(tmp_path / "mirror"))
    with pytest.raises(DataError) as err:
        fetch(_pinned(), "toy")
    message = str(err.value)
    got = hashlib.sha256(CONTENT + b"tampered\n").hexdigest()
    assert "rated.csv" in message and SHA in message and got in message
    assert "https://example.invalid/rated.csv" in message  # says where the right file is
    assert _leftovers(home / "data" / "toy") == []


def test_no_network_no_mirror_names_file_url_and_env_var(home, tmp_path):
    missing = (tmp_path / "nowhere" / "rated.csv").as_uri()  # a URL that cannot be opened, like a dead network
    with pytest.raises(DataError) as err:
        fetch(_pinned(url=missing), "toy")
    message = str(err.value)
    assert "rated.csv" in message and missing in message and "SUPERB_DATA_MIRROR" in message


def test_mirror_without_the_file_says_where_it_looked(home, tmp_path, monkeypatch):
    (tmp_path / "mirror").mkdir()
    monkeypatch.setenv("SUPERB_DATA_MIRROR", str(tmp_path / "mirror"))
    with pytest.raises(DataError, match=r"mirror.toy.rated\.csv"):
        fetch(_pinned(url=(tmp_path / "nowhere").as_uri()), "toy")


def test_download_is_verified(home, tmp_path):
    upstream = tmp_path / "upstream.csv"
    upstream.write_bytes(CONTENT)
    assert fetch(_pinned(url=upstream.as_uri()), "toy").read_bytes() == CONTENT
    with pytest.raises(DataError, match="checksum mismatch"):
        fetch(PinnedFile("other.csv", upstream.as_uri(), len(CONTENT), "0" * 64), "toy")
    assert sorted(_leftovers(home / "data" / "toy")) == ["rated.csv"]


class _Broken(io.RawIOBase):
    """A response that delivers some bytes, then drops the connection."""

    def __init__(self):
        self.sent = False

    def read(self, n=-1):
        if not self.sent:
            self.sent = True
            return CONTENT[:10]
        raise ConnectionResetError("connection dropped")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_interrupted_download_leaves_nothing(home, monkeypatch):
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout: _Broken())
    with pytest.raises(DataError, match="rated.csv"):
        fetch(_pinned(), "toy")
    assert _leftovers(home / "data" / "toy") == []


def test_corrupt_cache_is_refetched_with_a_warning(home, tmp_path, monkeypatch):
    cached = home / "data" / "toy" / "rated.csv"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"half a fi")
    upstream = tmp_path / "upstream.csv"
    upstream.write_bytes(CONTENT)
    with pytest.warns(UserWarning, match="fetching it again"):
        path = fetch(_pinned(url=upstream.as_uri()), "toy")
    assert path.read_bytes() == CONTENT
