#!/usr/bin/env bash
# Build the ns-3 reference dumbbell (bench/ns3/dumbbell.cc) against the
# headers and shared libraries shipped inside the PyPI "ns3" 3.44 wheel.
#
#   bench/ns3/build.sh          # build if needed (idempotent)
#   bench/ns3/build.sh --force  # rebuild
#
# Where ns-3 comes from (first match wins):
#   1. $NS3_ROOT: a directory with include/ns3/core-module.h and lib64/ (or lib/)
#   2. an already pip-installed ns3 3.44.* distribution (found without
#      importing it, so its cppyy dependency is not needed)
#   3. otherwise: pip-installs the wheel privately, WITHOUT dependencies, into
#      bench/ns3/build/ns3-wheel (python3 -m pip install --no-deps --target ...).
#      Only the C++ headers/.so files are used; the Python bindings (which
#      would pull in cppyy) are not.
# Output: bench/ns3/build/dumbbell, with an RPATH to the wheel's lib dir.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD="$HERE/build"
SRC="$HERE/dumbbell.cc"
OUT="$BUILD/dumbbell"
NS3_PIP_SPEC="${NS3_PIP_SPEC:-ns3==3.44.post0}"   # PyPI has no plain "3.44"; 3.44.post0 is the 3.44 release
PY="${PYTHON:-python3}"
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1

log() { echo "[ns3/build] $*" >&2; }

apt_install() {
    log "installing system package(s): $*"
    if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >&2
}

have_ns3_root() { [[ -f "$1/include/ns3/core-module.h" ]] && { [[ -d "$1/lib64" ]] || [[ -d "$1/lib" ]]; }; }

# ---------------------------------------------------------------- toolchain
command -v g++ >/dev/null 2>&1 || apt_install g++
if ! "$PY" -m pip --version >/dev/null 2>&1; then
    apt_install python3-pip
fi

# ---------------------------------------------------------------- locate ns-3
find_installed_ns3() {
    "$PY" - <<'EOF' 2>/dev/null || true
import importlib.metadata as md, os
try:
    d = md.distribution("ns3")
except md.PackageNotFoundError:
    raise SystemExit(0)
if not d.version.startswith("3.44"):
    raise SystemExit(0)
root = str(d.locate_file("ns3"))
if os.path.isfile(os.path.join(root, "include", "ns3", "core-module.h")):
    print(root)
EOF
}

NS3_DIR=""
if [[ -n "${NS3_ROOT:-}" ]]; then
    have_ns3_root "$NS3_ROOT" || { log "NS3_ROOT=$NS3_ROOT has no include/ns3/core-module.h + lib64/"; exit 1; }
    NS3_DIR="$NS3_ROOT"
elif have_ns3_root "$BUILD/ns3-wheel/ns3"; then
    NS3_DIR="$BUILD/ns3-wheel/ns3"
else
    NS3_DIR="$(find_installed_ns3)"
    if [[ -z "$NS3_DIR" ]]; then
        log "ns-3 3.44 not found; pip-installing $NS3_PIP_SPEC (no deps) into $BUILD/ns3-wheel"
        mkdir -p "$BUILD"
        rm -rf "$BUILD/ns3-wheel.tmp"
        "$PY" -m pip install --quiet --disable-pip-version-check --no-deps \
            --target "$BUILD/ns3-wheel.tmp" "$NS3_PIP_SPEC" >&2
        rm -rf "$BUILD/ns3-wheel"
        mv "$BUILD/ns3-wheel.tmp" "$BUILD/ns3-wheel"
        NS3_DIR="$BUILD/ns3-wheel/ns3"
        have_ns3_root "$NS3_DIR" || { log "wheel installed but no headers/libs under $NS3_DIR"; exit 1; }
    fi
fi
NS3_DIR="$(cd "$NS3_DIR" && pwd)"
INC="$NS3_DIR/include"
if [[ -d "$NS3_DIR/lib64" ]]; then LIB="$NS3_DIR/lib64"; else LIB="$NS3_DIR/lib"; fi
[[ -f "$LIB/libns3.44-core.so" ]] || { log "no libns3.44-core.so in $LIB"; exit 1; }

# ---------------------------------------------------------------- compile
# The wheel's libraries are a release build with logging/asserts compiled in;
# use the same preprocessor definitions as its CMake export (ns3Targets.cmake).
CXX="${CXX:-g++}"
CXXFLAGS=(-std=c++20 -O2 -DNDEBUG -DNS3_BUILD_PROFILE_RELEASE -DNS3_LOG_ENABLE -DNS3_ASSERT_ENABLE
          -D__LINUX__ -I"$INC" -w)
LIBS=(-L"$LIB" -lns3.44-applications -lns3.44-internet -lns3.44-traffic-control
      -lns3.44-point-to-point -lns3.44-network -lns3.44-stats -lns3.44-core -lpthread)
LDFLAGS=(-Wl,-rpath,"$LIB" -Wl,--disable-new-dtags)

STAMP="$BUILD/dumbbell.stamp"
SIG="$(printf '%s\n' "$CXX" "${CXXFLAGS[*]}" "${LIBS[*]}" "${LDFLAGS[*]}" | sha256sum | cut -d' ' -f1)"
if [[ $FORCE -eq 0 && -x "$OUT" && -f "$STAMP" && "$OUT" -nt "$SRC" && "$OUT" -nt "${BASH_SOURCE[0]}" \
      && "$(cat "$STAMP")" == "$SIG" ]]; then
    log "up to date: $OUT"
    exit 0
fi

mkdir -p "$BUILD"
log "compiling $SRC (ns-3 at $NS3_DIR)"
"$CXX" "${CXXFLAGS[@]}" "$SRC" -o "$OUT.tmp" "${LIBS[@]}" "${LDFLAGS[@]}"
mv "$OUT.tmp" "$OUT"
echo "$SIG" > "$STAMP"
log "built $OUT"
