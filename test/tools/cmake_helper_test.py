#!/usr/bin/env python3
"""cmake/SpmdCheck.cmake: spmd_typecheck() in a user project, both paths.

usage: cmake_helper_test.py <TOOL|PLUGIN> <cmake> <compiler> <spmd-check>
                            <spmd-check.so> <source-dir> <work-dir>
TOOL builds with GCC (a build step runs spmd-check), PLUGIN with Clang 19
(-fplugin). In both, the clean target builds, the buggy one fails with the
SPMD error, and (TOOL) editing an included header re-runs the check.
"""
import os
import shutil
import subprocess
import sys

MODE, CMAKE, CXX, TOOL, PLUGIN, SOURCE_DIR, WORKDIR = sys.argv[1:8]
HERE = os.path.dirname(os.path.abspath(__file__))


def check(cond, what, p=None):
    if not cond:
        print("FAILED:", what)
        if p is not None:
            print("--- output ---\n" + p.stdout + p.stderr)
        sys.exit(1)
    print("ok:", what)


def run(*cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    print("$", " ".join(cmd), "->", p.returncode)
    return p


src = os.path.join(WORKDIR, "src")
build = os.path.join(WORKDIR, "build")
shutil.rmtree(WORKDIR, ignore_errors=True)
os.makedirs(src)
shutil.copy(os.path.join(HERE, "Inputs", "cmake-project", "CMakeLists.txt"),
            src)
inputs = os.path.join(HERE, "Inputs", "project")
with open(os.path.join(src, "good.cpp"), "w") as f:
    f.write('#include "local.h"\n' +
            open(os.path.join(inputs, "clean.cpp")).read())
shutil.copy(os.path.join(inputs, "bad.cpp"), src)
with open(os.path.join(src, "local.h"), "w") as f:
    f.write("#pragma once\n")

p = run(CMAKE, "-S", src, "-B", build, "-G", "Ninja",
        "-DCMAKE_CXX_COMPILER=" + CXX, "-DSPMD_SOURCE_DIR=" + SOURCE_DIR,
        "-DSPMD_CHECK_EXECUTABLE=" + TOOL, "-DSPMD_CHECK_PLUGIN=" + PLUGIN)
check(p.returncode == 0, "configure", p)
check("spmd_typecheck(good): " + MODE in p.stdout and
      "spmd_typecheck(bad): " + MODE in p.stdout,
      "AUTO picks %s for %s" % (MODE, os.path.basename(CXX)), p)

p = run(CMAKE, "--build", build, "--target", "good")
check(p.returncode == 0, "the clean target builds", p)
if MODE == "TOOL":
    check("spmd-check: checking the SPMD types of good" in p.stdout,
          "the check ran as a build step", p)
else:
    with open(os.path.join(build, "build.ninja")) as f:
        check("-fplugin=" + PLUGIN in f.read(), "compiled with -fplugin")

p = run(CMAKE, "--build", build, "--target", "bad")
check(p.returncode != 0 and "[spmd:collective-input]" in p.stdout + p.stderr
      and "[spmd:op-type]" in p.stdout + p.stderr,
      "the buggy target fails with the SPMD errors", p)

# A bug in an included header: the check re-runs (depfile) and fails.
with open(os.path.join(src, "local.h"), "w") as f:
    f.write('#pragma once\n#include "prelude.h"\n'
            "inline Tensor header_bug(SPMD_TYPE(tp = R) const Tensor& x) {\n"
            "  return spmd::all_reduce(x, tp, P, R);\n}\n")
p = run(CMAKE, "--build", build, "--target", "good")
check(p.returncode != 0 and "local.h:4" in p.stdout + p.stderr,
      "a bug added to an included header fails the next build", p)
