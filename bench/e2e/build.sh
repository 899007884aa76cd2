#!/bin/bash
# Build the end-to-end programs with -finstrument-functions -O2 -g, out of the repo,
# into $WEFT_E2E_CACHE (default /var/cache/weft-e2e): bin/lua, bin/zstd, bin/db_bench,
# and the zstd input data/input.bin (~100 MB, generated, compressible). Runs fetch.sh first.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
CACHE=${WEFT_E2E_CACHE:-/var/cache/weft-e2e}
SRC=${WEFT_E2E_SRC:-$CACHE/src}
export WEFT_E2E_CACHE=$CACHE WEFT_E2E_SRC=$SRC
"$here/fetch.sh" >/dev/null
FLAGS="-O2 -g -finstrument-functions"
J=${JOBS:-2}
mkdir -p "$CACHE/bin" "$CACHE/data" "$CACHE/build"

if [ ! -x "$CACHE/bin/lua" ]; then
    d=$(ls -d "$SRC"/lua5.4-*/ | head -1)
    # Debian's patches turn src/Makefile into a libtool one: compile the interpreter directly
    # (every src/*.c but the luac compiler), as upstream's "make linux" does.
    # (its luaconf.h also wants the header its packaging generates)
    rm -rf "$CACHE/build/lua" && mkdir -p "$CACHE/build/lua"
    echo "#define DEB_HOST_MULTIARCH \"$(gcc -dumpmachine)\"" > "$CACHE/build/lua/lua5.4-deb-multiarch.h"
    for c in "$d"/src/*.c; do
        [ "$(basename "$c")" = luac.c ] && continue
        cc $FLAGS -std=gnu99 -DLUA_COMPAT_5_3 -DLUA_USE_LINUX -I"$CACHE/build/lua" \
            -c "$c" -o "$CACHE/build/lua/$(basename "$c" .c).o" &
        [ "$(jobs -p | wc -l)" -lt "$J" ] || wait -n 2>/dev/null || wait
    done
    wait
    cc -o "$CACHE/bin/lua" "$CACHE"/build/lua/*.o -Wl,-E -lm -ldl
fi

if [ ! -x "$CACHE/bin/zstd" ]; then
    d=$(ls -d "$SRC"/libzstd-*/ | head -1)
    rm -rf "$CACHE/build/zstd" && cp -r "$d" "$CACHE/build/zstd"
    make -C "$CACHE/build/zstd/programs" -j"$J" zstd CFLAGS="$FLAGS" >/dev/null
    cp "$CACHE/build/zstd/programs/zstd" "$CACHE/bin/zstd"
fi

if [ ! -x "$CACHE/bin/db_bench" ]; then
    d=$(ls -d "$SRC"/leveldb-*/ | head -1)
    cmake -S "$d" -B "$CACHE/build/leveldb" -DCMAKE_BUILD_TYPE=None \
        -DCMAKE_C_FLAGS="$FLAGS" -DCMAKE_CXX_FLAGS="$FLAGS" -DBUILD_SHARED_LIBS=OFF \
        -DLEVELDB_BUILD_TESTS=OFF -DLEVELDB_BUILD_BENCHMARKS=ON -DLEVELDB_INSTALL=OFF >/dev/null
    cmake --build "$CACHE/build/leveldb" -j"$J" --target db_bench >/dev/null
    cp "$CACHE/build/leveldb/db_bench" "$CACHE/bin/db_bench"
fi

# zstd input: ~100 MB of text-like data (words from a fixed pseudo-random sequence),
# compressible about 3-4x, the same bytes on every machine.
if [ ! -s "$CACHE/data/input.bin" ]; then
    /usr/bin/python3 "$here/gen_input.py" "$CACHE/data/input.bin" 100
fi
if [ ! -s "$CACHE/data/input.bin.zst" ]; then
    "$CACHE/bin/zstd" -q -T2 -f "$CACHE/data/input.bin" -o "$CACHE/data/input.bin.zst"
fi
ls -l "$CACHE/bin" "$CACHE/data"
