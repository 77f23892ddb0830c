"""superb's exit codes (superb.llm.exit_code turns a finished command's failed LLM requests into one).

0 done; 2 an error stopped the command (bad spec, missing data, an endpoint that refuses every call); 3
(EXIT_LLM_FAILURES) the command finished and wrote its results, but more LLM requests failed than
``llm.max_failure_share`` allows (default 0: any failure), so some scores or labels are counted fallbacks; 130
interrupted (Ctrl-C). `superb run`, `superb merge` and `superb judge` end with superb.llm.exit_code.llm_exit_code.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_ERROR = 2
EXIT_LLM_FAILURES = 3
EXIT_INTERRUPTED = 130
