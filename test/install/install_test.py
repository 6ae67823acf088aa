#!/usr/bin/env python3
"""`cmake --install` and an out-of-tree consumer of the installed package.

usage:
  install_test.py install <cmake> <build-dir> <work-dir>
      Installs <build-dir> into <work-dir>/staging, then moves the tree to
      <work-dir>/prefix (the package must be relocatable) and checks the
      layout.
  install_test.py consumer <PLUGIN|TOOL|RUNTIME> <cmake> <c++> <source-dir>
                  <work-dir> [<Torch_DIR>]
      Configures test/install/consumer against <work-dir>/prefix with
      find_package(SpmdCheck) and builds it: the clean annotated source
      builds, the buggy one is rejected, use_core runs. PLUGIN compiles with
      the installed plugin, TOOL runs the installed spmd-check as a build step
      (any compiler), RUNTIME also links and runs a program against
      spmd::runtime (real libtorch, plugin on).
"""
import os
import shutil
import subprocess
import sys

TIMEOUT = 600


def check(cond, what, p=None):
    if not cond:
        print("FAILED:", what)
        if p is not None:
            print("--- output ---\n" + p.stdout + p.stderr)
        sys.exit(1)
    print("ok:", what)


def run(*cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    print("$", " ".join(cmd), "->", p.returncode)
    return p


def install(cmake, build, work):
    staging = os.path.join(work, "staging")
    prefix = os.path.join(work, "prefix")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    p = run(cmake, "--install", build, "--prefix", staging)
    check(p.returncode == 0, "cmake --install (build every target first)", p)
    # Relocatable: nothing may point back at the staging prefix.
    os.rename(staging, prefix)
    expected = [
        "include/spmd/annotations.h",
        "include/spmd/core/propagation.h",
        "include/spmd/checker.h",
        "include/spmd/collectives.h",
        "lib/libspmd_core.a",
        "lib/libspmd_runtime.so",
        "lib/spmd-check.so",
        "bin/spmd-check",
        "bin/spmd-clangd",
        "lib/cmake/SpmdCheck/SpmdCheckConfig.cmake",
        "lib/cmake/SpmdCheck/SpmdCheckConfigVersion.cmake",
        "lib/cmake/SpmdCheck/SpmdCheckTargets.cmake",
        "lib/cmake/SpmdCheck/SpmdCheckRuntimeTargets.cmake",
        "lib/cmake/SpmdCheck/SpmdCheck.cmake",
        "share/doc/spmd_check/README.md",
        "share/doc/spmd_check/tools.md",
    ]
    missing = [f for f in expected if not os.path.exists(os.path.join(prefix, f))]
    check(not missing, "installed layout (missing: %s)" % ", ".join(missing))
    for root, _, files in os.walk(os.path.join(prefix, "lib", "cmake")):
        for f in files:
            text = open(os.path.join(root, f)).read()
            check(staging not in text and build not in text,
                  "%s names no build or install path" % f)
            check("libc10.so" not in text and "libtorch.so" not in text,
                  "%s names libtorch by its targets, not by paths" % f)
    p = run(os.path.join(prefix, "bin", "spmd-check"), "--version")
    check(p.returncode == 0, "the installed spmd-check runs", p)


def consumer(mode, cmake, cxx, source, work, torch_dir=None):
    prefix = os.path.join(work, "prefix")
    check(os.path.isdir(prefix), "the installed prefix exists (test "
          "install.prefix sets it up)")
    build = os.path.join(work, "consumer-" + mode.lower())
    shutil.rmtree(build, ignore_errors=True)
    check_mode = "PLUGIN" if mode == "RUNTIME" else mode
    args = [cmake, "-S", os.path.join(source, "test", "install", "consumer"),
            "-B", build, "-G", "Ninja", "-DCMAKE_CXX_COMPILER=" + cxx,
            "-DCMAKE_PREFIX_PATH=" + prefix, "-DCONSUMER_MODE=" + check_mode,
            "-DCONSUMER_TORCH_HEADERS=" +
            os.path.join(source, "test", "plugin", "Inputs", "mini-torch")]
    if mode == "RUNTIME":
        args += ["-DCONSUMER_RUNTIME=ON", "-DTorch_DIR=" + torch_dir]
    p = run(*args)
    check(p.returncode == 0, "configure with find_package(SpmdCheck)", p)
    check("spmd_typecheck(good): " + check_mode in p.stdout,
          "spmd_typecheck() uses %s" % check_mode, p)

    p = run(cmake, "--build", build, "--target", "use_core")
    check(p.returncode == 0, "use_core links spmd::core", p)
    p = run(os.path.join(build, "use_core"))
    check(p.returncode == 0 and "add(P, R) rejected" in p.stdout,
          "use_core runs", p)

    p = run(cmake, "--build", build, "--target", "good")
    check(p.returncode == 0, "the clean annotated source builds", p)
    if check_mode == "TOOL":
        check("spmd-check: checking the SPMD types of good" in p.stdout,
              "the installed spmd-check ran as a build step", p)
    with open(os.path.join(build, "build.ninja")) as f:
        ninja = f.read()
    if check_mode == "PLUGIN":
        check("-fplugin=" + os.path.join(prefix, "lib", "spmd-check.so")
              in ninja, "compiled with the installed plugin")
    else:
        check(os.path.join(prefix, "bin", "spmd-check") in ninja,
              "checked with the installed spmd-check")

    p = run(cmake, "--build", build, "--target", "bad")
    check(p.returncode != 0 and
          "[spmd:collective-input]" in p.stdout + p.stderr and
          "bad.cpp:12" in p.stdout + p.stderr,
          "the buggy source is rejected with the SPMD error at bad.cpp:12", p)

    if mode == "RUNTIME":
        p = run(cmake, "--build", build, "--target", "use_runtime")
        check(p.returncode == 0, "use_runtime (plugin on, real libtorch) "
              "builds against spmd::runtime", p)
        p = run(os.path.join(build, "use_runtime"))
        check(p.returncode == 0 and "use_runtime: ok" in p.stdout,
              "use_runtime runs: the runtime checker rejects P + R", p)


if __name__ == "__main__":
    if sys.argv[1] == "install":
        install(*sys.argv[2:5])
    else:
        consumer(*sys.argv[2:])
