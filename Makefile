# One-command entry points. Each target installs missing system packages first
# (scripts/install-deps.sh is a no-op when everything is present).
PRESET ?= default
JOBS ?=

.PHONY: all deps configure build test fuzz demo bench format clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	cmake --preset $(PRESET)

build: configure
	cmake --build --preset $(PRESET) $(if $(JOBS),-j $(JOBS))

test: build
	ctest --preset $(PRESET)

# Longer fuzzing than the bounded runs in `make test` (FUZZ_SECONDS per
# fuzzer); see test/fuzz/CMakeLists.txt.
FUZZ_SECONDS ?= 600
fuzz: build
	test/fuzz/run_fuzz.sh build $(FUZZ_SECONDS)

demo: build
	@scripts/demo.sh

bench: build
	@scripts/bench.sh

format:
	git ls-files '*.h' '*.cpp' | xargs clang-format -i

clean:
	rm -rf build build-*

# The core and its tests under AddressSanitizer + UndefinedBehaviorSanitizer
# (preset asan-core, build dir build-asan-core); .ci/run runs it after make test.
# The test binary runs once (ctest --preset asan-core starts one instrumented
# process per test: ~4 min instead of ~1 s).
SANITIZE_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
.PHONY: sanitize
sanitize: deps
	cmake --preset asan-core
	cmake --build --preset asan-core $(if $(JOBS),-j $(JOBS))
	$(SANITIZE_ENV) build-asan-core/bin/spmd_core_tests --gtest_brief=1
