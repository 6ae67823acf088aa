#!/usr/bin/env python3
"""The checker's own time must not grow with the system headers a
translation unit includes (libtorch's are huge), in any mode.

Generates a system header of FUNCTIONS function bodies (a stand-in for
libtorch's inline code) and a main file whose one annotated function calls
an unannotated helper (strict mode then asks where the result goes, which
reads the parent map), and compiles it through the plugin with
-fplugin-arg-spmd-check-stats in local, strict, global and strict global
mode. The checker's own time of each mode (the best of REPEAT runs) must
stay within max(RATIO x local mode's, SLACK ms): local mode reads no TU-wide
fact, and a walk of the whole translation unit in another mode (a parent map
over every header) costs far more (hundreds of ms here).

Usage: header_scaling.py --clang clang++-19 --plugin spmd-check.so
                         --include dir [--include dir ...]
"""
import argparse
import os
import subprocess
import sys
import tempfile

FUNCTIONS = 6000
REPEAT = 3
RATIO = 4.0
SLACK = 40.0  # ms

MAIN = """#include <big_library.h>
#include <spmd/collectives.h>
#include <spmd/type_annotations.h>
#include <torch/torch.h>
using namespace spmd::types;
using torch::Tensor;
SPMD_AXIS(tp);

Tensor helper(const Tensor& x);

SPMD_TYPE(tp = I)
Tensor user(SPMD_TYPE(tp = I) const Tensor& x) {
  auto a = helper(x);
  return spmd::assert_type(a + x, tp, I);
}
"""


def header(n):
    out = ["#pragma GCC system_header", "namespace big_library {"]
    for i in range(n):
        out.append(f"inline int f{i}(int a, int b) {{ int c = a * {i} + b;"
                   f" if (c > b) c -= a; for (int j = 0; j < b; ++j) c += j;"
                   f" return c + f{max(i - 1, 0)}(b, a); }}")
    out.append("}")
    return "\n".join(out) + "\n"


def own_ms(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    for line in r.stderr.splitlines():
        if line.startswith("spmd-check: "):
            return float(line.rsplit(",", 1)[1].split()[0])
    sys.exit("no stats line:\n" + " ".join(cmd) + "\n" + r.stderr[-3000:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clang", required=True)
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--include", action="append", default=[])
    a = ap.parse_args()
    modes = {"local": [], "strict": ["-fplugin-arg-spmd-check-strict"],
             "global": ["-fplugin-arg-spmd-check-global"],
             "strict global": ["-fplugin-arg-spmd-check-strict",
                               "-fplugin-arg-spmd-check-global"]}
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        sysdir = os.path.join(tmp, "sys")
        os.makedirs(sysdir)
        with open(os.path.join(sysdir, "big_library.h"), "w") as f:
            f.write(header(FUNCTIONS))
        src = os.path.join(tmp, "main.cpp")
        with open(src, "w") as f:
            f.write(MAIN)
        base = [a.clang, "-std=c++17", "-fsyntax-only", "-w",
                f"-fplugin={a.plugin}", "-fplugin-arg-spmd-check-stats",
                "-isystem", sysdir] + ["-I" + i for i in a.include]
        t = {mode: min(own_ms(base + flags + [src]) for _ in range(REPEAT))
             for mode, flags in modes.items()}
        limit = max(RATIO * t["local"], SLACK)
        for mode, ms in t.items():
            ok = ms <= limit
            failed |= not ok
            print(f"{mode}: checker's own time {ms:.2f} ms with "
                  f"{FUNCTIONS} system-header functions (limit {limit:.1f} "
                  f"ms): {'ok' if ok else 'FAILED'}")
    if failed:
        sys.exit("the checker's own time grows with the system headers in some "
                 "mode: a walk of the whole translation unit? Restrict it to "
                 "the declarations outside system headers (Checker.cpp)")


if __name__ == "__main__":
    main()
