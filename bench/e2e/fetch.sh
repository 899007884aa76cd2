#!/bin/sh
# Fetch the sources of the end-to-end programs (Lua 5.4, zstd, LevelDB) from Debian
# bookworm with apt-get source, and install uftrace. Needs root (apt).
# WEFT_E2E_CACHE: cache dir (default /var/cache/weft-e2e); WEFT_E2E_SRC: where the
# sources go (default $WEFT_E2E_CACHE/src). Re-running skips what is there.
set -eu
CACHE=${WEFT_E2E_CACHE:-/var/cache/weft-e2e}
SRC=${WEFT_E2E_SRC:-$CACHE/src}
mkdir -p "$CACHE" "$SRC"

list=/etc/apt/sources.list.d/debsrc.sources
if ! grep -qs '^Types: deb-src' $list; then
    cat > $list <<'SRCS'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRCS
    apt-get update -q
fi
command -v uftrace >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q uftrace
need=
for p in dpkg-dev cmake g++ libgtest-dev libgmock-dev libbenchmark-dev; do
    dpkg -s $p >/dev/null 2>&1 || need="$need $p"
done
[ -z "$need" ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -q $need

cd "$SRC"
for pkg in lua5.4 libzstd leveldb; do
    ls -d "$SRC"/$pkg-*/ >/dev/null 2>&1 || ls -d "$SRC"/${pkg#lib}-*/ >/dev/null 2>&1 ||
        apt-get source -q "$pkg"
done
ls -d "$SRC"/*/
