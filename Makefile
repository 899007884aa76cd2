# weft - top-level entry points. The build itself is CMake; these targets are the commands
# README.md documents.
BUILD ?= build
JOBS ?= 2
CMAKE_FLAGS ?=

.PHONY: all build demo test test-asan test-tsan bench fuzz clean deps

all: build

build:
	@scripts/deps.sh build
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

demo: build
	@rm -rf demo.data
	WEFT_OPTIONS="output=demo.data" $(BUILD)/pipeline
	$(BUILD)/weft info demo.data | head -12
	$(BUILD)/weft convert demo.data -o demo.pftrace
	@echo
	@echo "Open demo.pftrace: drag it onto https://ui.perfetto.dev (or 'Open trace file' there)."

test: build
	@scripts/deps.sh test
	@tests/tp/fetch.sh
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The same tests on sanitizer builds (CI runs both). weft record preloads an instrumented
# library into instrumented programs, so ASan must not insist on coming first, and must let
# the program's own (weft's) fatal-signal handling run, which the crash tests check.
test-asan:
	@ASAN_OPTIONS="verify_asan_link_order=0:handle_segv=0:handle_abort=0:$$ASAN_OPTIONS" \
	  $(MAKE) --no-print-directory test BUILD=build-asan \
	  CMAKE_FLAGS="-DWEFT_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug"
# TSan cannot follow threads created in a forked child, nor host an instrumented library
# preloaded into an instrumented program: the fork step of the features test and the
# weft record tests are covered by the plain and ASan runs and skipped here.
test-tsan:
	@WEFT_TEST_NO_FORK=1 WEFT_TEST_NO_PRELOAD=1 $(MAKE) --no-print-directory test BUILD=build-tsan \
	  CMAKE_FLAGS="-DWEFT_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug"

bench: build
	@scripts/deps.sh bench
	@bench/run.sh $(BUILD)

fuzz:
	@bash tests/fuzz/run-libfuzzer.sh

clean:
	rm -rf build build-asan build-tsan build-fuzz demo.data demo.data.old demo.pftrace
