"""Query text cleaning shared by both engines: one pure function, no engine imports.

Product queries carry characters that Terrier's query language reads as operators: ``+``/``-`` (required/excluded
terms), ``"`` (phrases), ``^`` (weights), ``:`` (fields, ``applypipeline:off``), ``~`` (proximity), brackets, and
``'``/``/``/``&`` that its parser rejects. Neither engine indexes punctuation (both tokenise on non-alphanumerics), so
replacing every non-alphanumeric character by a space loses no matchable term and leaves nothing for a parser to
misread. PISA gets the same text, so both engines see the same words.
"""

from __future__ import annotations

import re
import unicodedata

# Anything that is not a letter or a digit of any script (``\w`` minus the underscore) becomes a space.
_NOT_WORD = re.compile(r"[\W_]+", flags=re.UNICODE)


def sanitise_query(text: object) -> str:
    """Return ``text`` with every run of non-alphanumeric characters replaced by one space, stripped.

    ``None`` and NaN give ``""``; a query that is only punctuation gives ``""`` too, which the caller counts as an
    empty query (it has no terms to match). Letter case is kept: both engines lower-case in their own pipelines.
    """
    if text is None or (isinstance(text, float) and text != text):
        return ""
    normalised = unicodedata.normalize("NFKC", str(text))
    return _NOT_WORD.sub(" ", normalised).strip()
