#!/usr/bin/env bash
# pristine-check.sh - proves README's two commands on a pristine Debian 12: a bookworm minbase
# root (debootstrap) with only build-essential, cmake and git added, the committed tree copied
# in (git archive HEAD; ../shared beside it when present), then `make demo` (must leave a
# non-empty demo.pftrace, and README's Python commands must then work) and `make test`, run as
# root inside it (deps.sh installs the rest with apt-get, as on a user's machine). The root is
# built once and cached as a tarball ($WEFT_PRISTINE_CACHE, default
# /var/cache/weft/bookworm-minbase.tar); each run unpacks a fresh copy and deletes it afterwards.
# Needs root (debootstrap, chroot, mounts). Exit 0 only if both commands pass.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cache=${WEFT_PRISTINE_CACHE:-/var/cache/weft/bookworm-minbase.tar}
mirror=${WEFT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
[ "$(id -u)" = 0 ] || { echo "pristine-check: needs root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
t0=$(date +%s)
if [ ! -s "$cache" ]; then
  echo "pristine-check: building the cached root $cache (debootstrap bookworm minbase)"
  mkdir -p "$(dirname "$cache")"
  b=$(mktemp -d /var/tmp/weft-debootstrap.XXXXXX)
  debootstrap --variant=minbase --include=build-essential,cmake,git,ca-certificates bookworm "$b" "$mirror" \
    > "$b.log" 2>&1 || { tail -20 "$b.log" >&2; rm -rf "$b"; exit 1; }
  tar -C "$b" -cf "$cache.tmp" . && mv "$cache.tmp" "$cache"
  rm -rf "$b" "$b.log"
  echo "pristine-check: root built in $(( $(date +%s) - t0 )) s"
fi
root=$(mktemp -d /var/tmp/weft-pristine.XXXXXX)
cleanup() {
  for m in dev/pts dev sys proc; do umount -l "$root/$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$root"
}
trap cleanup EXIT
tar -C "$root" -xf "$cache"
chmod 755 "$root" # a root directory others can enter (mktemp made it, and the cache's ".", 0700)
cp /etc/resolv.conf "$root/etc/resolv.conf"
# the network's trust, not the project's: where this machine reaches the registries through a
# TLS-inspecting proxy, its local CA certificates go into the root too (Node reads them from
# NODE_EXTRA_CA_CERTS, as on this machine)
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  chroot "$root" update-ca-certificates >/dev/null 2>&1 || true
fi
mkdir -p "$root/work/weft"
git -C "$src" archive HEAD | tar -x -C "$root/work/weft"
[ -d "$src/../shared" ] && cp -r "$src/../shared" "$root/work/shared"
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
t1=$(date +%s)
chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  LANG=C.UTF-8 NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt /bin/bash -c '
    set -e
    cd /work/weft
    echo "pristine-check: make demo"
    make demo
    test -s demo.pftrace || { echo "pristine-check: make demo left no demo.pftrace" >&2; exit 1; }
    echo "pristine-check: the Python commands of README.md after make demo"
    printf "import weft\n@weft.trace\ndef step(n):\n    with weft.scope(\"solve\", n=n):\n        weft.counter(\"queue depth\", n)\nstep(3)\n" > /tmp/app.py
    PYTHONPATH=build/python WEFT_OPTIONS=output=/tmp/py.data python3 /tmp/app.py && build/weft convert /tmp/py.data -o /tmp/py.pftrace
    build/weft record --python -o /tmp/py2.data -- python3 /tmp/app.py
    rm -rf /tmp/app.py /tmp/py.data /tmp/py.pftrace /tmp/py2.data
    echo "pristine-check: make test"
    make test'
echo "pristine-check: make demo and make test passed on a pristine Debian 12 root in $(( $(date +%s) - t1 )) s"
