#!/usr/bin/env python3
"""Runs a compiler command and fails only if it crashes (a signal, an exit
status other than 0 or 1, or Clang's crash banner). Prints the wall time and
the number of errors and warnings, so the log shows what the run cost.

usage: no_crash.py <command...>
"""
import subprocess
import sys
import time

CRASH_MARKERS = ("PLEASE submit a bug report", "Stack dump:")

start = time.monotonic()
p = subprocess.run(sys.argv[1:], capture_output=True, text=True,
                   errors="replace")
took = time.monotonic() - start
errors = p.stderr.count(": error: ")
warnings = p.stderr.count(": warning: ")
stats = [l for l in p.stderr.splitlines() if "spmd-check" in l and "stat" in l]
print("exit %d after %.1f s: %d errors, %d warnings" %
      (p.returncode, took, errors, warnings))
for line in stats[:5]:
    print(line)
if p.returncode not in (0, 1) or any(m in p.stderr for m in CRASH_MARKERS):
    print(p.stderr[-8000:])
    print("FAILED: the compiler crashed")
    sys.exit(1)
print("ok: no crash")
