#!/usr/bin/env bash
# make test-gpu: the GPU collector on real hardware (not part of `make test`: CI has no GPU).
#  1. tests/gpu/layout_check.c against the installed CUDA toolkit's CUPTI headers: every
#     offset, size and constant src/collect/cupti_abi.h declares (needs the toolkit only);
#  2. on an NVIDIA GPU: tests/gpu/cuda_app.cu under `weft record --gpu`, checked with
#     trace_processor (tests/gpu/check_real.py), and the launch overhead against untraced.
# Each part that cannot run here says why in one line and is skipped (exit 0).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
out="$build/gpu"
mkdir -p "$out"

cuda=""
for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
  if [ -n "$d" ] && [ -x "$d/bin/nvcc" ]; then cuda=$d; break; fi
done
if [ -z "$cuda" ] && command -v nvcc >/dev/null; then cuda=$(dirname "$(dirname "$(command -v nvcc)")"); fi
if [ -z "$cuda" ]; then
  echo "test-gpu: skipped: no CUDA toolkit (nvcc in CUDA_HOME, /usr/local/cuda or PATH)"
  exit 0
fi
inc=""
for d in "$cuda/include" "$cuda/extras/CUPTI/include" "$cuda"/targets/*/include; do
  if [ -f "$d/cupti_activity.h" ]; then inc=$d; break; fi
done
if [ -z "$inc" ]; then
  echo "test-gpu: skipped: $cuda has no CUPTI headers (cupti_activity.h)"
  exit 0
fi
echo "test-gpu: CUDA toolkit $cuda ($("$cuda/bin/nvcc" --version | tail -1))"

# 1. the ABI layout: each kind's record struct as the installed header documents it
structs=$(/usr/bin/python3 - "$inc/cupti_activity.h" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
out = []
for macro, kind in (("KERNEL_T", "CONCURRENT_KERNEL"), ("MEMCPY_T", "MEMCPY"), ("MEMSET_T", "MEMSET"), ("DEVICE_T", "DEVICE")):
    m = re.search(r"CUPTI_ACTIVITY_KIND_%s\s*=\s*\d+" % kind, t)
    start = t.rfind("*/", 0, m.start())
    start = t.rfind("/**", 0, start)
    refs = re.findall(r"\\ref\s*(?:\*\s*)?(CUpti_Activity\w+)", t[start:m.start()])
    if refs:
        out.append("-D%s=%s" % (macro, refs[-1]))
print(" ".join(out))
PY
)
cc -I"$inc" -I"$src/src" $structs "$src/tests/gpu/layout_check.c" -o "$out/layout_check"
"$out/layout_check"

# 2. the real GPU
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "test-gpu: the GPU part skipped: no NVIDIA GPU here (nvidia-smi lists none)"
  exit 0
fi
nvidia-smi -L
"$cuda/bin/nvcc" -O2 -lineinfo -I"$src/include" "$src/tests/gpu/cuda_app.cu" -o "$out/cuda_app" \
  -L"$build" -lweft -Xlinker -rpath -Xlinker "$build"
bash "$src/tests/tp/fetch.sh" >/dev/null
CUDA_HOME=$cuda /usr/bin/python3 "$src/tests/gpu/check_real.py" "$build" "$out"
