"""Names in a spec: the rule a spec's or a system's name follows, the file name a system writes (runs/NAME.run,
gain_NAME.png), and the checks, made when the spec is read, that no two systems write one file and that no name
makes a file longer than the file system allows."""

from __future__ import annotations

import os
import re

from superb.errors import SpecError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.+>@()=,-]*$")


def _name_max() -> int:
    """The file system's longest file name in bytes (NAME_MAX: 255 on Linux, macOS and Windows file systems)."""
    try:
        return int(os.pathconf(".", "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):  # no pathconf (Windows) or no limit reported
        return 255


NAME_MAX = _name_max()
# What superb adds to a spec name in a file name: results/.NAME.replaced-PID (PIDs up to 7 digits) of a shard folder
# NAME.shard-I-of-N (I, N up to 3 digits); $SUPERB_HOME/batches/NAME-<12 hex> is shorter.
SPEC_NAME_ROOM = len("..replaced-") + 7 + len(".shard-999-of-999")
SYSTEM_NAME_ROOM = len("gain_.png")  # the longest file a system name makes: gain_NAME.png (runs/NAME.run is shorter)


def file_name(system: str) -> str:
    """A file-system-safe, readable name for a system ("BM25 >> pointwise" -> "BM25__pointwise"): its run file is
    runs/NAME.run and its gain plot gain_NAME.png in the results folder."""
    name = re.sub(r"\s*>>\s*", "__", system.strip())
    return re.sub(r"[^A-Za-z0-9_.+@=-]+", "_", name).strip("_") or "system"


def check_name_length(name: str, path: str, *, room: int, what: str) -> None:
    """Refuse a name whose file (``what``, ``room`` bytes longer than the name) would pass the file system's NAME_MAX:
    found when the spec is read, not after the LLM calls, when the results are written."""
    size = len(name.encode("utf-8"))
    if size + room > NAME_MAX:
        raise SpecError(path, f"{name[:40]!r}... is {size} bytes long: {what} would be {size + room} bytes, over the "
                              f"file system's limit of {NAME_MAX} bytes per file name; use a name of at most "
                              f"{NAME_MAX - room} bytes (shorter)")


def check_file_names(names: list[str], paths: list[str] | None = None) -> None:
    """Refuse system names that would write the same files ("BM25 >> S" and "BM25__S" both write runs/BM25__S.run),
    also when only the case differs: on macOS and Windows file systems "bm25" and "BM25" are one file. ``paths``:
    each name's key path for the message."""
    first: dict[str, int] = {}
    for i, name in enumerate(names):
        key = file_name(name).lower()
        if key in first:
            j = first[key]
            files = sorted({f"runs/{file_name(n)}.run" for n in (names[j], name)})
            same = "the same file" if len(files) == 1 else "one file where case is ignored (macOS, Windows)"
            other = f"{names[j]!r} ({paths[j]})" if paths else repr(names[j])
            raise SpecError(paths[i] if paths else "systems", f"{name!r} and {other} would write {same}: "
                                      f"{' and '.join(files)} (and the gain plot); a name maps to its file name with "
                                      "' >> ' as '__' and characters other than letters, digits and _ . + @ = - as "
                                      "'_'. Rename one of them")
        first[key] = i
