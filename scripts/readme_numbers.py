r"""README numbers bound to the exact place in a results file they come from.

A README states a result as a reference-style markdown link whose text is the number and whose target is the file
with a fragment naming the place:

    fuse(BM25, bi-encoder, pointwise) reaches nDCG@10 [0.6399][12] ...

    [12]: <chorus_table4_full/table.csv#system=fuse(BM25, bi-encoder, pointwise)&view=full&measure=nDCG@10&col=mean>

GitHub shows the number as a link to the file and hides the definition. The target is relative to the README (as
markdown links are). The fragment is `&`-separated `key=value` pairs (split at the first `=`; `%26` writes a `&`):
- CSV: every pair but `col` is a filter `column=value` on the row (all must hold, exactly one row must match);
  `col` names the column whose value is stated.
- JSON and TOML: `key=a/b/0/c`, a path of keys; a list element is picked by its index or by `field:value` (the one
  dict in the list whose `field` equals `value`), e.g. `key=pipelines/name:BM25/first_stage/depth`.
- CSV, a difference: `minus.column=value` states the row's value minus that of the row the filters select with
  `column=value` in place of theirs (`...&col=mean&minus.system=BM25 >> pointwise`): for a gain that is no cell.
In angle brackets a `>` of the target is written `\>` (CommonMark). An inline link `[0.6399](<path#fragment>)` is
read the same way.

The value at the place must round to the written number at its precision: 0.6399 is f"{v:.4f}" of v; 1,736 is
v = 1736 (thousands separators as written); 71% is v = 0.71 (a share) or 71 at the written precision; a number written
with a sign (+0.0167, -0.0206, or U+2212 as the minus) is compared signed; <0.0001 is a bound, 0 <= v < 0.0001 (a
p-value too small for its digits, not "0.0000"). So a change of a README number in its last digit fails.

Sign and identity, not only the rounded magnitude (a number bound to the right value in the wrong cell passes the
magnitude check):
- A number written without a sign states a value >= 0: bound to a negative cell it fails, unless the words just
  before it say which side ("behind by 0.0116", "trails ... by 0.0116": the cell must be <= 0; "ahead by",
  "leads ... by": the cell must be >= 0). So "A is ahead of B by 0.0116" must be bound to A - B, not to B - A.
- The same number written twice on one line and bound to one place fails: each states its own value (the weights
  0.375 / 0.375 of a fusion both bound to weights/deliberated). The same value restated at another precision or as
  a percentage is fine.
- A JSON/TOML place that picks a list element by `field:value` while another element holds the same number at the
  same path (PISA BM25 and Terrier RM3 both 0.573) must be named in the number's sentence: each selector value
  (`engine:pisa;model:bm25`; values that are single words) appears there, case-insensitively. So "0.573 (PISA)"
  bound to Terrier RM3's cell fails. (A CSV row is not checked this way: bind by the row's names and review `bind`'s choices.)

Blocks `<!-- numbers from FILES -->` ... `<!-- end numbers -->` mark prose that states results: every number written
in a block must be bound. Not numbers: names such as nDCG@10, P(rel=2)@5, 1.5B, Qwen2.5, a `0-3` label range,
"issue 9", "95% interval", and a code span that is not a measured value (write an aim or a constant that no results
file holds as `tau >= 0.8`). A code span holding only a number with three or more decimals (`0.0327`) is a measured
value written to escape the check: it counts as an unbound number, so it must be written as a bound number or not at
all. 1.22x is a number. FILES are the candidate sources the `bind` command searches (paths relative to the
repository); add the spec (experiments/NAME.toml) when the prose states settings such as weights or window sizes.

Commands (python scripts/readme_numbers.py ...):
  check [FILES]         every bound number against its place; prints the file's current value for each mismatch
  bind FILES            (scripts/readme_binding.py) binds the plain numbers of every block to a cell of the block's
                        FILES holding that value
                        (context decides between candidates: the row's names and the column near the number);
                        prints each binding it had to choose among several candidates, to review
  unbind FILES          turns the bound numbers of the blocks back into plain numbers (when a table's rows or columns
                        changed so much that its places must be chosen again: unbind, bind, review)
  rebind FILES          rewrites each mismatched bound number to the file's current value at its place, at the
                        written precision (after a table is re-issued; read the prose around it again)
"""

from __future__ import annotations

import csv
import importlib.util
import json
import re
import sys
import tomllib
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

NUM = r"<?[+\-\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%?"
BLOCK = re.compile(r"<!-- numbers(?: from (.+?))? -->\n(.*?)<!-- end numbers -->", re.S)
REF = re.compile(r"\[(" + NUM + r")\]\[([^\]\n]+)\]")
INLINE = re.compile(r"\[(" + NUM + r")\]\((?:<((?:\\.|[^<>\\\n])*)>|([^\s()]+))\)")
DEFINITION = re.compile(r"^\[([^\]\n]+)\]: (?:<((?:\\.|[^<>\\\n])*)>|(\S+))[ \t]*$", re.M)
# a number standing alone: not part of a name (nDCG@10, P(rel=2), 1.5B, Qwen2.5, MiniLM-L6, 0-3), maybe signed, maybe %
# the dash of a range between two decimals (0.782-0.870): the second number is a number, not a negative one
RANGE_DASH = re.compile(r"(?:(?<=\.\d)|(?<=\.\d\d)|(?<=\.\d\d\d)|(?<=\.\d{4})|(?<=\]))-(?=\d|\[)")
WRITTEN = re.compile(
    r"(?<![\w@.=/^\-])(?<!issue )(?<!issues )[+\-\u2212]?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?"
    r"(?!% (?:interval|confidence))(%?)"
    r"(?!(?!x\b)[\w@]|\.\d|-\d)"  # 1.22x is a number; 1.5B, P@5, the 0 of 0-3: names
)
CODE = re.compile(r"`[^`\n]*`")
MEASURED_IN_CODE = re.compile(r"`\s*[+\-\u2212]?\d+\.\d{3,}\s*`")  # a measured value in a code span: not exempt


class BindingError(Exception):
    """A bound place that does not exist or is not unique (the message names it and the fix)."""


# ---------------------------------------------------------------------------------------------- reading a place


@lru_cache(maxsize=None)
def csv_rows(path: Path) -> tuple[list[str], list[dict]]:
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


@lru_cache(maxsize=None)
def read_tree(path: Path):
    if path.suffix == ".toml":
        return tomllib.loads(path.read_text(encoding="utf-8"))
    return json.loads(path.read_text(encoding="utf-8"))


def parse_fragment(fragment: str) -> list[tuple[str, str]]:
    pairs = []
    for part in fragment.split("&"):
        key, sep, value = part.partition("=")
        if not sep:
            raise BindingError(f"fragment part {part!r} is not key=value")
        pairs.append((key, value.replace("%26", "&")))
    return pairs


def value_at(target: str, base: Path) -> float:
    """The number at `path#fragment`, the path relative to `base` (the README's folder)."""
    path_text, _, fragment = target.partition("#")
    path = (base / path_text).resolve()
    if not path.is_file():
        raise BindingError(f"{path_text}: no such file")
    pairs = parse_fragment(fragment)
    if path.suffix == ".csv":
        columns, rows = csv_rows(path)
        filters = [(k, v) for k, v in pairs if k != "col" and not k.startswith("minus.")]
        other = [(k[len("minus."):], v) for k, v in pairs if k.startswith("minus.")]
        cols = [v for k, v in pairs if k == "col"]
        if len(cols) != 1:
            raise BindingError(f"{target}: a CSV place needs exactly one col=COLUMN")
        for k, _ in filters + [("col", cols[0])]:
            name = cols[0] if k == "col" else k
            if name not in columns:
                raise BindingError(f"{target}: {path_text} has no column {name!r} (columns: {', '.join(columns)})")
        hits = [r for r in rows if all(r[k] == v for k, v in filters)]
        if len(hits) != 1:
            raise BindingError(f"{target}: {len(hits)} rows match {dict(filters)} (exactly one must)")
        cell = hits[0][cols[0]]
        if other:  # a difference between two rows of one column: the filters with minus.X=V in place of X=V
            theirs = dict(filters) | dict(other)
            hits = [r for r in rows if all(r[k] == v for k, v in theirs.items())]
            if len(hits) != 1:
                raise BindingError(f"{target}: {len(hits)} rows match {theirs} (exactly one must)")
            return float(cell) - float(hits[0][cols[0]])
    elif path.suffix in (".json", ".toml"):
        keys = [v for k, v in pairs if k == "key"]
        if len(keys) != 1 or len(pairs) != 1:
            raise BindingError(f"{target}: a JSON/TOML place is key=a/b/0")
        cell = _walk(read_tree(path), keys[0], target)
    else:
        raise BindingError(f"{target}: only .csv, .json and .toml files can be bound")
    try:
        return float(cell)
    except (TypeError, ValueError):
        raise BindingError(f"{target}: the value there is {cell!r}, not a number") from None


def _walk(node, key_path: str, target: str):
    for step in key_path.split("/"):
        if isinstance(node, list):
            if step.lstrip("-").isdigit():
                node = node[int(step)]
                continue
            want = dict(part.partition(":")[::2] for part in step.split(";"))
            found = [x for x in node if isinstance(x, dict) and all(str(x.get(k)) == v for k, v in want.items())]
            if len(found) != 1:
                raise BindingError(f"{target}: {len(found)} list elements have {want} (exactly one must)")
            node = found[0]
        elif isinstance(node, dict) and step in node:
            node = node[step]
        else:
            raise BindingError(f"{target}: no key {step!r}")
    return node


# ---------------------------------------------------------------------------------------------- comparing


def style(written: str) -> tuple[bool, bool, int]:
    """How a number is written: (with a sign, as a percentage, its decimals)."""
    body = written.lstrip("+-\u2212").replace(",", "")
    return written[:1] in "+-\u2212", body.endswith("%"), len(body.rstrip("%").partition(".")[2])


def renderings(value: float, written: str) -> set[str]:
    """The texts `value` may be written as at the precision and in the style of `written` (no sign, no commas)."""
    signed, percent, decimals = style(written)
    out = set()
    for v in ([value, 100 * value] if percent else [value]):
        v = v if signed else abs(v)
        out.add(f"{v:.{decimals}f}")
        try:
            out.add(str(Decimal(repr(v)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)))
        except InvalidOperation:
            pass
    return {o.replace("-0.", "0.") if set(o) <= set("-0.") else o for o in out}


def normal(written: str) -> str:
    """The written number as the text renderings() compares with: sign kept as '-', no commas, no '%', no '+'."""
    text = written.replace("\u2212", "-").replace(",", "").rstrip("%")
    return text[1:] if text.startswith("+") else text


def matches(value: float, written: str) -> bool:
    if written.startswith("<"):  # a bound, as a p-value too small for its digits is written: "<0.0001"
        return 0 <= value < float(normal(written[1:]))
    return normal(written) in renderings(value, written)


def render(value: float, written: str) -> str:
    """`value` written in the style of `written` (sign, commas, percent, precision): for rebind."""
    if written.startswith("<"):
        smallest = f"{10 ** -style(written[1:])[2]:.{style(written[1:])[2]}f}"
        return "<" + smallest if 0 <= value < float(smallest) else render(value, written[1:])
    signed, percent, decimals = style(written)
    v = 100 * value if percent and abs(value) <= 1 else value
    sign = ""
    if signed:
        sign = "+" if v >= 0 else ("\u2212" if written[0] == "\u2212" else "-")
    text = f"{abs(v):,.{decimals}f}" if "," in written else f"{abs(v):.{decimals}f}"
    return sign + text + ("%" if percent else "")


# ---------------------------------------------------------------------------------------------- a README


@dataclass
class Bound:
    readme: Path
    line: int
    written: str
    target: str
    start: int
    end: int


def definitions(text: str) -> dict[str, str]:
    """Reference label -> link target, for every `[label]: <target>` line of a README."""
    return {m.group(1): unescape(m.group(2) if m.group(2) is not None else m.group(3))
            for m in DEFINITION.finditer(text)}


def unescape(target: str) -> str:
    return re.sub(r"\\(.)", r"\1", target)


def escape(target: str) -> str:
    """A link destination in angle brackets: `<` and `>` (as in 'BM25 >> pointwise') escaped with a backslash."""
    return re.sub(r"([<>\\])", r"\\\1", target)


def bound_numbers(readme: Path, text: str | None = None) -> list[Bound]:
    text = readme.read_text(encoding="utf-8") if text is None else text
    defs = definitions(text)
    out = []
    for m in REF.finditer(text):
        if m.group(2) in defs:
            out.append(Bound(readme, text.count("\n", 0, m.start()) + 1, m.group(1), defs[m.group(2)], *m.span(1)))
    for m in INLINE.finditer(text):
        target = unescape(m.group(2) if m.group(2) is not None else m.group(3))
        out.append(Bound(readme, text.count("\n", 0, m.start()) + 1, m.group(1), target, *m.span(1)))
    return out


def plain_numbers(body: str, defs: dict[str, str] | None = None):
    """The WRITTEN matches of a block's body that are not bound: links, definitions and code spans blanked (same
    length, so offsets hold), a range's dash too. With ``defs``, a reference whose label has no definition is kept
    (its number counts as unbound); without, every reference is blanked (bind leaves them alone)."""
    def blank(m: re.Match) -> str:
        return " " * len(m.group(0))

    body = DEFINITION.sub(blank, body)
    body = REF.sub(lambda m: m.group(0) if defs is not None and m.group(2) not in defs else blank(m), body)
    body = INLINE.sub(blank, body)
    def blank_code(m: re.Match) -> str:  # a measured value in a code span stays (its backticks blanked): unbound
        return " " + m.group(0)[1:-1] + " " if MEASURED_IN_CODE.fullmatch(m.group(0)) else blank(m)

    return WRITTEN.finditer(CODE.sub(blank_code, RANGE_DASH.sub(" ", body)))


def unbound_in_blocks(readme: Path, text: str) -> list[tuple[int, str]]:
    """Numbers written in a block that are not bound: (line, number)."""
    defs = definitions(text)
    return [(text.count("\n", 0, block.start(2) + t.start()) + 1, t.group(0))
            for block in BLOCK.finditer(text) for t in plain_numbers(block.group(2), defs)]


def shown_path(readme: Path) -> Path:
    return readme.relative_to(ROOT) if readme.is_relative_to(ROOT) else readme


BEHIND = re.compile(r"\b(?:behind|trails?|trailing|below)\b[^.;:\n\[]{0,60}?\bby\s*$", re.I)
AHEAD = re.compile(r"\b(?:ahead|leads?|leading|above)\b[^.;:\n\[]{0,60}?\bby\s*$", re.I)


def side(before: str) -> str:
    """Which sign the words just before an unsigned number give it: "-" (behind by), "+" (ahead by) or ""."""
    if BEHIND.search(before):
        return "-"
    if AHEAD.search(before):
        return "+"
    return ""


def wrong_sign(v: float, b: Bound, text: str) -> str | None:
    """Why an unsigned number's cell has the wrong sign for what the text says (see the module doc), or None."""
    if style(b.written.lstrip("<"))[0] or b.written.startswith("<"):
        return None
    decimals = style(b.written)[2]
    rounded = round(v, decimals + (2 if b.written.endswith("%") else 0))
    line_start = text.rfind("\n", 0, b.start) + 1
    wanted = side(text[line_start:b.start - 1])
    if wanted == "-" and rounded > 0:
        return f"the text says it is behind by {b.written}, but the cell holds {v!r} (> 0): bind the delta of the " \
               "side that is behind (or write the number with its sign)"
    if wanted != "-" and rounded < 0:
        said = "ahead by" if wanted == "+" else "it without a sign"
        return f"the text says {said}, but the cell holds {v!r} (< 0): bind the delta in the other direction " \
               "(the side that is ahead minus the other), or write the number with its sign"
    return None


CLAUSE_END = re.compile(r"[.;:!?](?=\s)|\n\n")


def clause(text: str, start: int, end: int) -> str:
    """The sentence or clause (between '.', ';', ':' followed by a space, or a blank line) holding text[start:end]."""
    before = [m.end() for m in CLAUSE_END.finditer(text, 0, start)]
    after = CLAUSE_END.search(text, end)
    return text[before[-1] if before else 0: after.start() if after else len(text)]


def ambiguous_selectors(b: Bound, text: str) -> list[str]:
    """Identity: where a JSON/TOML place picks a list element by ``field:value`` and ANOTHER element of that list
    holds the same number at the same path (PISA BM25 and Terrier RM3 both 0.573), the value cannot tell them apart:
    the number's sentence or clause must then name each selector value of the element bound (case-insensitively).
    Returns those it does not name."""
    path, _, fragment = b.target.partition("#")
    if not path.endswith((".json", ".toml")) or not text:
        return []
    pairs = parse_fragment(fragment)
    if len(pairs) != 1 or pairs[0][0] != "key":
        return []
    steps = pairs[0][1].split("/")
    tree = read_tree((b.readme.parent / path).resolve())
    line = clause(text, b.start, b.end).lower()
    node, missing = tree, []
    for i, step in enumerate(steps):
        if isinstance(node, list) and not step.lstrip("-").isdigit() and ":" in step:
            want = dict(part.partition(":")[::2] for part in step.split(";"))
            for other in node:
                if not isinstance(other, dict) or all(str(other.get(k)) == v for k, v in want.items()):
                    continue
                try:
                    value = float(_walk(other, "/".join(steps[i + 1:]), b.target)) if steps[i + 1:] else None
                except (BindingError, TypeError, ValueError, IndexError, KeyError):
                    continue
                if value is not None and matches(value, b.written):  # a word-like value only: a name the prose
                    missing += [f"{k}:{v}" for k, v in want.items()  # may word otherwise is not held to it
                                if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", v) and v.lower() not in line]
                    break
        try:
            node = _walk(node, step, b.target)
        except (BindingError, IndexError, KeyError):
            return []
    return sorted(set(missing))


def mismatch(b: Bound, text: str = "") -> str | None:
    """Why the bound number `b` is wrong (a message naming the place and the file's current value), or None;
    ``text`` (the README's) for the sign and identity checks."""
    rel = shown_path(b.readme)
    try:
        v = value_at(b.target, b.readme.parent)
    except BindingError as e:
        return f"{rel}:{b.line}: {b.written} is bound to a place that cannot be read: {e}"
    if not matches(v, b.written):
        return (f"{rel}:{b.line}: {b.written} but the file holds {render(v, b.written)} ({v!r}) at {b.target}"
                f" (python scripts/readme_numbers.py rebind {rel} writes the file's value)")
    sign = wrong_sign(v, b, text) if text else None
    if sign:
        return f"{rel}:{b.line}: {b.written} at {b.target}: {sign}"
    unnamed = ambiguous_selectors(b, text)
    if unnamed:
        return (f"{rel}:{b.line}: {b.written} is bound to {b.target}, but another element of that list holds the same "
                f"number and its sentence does not name {', '.join(unnamed)}: bind the element the sentence names")
    return None


def bound_twice(bounds: list[Bound]) -> list[str]:
    """The same number twice on one line bound to one place (see the module doc)."""
    seen: dict[tuple[int, str, str], Bound] = {}
    out = []
    for b in bounds:
        first = seen.setdefault((b.line, b.target, b.written), b)
        if first is not b:
            out.append(f"{shown_path(b.readme)}:{b.line}: {first.written} and {b.written} are bound to one place "
                       f"{b.target}: each number of a line states its own value; bind each to its own cell")
    return out


def problems(readme: Path, text: str | None = None) -> list[str]:
    """Each bound number that differs from its place (or whose place cannot be read), each unbound one in a block."""
    text = readme.read_text(encoding="utf-8") if text is None else text
    rel = shown_path(readme)
    bounds = bound_numbers(readme, text)
    out = [m for b in bounds if (m := mismatch(b, text))] + bound_twice(bounds)
    for line, written in unbound_in_blocks(readme, text):
        out.append(f"{rel}:{line}: {written} is in a numbers block but not bound to a place "
                   f"(python scripts/readme_numbers.py bind {rel} proposes one)")
    return out


def readmes() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "results").glob("**/README.md")), *sorted((ROOT / "docs").glob("*.md"))]


def bind(readme: Path) -> list[str]:
    """Binds every plain number of every block (in place); returns notes on choices and failures
    (scripts/readme_binding.py)."""
    me = sys.modules[__name__]
    sys.modules.setdefault("readme_numbers", me)  # run as a script, this module is __main__: one copy, not two
    if "readme_binding" not in sys.modules:
        spec = importlib.util.spec_from_file_location("readme_binding", Path(__file__).with_name("readme_binding.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules["readme_binding"] = module  # its dataclass looks its module up there
        spec.loader.exec_module(module)
    return sys.modules["readme_binding"].bind(readme)


def rebind(readme: Path) -> list[str]:
    text = readme.read_text(encoding="utf-8")
    notes, edits = [], []
    for b in bound_numbers(readme, text):
        try:
            v = value_at(b.target, readme.parent)
        except BindingError as e:
            notes.append(f"{shown_path(readme)}:{b.line}: {b.written} left as it is: {e}")
            continue
        if not matches(v, b.written):
            new = render(v, b.written)
            edits.append((b.start, b.end, new))
            notes.append(f"{shown_path(readme)}:{b.line}: {b.written} -> {new} ({b.target})")
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    readme.write_text(text, encoding="utf-8")
    return notes


def unbind(readme: Path) -> list[str]:
    """Back to plain numbers inside the blocks (links and their definitions removed), for `bind` to start afresh."""
    text = readme.read_text(encoding="utf-8")
    defs = definitions(text)
    count = 0

    def plain(block: re.Match) -> str:
        nonlocal count
        body = DEFINITION.sub("", block.group(2))
        body, n = REF.subn(lambda m: m.group(1) if m.group(2) in defs else m.group(0), body)
        body, k = INLINE.subn(lambda m: m.group(1), body)
        count += n + k
        body = re.sub(r"\n{3,}", "\n\n", body).rstrip("\n") + "\n"
        return block.group(0).replace(block.group(2), body) if block.group(2) else block.group(0)

    readme.write_text(BLOCK.sub(plain, text), encoding="utf-8")
    return [f"{shown_path(readme)}: {count} numbers unbound"]


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("check", "bind", "rebind", "unbind"):
        print(__doc__)
        return 2
    files = [Path(a).resolve() for a in argv[1:]] or readmes()
    notes = []
    for f in files:
        notes += {"check": problems, "bind": bind, "rebind": rebind, "unbind": unbind}[argv[0]](f)
    print("\n".join(notes) if notes else f"{argv[0]}: nothing to report ({len(files)} files)")
    return 1 if notes and argv[0] == "check" else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
