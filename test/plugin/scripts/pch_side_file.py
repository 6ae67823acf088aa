#!/usr/bin/env python3
"""The annotations file beside a precompiled header, in the cases a -verify
fixture cannot set up:

* a PCH built from a relative header path keeps its annotations;
* an empty file, a file cut short and another version's file are each a
  warning naming the problem (not a silent loss of annotations);
* concurrent builds of two different headers into one output leave a PCH
  whose annotations are its own, or a warning, never the other header's.

Usage: pch_side_file.py WORKDIR CLANG PLUGIN INCLUDE-FLAGS...
"""
import os
import shutil
import subprocess
import sys

WORK, CLANG, PLUGIN = sys.argv[1:4]
INC = sys.argv[4:]
BASE = [CLANG, "-std=c++17", "-fplugin=" + PLUGIN, "-fno-color-diagnostics"]

HEADER = """#pragma once
#include <spmd/collectives.h>
#include <spmd/type_annotations.h>
#include <torch/torch.h>
using namespace spmd::types;
using torch::Tensor;
SPMD_AXIS(tp);
#define HEADER_{name} 1
SPMD_TYPE(tp = R) Tensor f(SPMD_TYPE(tp = {param}) const Tensor& x);
"""
# f(r) is an error under header B (x: P), f(p) one under header A (x: R).
USE = """void uses(SPMD_TYPE(tp = R) const Tensor& r,
          SPMD_TYPE(tp = P) const Tensor& p) {
  f(r);
  f(p);
}
"""
ERR_A = "argument 'p' of 'f' has type P on axis 'tp', but parameter 'x' is declared R there"
ERR_B = "argument 'r' of 'f' has type R on axis 'tp', but parameter 'x' is declared P there"

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args, cwd):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True)


def build(header, out, cwd):
    return BASE + INC + ["-x", "c++-header", header, "-o", out]


def use(pch, cwd):
    src = os.path.join(cwd, "use.cpp")
    with open(src, "w") as f:
        f.write(USE)
    r = run(BASE + INC + ["-fsyntax-only", "-include-pch", pch, src], cwd)
    return r.stderr


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
for name, param in (("A", "R"), ("B", "P")):
    with open(os.path.join(WORK, name.lower() + ".h"), "w") as f:
        f.write(HEADER.format(name=name, param=param))

# A relative header path (`-x c++-header a.h`, run in the header's directory).
r = run(build("a.h", "a.h.pch", WORK), WORK)
check(r.returncode == 0, "relative build: " + r.stderr)
out = use("a.h.pch", WORK)
check(ERR_A in out and ERR_B not in out and "warning" not in out,
      "relative path: the PCH's annotations are seen\n" + out)

# Unreadable annotations files are each a warning naming the problem (an
# absolute header path from here on).
A_H, B_H = os.path.join(WORK, "a.h"), os.path.join(WORK, "b.h")
r = run(build(A_H, "abs.pch", WORK), WORK)
check(r.returncode == 0, "absolute build: " + r.stderr)
out = use("abs.pch", WORK)
check(ERR_A in out and ERR_B not in out and "warning" not in out,
      "absolute path: the PCH's annotations are seen\n" + out)
side = os.path.join(WORK, "abs.pch.spmd-annotations")
with open(side) as f:
    good = f.read()
lines = good.splitlines(keepends=True)
cases = {
    "empty": ("", "the file is empty"),
    "cut": ("".join(lines[:-1]), "cut short"),
    "cut mid-line": (good[: len(good) - 3], "cut short"),
    "cut entries": ("".join(lines[:2] + lines[-1:]), "cut short"),
    "old version": ("1\tx\t1\t1\tU\n", "not an annotations file of this version"),
}
for what, (text, message) in cases.items():
    with open(side, "w") as f:
        f.write(text)
    out = use("abs.pch", WORK)
    check("warning: spmd-check: cannot read the SPMD annotations" in out
          and message in out, what + ": a warning that says '" + message +
          "'\n" + out)
with open(side, "w") as f:
    f.write(good)

# Concurrent writers: two headers into one output, many times; whichever PCH
# is left, its annotations are its own or a warning says they are not.
for trial in range(12):
    procs = [subprocess.Popen(build(h, "shared.pch", WORK), cwd=WORK,
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
             for h in (A_H, B_H)]
    for p in procs:
        p.wait()
    macros = run(BASE + INC + ["-include-pch", "shared.pch", "-E", "-dM",
                               "-x", "c++", "/dev/null"], WORK).stdout
    winner = "A" if "HEADER_A" in macros else "B"
    out = use("shared.pch", WORK)
    mine, other = (ERR_A, ERR_B) if winner == "A" else (ERR_B, ERR_A)
    check(other not in out and (mine in out or "cannot read" in out),
          "concurrent trial %d (PCH of %s): %s" % (trial, winner, out))

leftovers = [n for n in os.listdir(WORK) if n.endswith(".tmp")]
check(not leftovers, "temporary files left: %s" % leftovers)
print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
