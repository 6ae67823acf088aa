#!/usr/bin/env python3
"""Compiles generated annotated C++ (gen_annotated.py) through the spmd-check
plugin and fails on a compiler crash, a hang, or a well-formed case that is
not valid C++ (a generator bug: the class would test less than it claims).

usage: run_generated.py --clang C --plugin P --source-dir S --work-dir W
                        [--seed N] [--cases N] [--timeout SEC] [--jobs N]
                        [--classes a,b] [--regressions DIR]

Each case is compiled twice: default options and strict mode with
system-headers (a well-formed case also without the plugin, where any error
is a generator bug). A crashing or hanging input is kept under <work-dir>/found/
with the command line that failed; copy it to test/fuzz/regressions/ (which
--regressions replays) once fixed. Prints a table:
input class | cases | compiles | crashes | hangs | max seconds.
"""
import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_annotated  # noqa: E402

MODES = {
    "default": [],
    "strict": ["-fplugin-arg-spmd-check-strict",
               "-fplugin-arg-spmd-check-system-headers"],
}
CRASH_MARKERS = ("PLEASE submit a bug report", "Stack dump:",
                 "Segmentation fault", "Assertion `")


def compile_one(args, path, mode):
    plugin = [] if mode == "no-plugin" else ["-fplugin=" + args.plugin]
    cmd = [args.clang, "-std=c++20", "-fsyntax-only", "-ferror-limit=0",
           "-fno-color-diagnostics"] + plugin + [
           "-I" + os.path.join(args.source_dir, "annotations", "include"),
           "-I" + os.path.join(args.source_dir, "runtime", "include"),
           "-I" + os.path.join(args.source_dir, "test", "plugin", "Inputs",
                               "mini-torch"),
           "-I" + os.path.join(args.source_dir, "test", "plugin", "Inputs")
           ] + MODES.get(mode, []) + [path]
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           errors="replace", timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return "hang", time.monotonic() - start, cmd, ""
    took = time.monotonic() - start
    crashed = (p.returncode not in (0, 1) or
               any(m in p.stderr for m in CRASH_MARKERS))
    if crashed:
        return "crash", took, cmd, p.stderr
    return ("ok" if p.returncode == 0 else "errors"), took, cmd, p.stderr


def cxx_errors(stderr):
    """The errors of a compile without the plugin: C++ errors only (the
    SPMD_* macros expand to nothing then)."""
    return [l for l in stderr.splitlines() if ": error: " in l]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clang", required=True)
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=8,
                    help="cases per input class")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--classes", default=",".join(gen_annotated.CLASSES))
    ap.add_argument("--regressions",
                    help="also compile every .cpp in this directory")
    ap.add_argument("--budget", type=float, default=0,
                    help="seconds after which no new compile starts (0: no "
                    "limit); the regressions always run first")
    args = ap.parse_args()

    shutil.rmtree(args.work_dir, ignore_errors=True)
    os.makedirs(os.path.join(args.work_dir, "found"))
    jobs = []  # (class, path)
    for cls in args.classes.split(","):
        for i in range(args.cases):
            path = os.path.join(args.work_dir, "%s_%d_%d.cpp" %
                                (cls, args.seed, i))
            with open(path, "w") as f:
                f.write(gen_annotated.generate(cls, args.seed, i))
            jobs.append((cls, path))
    if args.regressions and os.path.isdir(args.regressions):
        for name in sorted(os.listdir(args.regressions)):
            if name.endswith(".cpp"):
                jobs.insert(0, ("regression",
                                os.path.join(args.regressions, name)))
    # Round-robin over the classes, so that a time budget cuts every class
    # short alike.
    by_class = {}
    for cls, path in jobs:
        by_class.setdefault(cls, []).append(path)
    order = []
    while any(by_class.values()):
        for cls in list(by_class):
            if by_class[cls]:
                order.append((cls, by_class[cls].pop(0)))
    jobs = order

    stats = {}  # class -> dict
    failures = []
    started = time.monotonic()
    skipped = 0

    def run_within_budget(cls, path, mode):
        if args.budget and time.monotonic() - started > args.budget:
            return None
        return compile_one(args, path, mode)

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        # A well-formed case is also compiled without the plugin: any error
        # there is a generator bug.
        futures = {pool.submit(run_within_budget, cls, path, mode):
                   (cls, path, mode)
                   for cls, path in jobs
                   for mode in list(MODES) + (["no-plugin"]
                                              if cls == "well_formed" else [])}
        for fut in concurrent.futures.as_completed(futures):
            if fut.result() is None:
                skipped += 1
                continue
            cls, path, mode = futures[fut]
            outcome, took, cmd, stderr = fut.result()
            s = stats.setdefault(cls, {"cases": set(), "compiles": 0,
                                       "crash": 0, "hang": 0, "max": 0.0})
            s["cases"].add(path)
            s["compiles"] += 1
            s["max"] = max(s["max"], took)
            if outcome in ("crash", "hang"):
                s[outcome] += 1
                keep = os.path.join(args.work_dir, "found",
                                    os.path.basename(path))
                shutil.copy(path, keep)
                with open(keep + ".cmd", "w") as f:
                    f.write(" ".join(cmd) + "\n" + stderr[-4000:])
                failures.append("%s: %s (%s mode, %.1f s): %s" %
                                (outcome.upper(), path, mode, took, keep))
            elif mode == "no-plugin":
                bad = cxx_errors(stderr)
                if bad:
                    failures.append("GENERATOR: %s is not valid C++ (%s): %s"
                                    % (path, mode, bad[0]))

    print("%-14s | %5s | %8s | %7s | %5s | %s" %
          ("input class", "cases", "compiles", "crashes", "hangs",
           "max seconds"))
    for cls in sorted(stats):
        s = stats[cls]
        print("%-14s | %5d | %8d | %7d | %5d | %.1f" %
              (cls, len(s["cases"]), s["compiles"], s["crash"], s["hang"],
               s["max"]))
    if skipped:
        print("%d compiles not started: the %.0f s budget was spent" %
              (skipped, args.budget))
    for f in failures:
        print(f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
