#!/usr/bin/env bash
# Make KenLM available to qe, reproducibly and idempotently:
#   (a) the `kenlm` Python query module, pip-installed into the project's virtualenv;
#   (b) the `lmplz`, `build_binary` and `query` tools, built from the same PyPI source package
#       into <repo>/.tools/kenlm/bin (pip's kenlm only queries models, it cannot estimate them).
# Each part is skipped when it is already there and works, so a second run is a fast no-op.
#
# Usage: scripts/install_kenlm.sh [PYTHON]
#   PYTHON (argument or environment variable): the virtualenv's python, default <repo>/.venv/bin/python.
#   JOBS: parallel compile jobs (default 2). KEEP_BUILD=1 keeps the build directory for debugging.
# Build dependencies (installed by `make install`, as root via apt-get): cmake, a C++ compiler,
#   zlib1g-dev libbz2-dev liblzma-dev libboost-program-options-dev libboost-system-dev
#   libboost-thread-dev libboost-test-dev.
set -euo pipefail

KENLM_VERSION=0.3.0
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${1:-${PYTHON:-$REPO_ROOT/.venv/bin/python}}
TOOLS_DIR=$REPO_ROOT/.tools/kenlm
BIN_DIR=$TOOLS_DIR/bin
JOBS=${JOBS:-2}
TOOLS=(lmplz build_binary query)
APT_DEPS="cmake g++ zlib1g-dev libbz2-dev liblzma-dev libboost-program-options-dev libboost-system-dev \
libboost-thread-dev libboost-test-dev"

START=$SECONDS
log() { printf 'install_kenlm: %s\n' "$*" >&2; }
die() {
    log "ERROR: $*"
    exit 1
}

if [[ ! -x $PYTHON ]] && ! command -v "$PYTHON" >/dev/null 2>&1; then
    die "python '$PYTHON' not found; create the virtualenv first (make install) or pass its python as argument"
fi

# ---------------------------------------------------------------------------------------------------
# (a) the Python module
if "$PYTHON" -c 'import kenlm' >/dev/null 2>&1; then
    log "python module kenlm already importable by $PYTHON: skipping pip install"
else
    log "pip-installing kenlm==$KENLM_VERSION into $PYTHON (compiles C++, ~40 s)"
    step=$SECONDS
    "$PYTHON" -m pip install --quiet "kenlm==$KENLM_VERSION"
    "$PYTHON" -c 'import kenlm' || die "kenlm installed but cannot be imported by $PYTHON"
    log "kenlm python module installed in $((SECONDS - step)) s"
fi

# ---------------------------------------------------------------------------------------------------
# (b) the command-line tools
# Smoke test: estimate a tiny model, binarize it and query it. Proves the binaries exist, load their
# shared libraries and actually work (not just that files are present).
tools_work() (
    for tool in "${TOOLS[@]}"; do
        [[ -x $BIN_DIR/$tool ]] || exit 1
    done
    probe=$(mktemp -d)
    # shellcheck disable=SC2064
    trap "rm -rf '$probe'" EXIT
    printf 'a b c\na b d\nb c a\n' >"$probe/corpus.txt"
    "$BIN_DIR/lmplz" -o 2 -S 32M -T "$probe" --discount_fallback \
        <"$probe/corpus.txt" >"$probe/lm.arpa" 2>/dev/null || exit 1
    "$BIN_DIR/build_binary" "$probe/lm.arpa" "$probe/lm.bin" >/dev/null 2>&1 || exit 1
    echo 'a b c' | "$BIN_DIR/query" "$probe/lm.bin" >/dev/null 2>&1 || exit 1
)

if tools_work; then
    log "lmplz, build_binary and query already built and working in $BIN_DIR: skipping build"
else
    command -v cmake >/dev/null 2>&1 ||
        die "cmake not found. Install the build dependencies first: run 'make install', or as root:
    apt-get install -y --no-install-recommends $APT_DEPS"
    command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 ||
        die "no C++ compiler found (g++). Install it with: apt-get install -y g++"

    mkdir -p "$TOOLS_DIR"
    WORK=$(mktemp -d "$TOOLS_DIR/build.XXXXXX")
    if [[ ${KEEP_BUILD:-0} == 1 ]]; then
        log "keeping build directory $WORK"
    else
        # shellcheck disable=SC2064
        trap "rm -rf '$WORK'" EXIT
    fi

    step=$SECONDS
    log "downloading the kenlm==$KENLM_VERSION source package"
    # --no-binary :none: only makes sure no user config forces another choice; kenlm ships only an sdist.
    # (Not --no-binary :all:, which would also force building pip's build dependencies from source.)
    "$PYTHON" -m pip download --quiet --no-deps --no-binary :none: -d "$WORK/sdist" "kenlm==$KENLM_VERSION"
    SDIST=$WORK/sdist/kenlm-$KENLM_VERSION.tar.gz
    [[ -f $SDIST ]] || die "pip download did not produce $SDIST (got: $(ls "$WORK/sdist"))"
    tar xzf "$SDIST" -C "$WORK"
    SRC=$WORK/kenlm-$KENLM_VERSION
    [[ -f $SRC/CMakeLists.txt ]] || die "unexpected source layout: no $SRC/CMakeLists.txt"

    log "configuring (cmake, Release)"
    cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release >"$WORK/cmake.log" 2>&1 || {
        tail -n 30 "$WORK/cmake.log" >&2
        die "cmake configure failed (missing Boost/zlib/bz2/lzma headers?). Install the build dependencies:
    apt-get install -y --no-install-recommends $APT_DEPS"
    }
    log "compiling lmplz build_binary query with -j$JOBS (~1-2 min)"
    cmake --build "$WORK/build" -j"$JOBS" --target "${TOOLS[@]}" >"$WORK/build.log" 2>&1 || {
        tail -n 40 "$WORK/build.log" >&2
        die "compilation failed (full log: $WORK/build.log; rerun with KEEP_BUILD=1 to keep it)"
    }

    # Install each binary atomically (copy beside, then rename), so a half-copied tool never exists.
    mkdir -p "$BIN_DIR"
    for tool in "${TOOLS[@]}"; do
        built=$WORK/build/bin/$tool
        [[ -x $built ]] || die "build finished but $built is missing"
        install -m 0755 "$built" "$BIN_DIR/.$tool.tmp"
        mv -f "$BIN_DIR/.$tool.tmp" "$BIN_DIR/$tool"
    done
    tools_work || die "built tools in $BIN_DIR do not pass the smoke test"
    log "built lmplz, build_binary, query into $BIN_DIR in $((SECONDS - step)) s"
fi

log "done in $((SECONDS - START)) s (python module: $PYTHON; tools: $BIN_DIR)"
