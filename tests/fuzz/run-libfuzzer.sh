#!/usr/bin/env bash
# Builds the reader fuzz target with clang's libFuzzer (+ASan/UBSan) and runs it on the corpus
# for FUZZ_SECONDS (default 60). New interesting inputs land in tests/fuzz/corpus/.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v clang >/dev/null || { echo "run-libfuzzer.sh: clang not found (apt-get install clang)" >&2; exit 1; }
mkdir -p build-fuzz
# the sources of the weftread library (CMakeLists.txt), but the plots (cairo) and the OTF2 export (libotf2)
srcs=$(ls src/format/*.c src/analysis/*.c src/export/*.c | grep -v -e '/plot' -e '/otf2')
clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Isrc -Iinclude \
  tests/fuzz/fuzz_reader.c $srcs src/collect/perf_sample.c src/collect/counters-table.c \
  -lzstd -lelf -ldeflate -lsqlite3 -lstdc++ -lpthread -lm -o build-fuzz/fuzz_reader
# new inputs go to FUZZ_NEW (default: the corpus itself)
build-fuzz/fuzz_reader -max_total_time="${FUZZ_SECONDS:-60}" -max_len=65536 ${FUZZ_NEW:-} tests/fuzz/corpus
