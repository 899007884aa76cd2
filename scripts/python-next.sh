#!/usr/bin/env bash
# python-next.sh [CTEST-REGEX | --run COMMAND] - builds weft from this tree with Python 3.13
# (Debian 13, trixie) and runs every Python test there (default regex: python; the Python
# module's tests, weft record --python, the decorator module and the PerfFlowAspect shim; then
# the Python tests of test_signals, test_control, test_hosts and test_top), or
# COMMAND (bash, in the tree; the build is /var/tmp/weft-build there: e.g.
# `--run "bench/python/calls_bench.py /var/tmp/weft-build"`). The trixie root is made once
# with debootstrap and kept ($WEFT_NEXT_ROOT, default /var/cache/weft/trixie); the tree is
# bind-mounted into it at its own path (with ../shared beside it and the trace_processor cache,
# read-only), and the build directory lives inside the root, so a second run rebuilds only what
# changed. Every mount is undone on exit, failure or interruption.
# WEFT_NEXT_SUITE and WEFT_NEXT_PYTHON choose another Debian and its default Python (e.g.
# sid and 3.14: then the root is /var/cache/weft/sid).
# Needs root (debootstrap, chroot, mounts). Exit status: ctest's (COMMAND's).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
suite=${WEFT_NEXT_SUITE:-trixie}
pyver=${WEFT_NEXT_PYTHON:-3.13}
root=${WEFT_NEXT_ROOT:-/var/cache/weft/$suite}
mirror=${WEFT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
regex=${1:-python}
run= # --run COMMAND: run COMMAND (bash, in the tree) there after the build instead of the tests
if [ "${1:-}" = --run ]; then
  run=${2:?python-next: --run needs a command}
  regex=python
fi
# (sid's Release file may be past its Valid-Until on a mirror copy: that check is off)
# the build and test packages of scripts/deps.sh that the Python tests need, for the suite's
# python3 (trixie: 3.13); nodejs runs trace_processor (tests/tp)
pkgs="python3 python3-dev python$pyver python$pyver-dev python3-pytest gcc g++ make cmake pkg-config
 libzstd-dev libelf-dev libdeflate-dev libsqlite3-dev libcairo2-dev libcmocka-dev protobuf-compiler
 nodejs ca-certificates"
[ "$(id -u)" = 0 ] || { echo "python-next: needs root (debootstrap, chroot, mounts)" >&2; exit 1; }
command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
t0=$(date +%s)
stamp="$root/.weft-next-ready"
want=$(echo $pkgs | md5sum | cut -c1-12)

mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" || true
  done
  mounted=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM
bind() { # bind SOURCE [ro]: SOURCE at the same path inside the root
  mkdir -p "$root$1"
  mount --bind "$1" "$root$1"
  mounted+=("$root$1")
  [ "${2:-}" = ro ] && mount -o remount,bind,ro "$root$1"
  return 0
}
sysmounts() {
  mount -t proc proc "$root/proc"; mounted+=("$root/proc")
  mount -t sysfs sys "$root/sys"; mounted+=("$root/sys")
  mount --bind /dev "$root/dev"; mounted+=("$root/dev")
  mount --bind /dev/pts "$root/dev/pts"; mounted+=("$root/dev/pts")
}

if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  if [ ! -x "$root/usr/bin/apt-get" ]; then
    echo "python-next: making the $suite root $root (debootstrap minbase)"
    rm -rf --one-file-system "$root.part"
    mkdir -p "$(dirname "$root")"
    debootstrap --variant=minbase "$suite" "$root.part" "$mirror" > "$root.log" 2>&1 ||
      { tail -20 "$root.log" >&2; exit 1; }
    mv "$root.part" "$root"
  fi
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  # the network's trust (a TLS-inspecting proxy's CA), not the project's
  if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  fi
  echo "python-next: installing the build and test packages"
  sysmounts
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    /bin/sh -c "apt-get -o Acquire::Check-Valid-Until=false update -qq && apt-get install -y -qq --no-install-recommends $(echo $pkgs) &&
                update-ca-certificates && apt-get clean" > "$root.log" 2>&1 ||
    { tail -20 "$root.log" >&2; exit 1; }
  cleanup
  echo "$want" > "$stamp"
  echo "python-next: root ready in $(( $(date +%s) - t0 )) s"
fi

# trace_processor (wasm, run by Node inside the root) comes from the host's cache
[ -e "$src/.cache/trace-processor/trace_processor.wasm" ] || "$src/tests/tp/fetch.sh"
t1=$(date +%s)
sysmounts
bind "$src"
[ -d "$src/../shared" ] && bind "$(cd "$src/../shared" && pwd)" ro
cache=$(readlink -f "$src/.cache")
case "$cache/" in "$src"/*) ;; *) bind "$cache" ro ;; esac
status=0
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
  NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt WEFT_SRC="$src" REGEX="$regex" RUN="$run" \
  PYTHONDONTWRITEBYTECODE=1 \
  /bin/bash -c '
    set -e
    b=/var/tmp/weft-build
    python3 --version
    # a build made from another checkout (another path): CMake refuses it, so start afresh
    if [ -f $b/CMakeCache.txt ] && ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$WEFT_SRC" $b/CMakeCache.txt; then
      rm -rf $b
    fi
    cmake -S "$WEFT_SRC" -B $b -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_BUILD_TESTS=ON >/dev/null
    # what the Python tests run: the CLI, the runtime, the Python package, the test extension
    targets="--target weft-cli weft-preload weft-python nativeext"
    [ "$REGEX" = python ] || targets=
    cmake --build $b -j2 $targets -- --no-print-directory >/dev/null
    if [ -n "$RUN" ]; then cd "$WEFT_SRC" && exec bash -c "$RUN"; fi
    st=0
    (cd $b && ctest -R "$REGEX" --output-on-failure -j2) || st=$?
    [ "$REGEX" = python ] || exit $st
    # the Python parts of other integration tests (signals, control, hosts, top)
    export WEFT_BUILD=$b
    for t in "test_signals Signals.test_python_sees_its_own_dispositions Signals.test_python_ctrl_c_raises_keyboard_interrupt Signals.test_multiprocessing_forkserver_pool" \
             "test_control PythonControl" "test_hosts TwoHosts.test_python_flow" "test_top Program.test_python"; do
      set -- $t
      f=$1; shift
      echo "python-next: $f $*"
      out=$(python3 "$WEFT_SRC/tests/integration/$f.py" "$@" 2>&1) || { st=1; echo "$out"; }
      echo "$out" | tail -1
    done
    exit $st' || status=$?
echo "python-next: build and tests on Python $pyver ($suite) in $(( $(date +%s) - t1 )) s (exit $status)"
exit $status
