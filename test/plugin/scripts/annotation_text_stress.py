#!/usr/bin/env python3
"""The text form of [[spmd::type]] on generated inputs too large to write as
tests: 40,000 nested parentheses (an error, not a stack overflow) and a
string continued by a macro's 2 MiB string (each token's location is found
in its own string token: the error lands on the macro's `Q`), and one
mesh axis more than the checker numbers.

Usage: annotation_text_stress.py WORKDIR CLANG ARG...   (ARGs: the plugin
and include flags; the generated file is appended)."""
import os
import subprocess
import sys

work, clang, args = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(work, exist_ok=True)
failures = []


def compile_(name, text):
    path = os.path.join(work, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write('#include "Inputs/prelude.h"\n' + text)
    p = subprocess.run([clang, *args, "-fno-caret-diagnostics", path],
                       capture_output=True, text=True, timeout=300)
    return path, p.returncode, p.stderr


def expect(name, cond, what, out):
    if not cond:
        failures.append(f"{name}: {what}\n--- output ---\n{out[-3000:]}")


DEPTH = 40000
nested = "(" * DEPTH + "0" + ")" * DEPTH
for name, line in [
    ("deep_macro.cpp", f"void f(SPMD_TYPE(tp = S({nested})) const Tensor& a);\n"),
    ("deep_string.cpp", f'void f([[spmd::type("tp = S({nested})")]] const Tensor& a);\n'),
    ("deep_type.cpp", "void f(SPMD_TYPE(tp = " + "(" * DEPTH + "R" + ")" * DEPTH +
     ") const Tensor& a);\n"),
    ("deep_entry.cpp", "void f(SPMD_TYPE(" + "(" * DEPTH + "tp = R" + ")" * DEPTH +
     ") const Tensor& a);\n"),
]:
    path, rc, out = compile_(name, line)
    expect(name, rc == 1, f"exit code {rc}, expected 1 (an error, no crash)", out)
    expect(name, "nests parentheses and signs more than 256 deep" in out,
           "no 'more than 256 deep' error", out)
    expect(name, out.count("error:") == 1, "not exactly one error", out)

SPACES = 2 << 20
define = '#define BIG "' + " " * SPACES + 'tp = Q"\n'
q_column = len('#define BIG "') + SPACES + len("tp = ") + 1
path, rc, out = compile_("continued.cpp",
                         define + 'void f([[spmd::type("" BIG)]] const Tensor& a);\n')
expect("continued.cpp", rc == 1, f"exit code {rc}, expected 1", out)
expect("continued.cpp", "type of axis 'tp' in 'spmd::type' must be a constant" in out,
       "no error about tp's type", out)
expect("continued.cpp", f"{path}:2:{q_column}: note: expanded from macro 'BIG'" in out,
       f"the error is not at BIG's Q (line 2, column {q_column})", out)

# One axis past the 65,536 the checker numbers: an error naming it (the ids
# wrapped: a relu of the P entry named axis a0 instead of tp).
AXES = 65536
decls = "".join(f"SPMD_AXIS(a{i});\n" for i in range(AXES))
entries = ", ".join(f"a{i} = R" for i in range(AXES))
path, rc, out = compile_(
    "too_many_axes.cpp",
    decls + f"void f(SPMD_TYPE({entries}, tp = P) const Tensor& x) {{\n"
    "  Tensor y = torch::relu(x);\n}\n")
expect("too_many_axes.cpp", rc == 1, f"exit code {rc}, expected 1", out)
expect("too_many_axes.cpp",
       "too many mesh axes: the annotations of one translation unit can name "
       "at most 65536 distinct axes, and 'tp' is one more" in out,
       "no 'too many mesh axes' error naming tp", out)
expect("too_many_axes.cpp", "axis a0" not in out, "an error names a0", out)

if failures:
    print("\n\n".join(failures))
    sys.exit(1)
print("ok")
