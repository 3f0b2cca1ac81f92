# Shared by tools/run, tools/test, tools/soak: configure and build one build directory.
# Usage (sourced): arun_build release|asan   -> builds into build/<kind>, output on stderr.
ARUN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# ccache shares objects between checkouts and build dirs (TOOLCHAIN.md §10).
export CCACHE_BASEDIR="$ARUN_ROOT"
export CCACHE_NOHASHDIR=1

arun_install_deps() {
  "$ARUN_ROOT/tools/install-deps" >&2
}

arun_build() {
  local kind=$1 dir="$ARUN_ROOT/build/$1"
  local -a config
  case "$kind" in
    release) config=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++) ;;
    # clang builds ASan+UBSan faster than g++ (DESIGN.md §2).
    asan) config=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++-14 -DARUN_SANITIZE=ON
                  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g") ;;
    *) echo "arun_build: unknown build kind '$kind'" >&2; return 2 ;;
  esac
  if [[ ! -f "$dir/build.ninja" ]]; then
    cmake -S "$ARUN_ROOT" -B "$dir" -G Ninja "${config[@]}" >&2 || return 1
  fi
  cmake --build "$dir" >&2
}
