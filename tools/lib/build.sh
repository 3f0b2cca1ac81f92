# Shared by tools/run, tools/test, tools/soak, tools/bench: configure and build one build directory.
# Usage (sourced):
#   arun_build release|asan [T...]  everything (the command, tests, tools, man pages, completions),
#                                   or only the targets T
#   arun_build_command release      only the arun command (tools/run: a first run builds little)
# Output goes to stderr.
ARUN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# ccache shares objects between checkouts and build dirs (TOOLCHAIN.md §10).
export CCACHE_BASEDIR="$ARUN_ROOT"
export CCACHE_NOHASHDIR=1

arun_install_deps() {
  "$ARUN_ROOT/tools/install-deps" "$@" >&2
}

# arun_configure KIND ON|OFF: configures build/KIND with the tests and tools on or off,
# running cmake again only when the directory is new or was configured the other way.
arun_configure() {
  local kind=$1 everything=$2 dir="$ARUN_ROOT/build/$1"
  local -a config
  local unity
  case "$kind" in
    release) config=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++) unity=ON ;;
    # clang builds ASan+UBSan faster than g++ (DESIGN.md §2). Each file is compiled alone there,
    # so every test run also checks that a file includes what it uses, which the release
    # tree's unity build cannot see (docs/building.md, "Build details").
    asan) config=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++-14 -DARUN_SANITIZE=ON
                  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g") unity=OFF ;;
    *) echo "arun_build: unknown build kind '$kind'" >&2; return 2 ;;
  esac
  # tools/install-deps unpacked valijson's headers there (docs/building.md, "valijson").
  local valijson
  valijson="$("$ARUN_ROOT/tools/install-deps" --valijson-dir)/include"
  if [[ -f "$dir/build.ninja" ]] && grep -qxF "ARUN_BUILD_TESTS:BOOL=$everything" "$dir/CMakeCache.txt" &&
     grep -qxF "ARUN_UNITY:BOOL=$unity" "$dir/CMakeCache.txt" &&
     grep -qxF "VALIJSON_INCLUDE_DIR:PATH=$valijson" "$dir/CMakeCache.txt"; then
    return 0
  fi
  config+=(-DVALIJSON_INCLUDE_DIR="$valijson")
  cmake -S "$ARUN_ROOT" -B "$dir" -G Ninja "${config[@]}" -DARUN_UNITY="$unity" \
    -DARUN_BUILD_TESTS="$everything" -DARUN_BUILD_TOOLS="$everything" >&2
}

# arun_build KIND [TARGET...]: configures build/KIND with everything and builds it, or only
# the targets named.
arun_build() {
  local kind=$1
  shift
  arun_configure "$kind" ON || return 1
  cmake --build "$ARUN_ROOT/build/$kind" ${1:+--target "$@"} >&2
}

# A directory configured with everything builds only the command too; a new one is configured
# without tests and tools, so it needs only the build packages (tools/install-deps --build).
arun_build_command() {
  if [[ ! -f "$ARUN_ROOT/build/$1/build.ninja" ]]; then
    arun_configure "$1" OFF || return 1
  fi
  cmake --build "$ARUN_ROOT/build/$1" --target arun >&2
}
