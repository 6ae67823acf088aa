#!/usr/bin/env python3
"""Tokens/s of the typed GPT (examples/gpt) against the same model written by
hand on raw c10d (bench/gpt/raw_c10d.cpp), 4 ranks (dp=2 x tp=2, Gloo).

The machine this runs on is small and shared, so one run of each says little.
This script interleaves the programs: every round runs the raw program, the
typed one with the runtime's cross-rank consistency check on (the default)
and the typed one with it off (SPMD_CHECK_COLLECTIVES=0), in an order that
rotates from round to round, so that a slow period hits all three alike. It
reports, for each, the median and the best tokens/s over the rounds and the
time ratio typed/raw (raw tokens/s over typed tokens/s) of the medians (the
headline) and of the bests. The ratio is reported, never asserted; the last
losses of the three must agree (same math), or the script exits 1.

    bench/gpt/compare.py --build build [--rounds 5] [--steps 30]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RUN_RANKS = os.path.join(ROOT, "examples", "tools", "run_ranks.sh")


def run_once(cmd, env):
    out = subprocess.run(
        [RUN_RANKS, "--launcher", "direct", "--nproc", "4", "--timeout", "300",
         "--"] + cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    tps = re.search(r"throughput: ([0-9.]+) tokens", out.stdout)
    loss = re.search(r"last loss ([0-9.]+)", out.stdout)
    if out.returncode != 0 or not tps or not loss:
        sys.stderr.write("bench/gpt/compare.py: %s failed (exit %d):\n%s\n" %
                         (" ".join(cmd), out.returncode, out.stdout[-2000:]))
        return None, None
    return float(tps.group(1)), loss.group(1)


def load():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int,
                    default=int(os.environ.get("GPT_BENCH_ROUNDS", "5")))
    ap.add_argument("--steps", type=int,
                    default=int(os.environ.get("GPT_BENCH_STEPS", "30")))
    a = ap.parse_args()
    binary = lambda name: os.path.join(a.build, "bin", name)
    args = ["--tp", "2", "--steps", str(a.steps)]
    base = dict(os.environ)
    on = dict(base, SPMD_CHECK_COLLECTIVES="1")
    off = dict(base, SPMD_CHECK_COLLECTIVES="0")
    programs = [
        ("raw c10d", [binary("gpt_raw_c10d")] + args, base),
        ("typed, check on", [binary("gpt_train")] + args +
         ["--no-reference", "--quiet"], on),
        ("typed, check off", [binary("gpt_train")] + args +
         ["--no-reference", "--quiet"], off),
    ]
    tps = {name: [] for name, _, _ in programs}
    losses = {name: set() for name, _, _ in programs}
    print("  %d rounds of %d steps each (the first step of every run is not "
          "timed), order rotated per round; load average %.2f at the start" %
          (a.rounds, a.steps, load()))
    t0 = time.time()
    for r in range(a.rounds):
        order = programs[r % 3:] + programs[:r % 3]
        line = []
        for name, cmd, env in order:
            v, loss = run_once(cmd, env)
            if v is None:
                return 1
            tps[name].append(v)
            losses[name].add(loss)
            line.append("%s %.0f" % (name, v))
        print("  round %d: %s tokens/s" % (r + 1, ", ".join(line)))
        sys.stdout.flush()
    print("  load average %.2f at the end (%.0f s)" % (load(), time.time() - t0))
    all_losses = set().union(*losses.values())
    print("  last loss: %s" % ", ".join(
        "%s %s" % (n, "/".join(sorted(l))) for n, l in losses.items()))
    for name, _, _ in programs:
        v = tps[name]
        print("  %-17s median %6.0f, best %6.0f tokens/s" %
              (name, statistics.median(v), max(v)))
    raw = tps["raw c10d"]
    for name in ("typed, check on", "typed, check off"):
        v = tps[name]
        print("  time ratio typed/raw (%s): %.3f of the medians, %.3f of the "
              "bests" % (name, statistics.median(raw) / statistics.median(v),
                         max(raw) / max(v)))
    if len(all_losses) != 1:
        print("  MISMATCH: the last losses differ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
