#!/usr/bin/env bash
# Installs the build tree into a temporary prefix and uses it from outside the source tree,
# as a user would: pkg-config (shared and --static) and find_package(weft) (weft::weft and
# weft::weft_static) for a C and a C++ program, add_subdirectory(weft), the versioned SONAME,
# and the installed `weft record`, which must find its preload library relative to itself.
# usage: test_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd); src=$(cd "$2" && pwd)
tmp=$(mktemp -d /tmp/weft-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(ls -d "$prefix"/lib*/pkgconfig | head -1); libdir=${libdir%/pkgconfig}

# the versioned SONAME
[ -L "$libdir/libweft.so" ] || fail "libweft.so is not a link to the versioned library"
soname=$(readelf -d "$libdir/libweft.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = libweft.so.0 ] || fail "SONAME is '$soname', not libweft.so.0"
[ -e "$libdir/libweft.so.0" ] && [ -e "$libdir/libweft.a" ] || fail "libweft.so.0 or libweft.a missing"
[ -e "$prefix/share/doc/weft/LICENSE" ] || fail "LICENSE not installed"

# each program is run in its own directory and must leave a trace the installed weft reads
check_app() { # check_app NAME EXE [ENV...]
  local d=$tmp/run-$1; mkdir -p "$d"
  (cd "$d" && env "${@:3}" "$2" > out.txt) || fail "$1 exited $?"
  [ "$(cat "$d/out.txt")" = 90 ] || fail "$1 printed '$(cat "$d/out.txt")'"
  local info; info=$("$prefix/bin/weft" info "$d/weft.data") || fail "$1: weft info failed"
  grep -q '^events: *50$' <<<"$info" || fail "$1: expected 50 events, weft info says: $(grep events: <<<"$info")"
  echo "ok: $1"
}

# pkg-config, shared and static
export PKG_CONFIG_PATH=$libdir/pkgconfig
cd "$tmp"
cc -o c_pc_shared "$src/tests/install/app.c" $(pkg-config --cflags --libs weft) -Wl,-rpath,"$libdir"
c++ -o cxx_pc_shared "$src/tests/install/app.cpp" $(pkg-config --cflags --libs weft) -Wl,-rpath,"$libdir"
# linked against the installed library by its SONAME (read from the file, not from a loader run)
readelf -d c_pc_shared | grep -q 'NEEDED.*\[libweft\.so\.0\]' || fail "c_pc_shared does not need libweft.so.0"
readelf -d c_pc_shared | grep -q "R.*PATH.*\[$libdir\]" || fail "c_pc_shared has no run path to $libdir"
static_libs=$(pkg-config --static --libs weft | sed 's/-lweft//')
cc -o c_pc_static "$src/tests/install/app.c" $(pkg-config --cflags weft) "$libdir/libweft.a" $static_libs
c++ -o cxx_pc_static "$src/tests/install/app.cpp" $(pkg-config --cflags weft) -Wl,-Bstatic -lweft -Wl,-Bdynamic -L"$libdir" $static_libs
if ldd c_pc_static | grep -q libweft; then fail "c_pc_static links libweft dynamically"; fi
for a in c_pc_shared cxx_pc_shared c_pc_static cxx_pc_static; do check_app "$a" "$tmp/$a"; done

# find_package(weft)
cmake -S "$src/tests/install" -B "$tmp/cm" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/cm" -j2 -- --no-print-directory >/dev/null || fail "find_package build failed"
for a in app_c_shared app_cxx_shared app_c_static app_cxx_static; do check_app "cmake-$a" "$tmp/cm/$a"; done

# add_subdirectory(weft) from an outer project
cmake -S "$src/tests/install" -B "$tmp/sub" -DWEFT_SUBDIR="$src" >/dev/null || fail "add_subdirectory configure failed"
cmake --build "$tmp/sub" -j2 --target app_c_shared app_cxx_static -- --no-print-directory >/dev/null \
  || fail "add_subdirectory build failed"
check_app sub-app_c_shared "$tmp/sub/app_c_shared"
check_app sub-app_cxx_static "$tmp/sub/app_cxx_static"

# the installed CLI, moved away from the build tree: record finds its preload library
mkdir -p "$tmp/rec" && cd "$tmp/rec"
"$prefix/bin/weft" record -q -o rec.data -- /bin/true || fail "installed weft record failed"
[ -e rec.data/trace.pftrace ] || fail "installed weft record wrote no trace.pftrace"
grep -q "$libdir/weft/libweft-preload.so" < <(LD_PRELOAD= "$prefix/bin/weft" record -q --no-convert -o r2.data -- sh -c 'cat /proc/$$/maps') \
  || fail "the recorded program did not map the installed libweft-preload.so"
grep -q "$libdir/weft/libweft-mpi.so" < <(LD_PRELOAD= "$prefix/bin/weft" record -q --no-convert -o r3.data -- sh -c 'cat /proc/$$/maps') \
  || fail "the recorded program did not map the installed libweft-mpi.so (the MPI wrappers)"
echo "install: all checks passed"
