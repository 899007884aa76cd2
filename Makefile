# weft - top-level entry points. The build itself is CMake; these targets are the commands
# README.md documents.
BUILD ?= build
JOBS ?= 2
# tests at a time: 3 on 2 cores (many wait on launchers, sleeps and child processes): the suite
# in 280 s instead of 350 beside two busy loops; the sanitizer suites, heavier, run 2
TEST_JOBS ?= 3
CMAKE_FLAGS ?=

PREFIX ?= /usr/local
# tests are configured when their packages are there (make test installs them first)
TESTS_ON = $(shell pkg-config --exists cmocka 2>/dev/null && echo ON || echo OFF)
CONFIGURE = cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
BUILD_CMD = cmake --build $(BUILD) -j$(JOBS)
QUIET_MAKE = -- --no-print-directory

.PHONY: all build demo test test-asan test-tsan test-gpu test-python-next bench fuzz clean deps install pristine

all: build

build:
	@scripts/deps.sh build
	@$(CONFIGURE) -DWEFT_BUILD_TESTS=$(TESTS_ON)
	@$(BUILD_CMD) $(QUIET_MAKE)

# what README.md uses after it (the CLI with weft plot, the runtime, the libraries, the Python
# package and its extensions) and the example; no tests
demo:
	@scripts/deps.sh build
	@$(CONFIGURE) -DWEFT_BUILD_TESTS=$(TESTS_ON)
	@$(BUILD_CMD) --target weft-cli weft-preload weft weft_static weft-python pipeline $(QUIET_MAKE)
	@rm -rf demo.data
	WEFT_OPTIONS="output=demo.data" $(BUILD)/pipeline
	$(BUILD)/weft info demo.data | head -12
	$(BUILD)/weft convert demo.data -o demo.pftrace
	@echo
	@echo "Open demo.pftrace: drag it onto https://ui.perfetto.dev (or 'Open trace file' there)."

test:
	@scripts/deps.sh test
	@$(CONFIGURE) -DWEFT_BUILD_TESTS=ON
	@$(BUILD_CMD) $(QUIET_MAKE)
	@tests/tp/fetch.sh
	cd $(BUILD) && ctest --output-on-failure -j$(TEST_JOBS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# make demo and make test on a pristine Debian 12 root (debootstrap; root cached)
pristine:
	@scripts/pristine-check.sh

# The same tests on sanitizer builds (CI runs both). weft record preloads an instrumented
# library into instrumented programs, so ASan must not insist on coming first, and must let
# the program's own (weft's) fatal-signal handling run, which the crash tests check.
test-asan:
	@ASAN_OPTIONS="verify_asan_link_order=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0:$$ASAN_OPTIONS" \
	  $(MAKE) --no-print-directory test BUILD=build-asan TEST_JOBS=2 \
	  CMAKE_FLAGS="-DWEFT_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug"
# TSan cannot follow threads created in a forked child, nor host an instrumented library
# preloaded into an instrumented program: the fork step of the features test and the
# weft record tests are covered by the plain and ASan runs and skipped here.
test-tsan:
	@WEFT_TEST_NO_FORK=1 WEFT_TEST_NO_PRELOAD=1 $(MAKE) --no-print-directory test BUILD=build-tsan TEST_JOBS=2 \
	  CMAKE_FLAGS="-DWEFT_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug"

# the Python tests on CPython 3.13 (the sys.monitoring hook): weft built from this tree in a
# Debian 13 root (debootstrap; made once, kept in /var/cache/weft/trixie); needs root
test-python-next:
	@scripts/python-next.sh

# the GPU collector on real hardware and its ABI against the CUDA toolkit's headers; each part
# says why it is skipped where the toolkit or a GPU is missing (docs/gpu.md)
test-gpu: build
	@scripts/test-gpu.sh $(BUILD)

bench: build
	@scripts/deps.sh bench
	@bench/run.sh $(BUILD)

fuzz:
	@bash tests/fuzz/run-libfuzzer.sh

clean:
	rm -rf build build-asan build-tsan build-fuzz demo.data demo.data.old demo.pftrace
