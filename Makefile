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
