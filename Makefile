# One-command entry points. Each target installs missing system packages first
# (scripts/install-deps.sh is a no-op when everything is present).
PRESET ?= default
JOBS ?=

.PHONY: all deps configure build test fuzz demo bench format format-check clean

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

# The C++ sources clang-format owns: every tracked .h/.cpp except the
# patterns of .clang-format-ignore (test inputs whose layout is the test).
FORMAT_FILES = git ls-files '*.h' '*.cpp' | grep -v -E "$$(sed -e '/^\#/d' -e '/^$$/d' -e 's|\*\*|.*|' -e 's|^|^|' .clang-format-ignore | paste -sd'|')"

format: deps
	$(FORMAT_FILES) | xargs clang-format -i

# Fails (and names the files) where a source is not clang-formatted; .ci/run
# calls it.
format-check: deps
	@$(FORMAT_FILES) | xargs clang-format --dry-run -Werror

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

# Everything else under ASan + UBSan (preset asan-all, build dir
# build-asan-all; a full Debug -O1 build of the runtime, the plugin's analysis
# and the tools, too slow for CI). Three parts, each a target of its own:
#   sanitize-plugin   the instrumented spmd-check over test/plugin's -verify
#                     inputs and the engine corpus (the analysis is linked
#                     into the tool: the plugin's code under ASan)
#   sanitize-runtime  the runtime's GoogleTest binaries, each run once
#   sanitize-tools    the spmd-check / spmd-clangd tests (tools.*), whose
#                     scripts start the instrumented tools; not the
#                     cmake_helper PLUGIN mode, which loads the plugin into
#                     the uninstrumented clang
# libtorch and LLVM are not instrumented: container-overflow checks and leak
# checks of their allocations are off for the runtime.
SANITIZE_ENV_RUNTIME = ASAN_OPTIONS=detect_leaks=0:detect_container_overflow=0:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ASAN_ALL = build-asan-all
.PHONY: sanitize-all sanitize-all-configure sanitize-plugin sanitize-runtime sanitize-tools
sanitize-all: sanitize-plugin sanitize-runtime sanitize-tools

sanitize-all-configure: deps
	cmake --preset asan-all

sanitize-plugin: sanitize-all-configure
	cmake --build --preset asan-all $(if $(JOBS),-j $(JOBS)) --target spmd-check-tool
	$(SANITIZE_ENV) test/plugin/scripts/sanitize_verify_inputs.sh $(ASAN_ALL)/bin/spmd-check .

sanitize-runtime: sanitize-all-configure
	cmake --build --preset asan-all $(if $(JOBS),-j $(JOBS)) \
		--target spmd_runtime_tests spmd_checker_tests spmd_testing_tests
	for t in spmd_runtime_tests spmd_checker_tests spmd_testing_tests; do \
		$(SANITIZE_ENV_RUNTIME) $(ASAN_ALL)/bin/$$t --gtest_brief=1 || exit 1; done

sanitize-tools: sanitize-all-configure
	cmake --build --preset asan-all $(if $(JOBS),-j $(JOBS)) \
		--target spmd-check-tool spmd-clangd
	$(SANITIZE_ENV) ctest --test-dir $(ASAN_ALL) -R '^tools\.' \
		-E 'cmake_helper\.PLUGIN' --output-on-failure $(if $(JOBS),-j $(JOBS))
