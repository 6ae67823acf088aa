#!/usr/bin/env python3
"""Mutation harness of the engine-style corpus (plain python3, run by ctest).

1. Compiles every corpus translation unit through the plugin: the errors are
   the false alarms (compared with EXPECTED_FALSE_ALARMS); in strict mode,
   the unknown-type and opaque-call warnings are counted per idiom
   (EXPECTED_UNKNOWNS).
2. For every mutant of mutants.py: checks that the mutant is well formed
   (the original text occurs once, line count kept, compiles without the
   plugin), compiles it through the plugin, and classifies it as caught (a
   new error at the expected line), elsewhere (new errors, none there) or
   missed, compared with the recorded `expected`.
Prints a report (mutation score, false alarms, unknowns per idiom) and exits
1 when anything differs from what mutants.py records, saying what to change.
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
table = None  # the corpus's mutants.py (HERE, or --corpus-dir)


def load_corpus(corpus_dir):
    """Points HERE at `corpus_dir` and loads its mutants.py as `table`."""
    global HERE, table
    import importlib.util
    HERE = os.path.abspath(corpus_dir)
    spec = importlib.util.spec_from_file_location(
        "mutants", os.path.join(HERE, "mutants.py"))
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)

DIAG = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): "
                  r"(?P<sev>error|warning): (?P<msg>.*)$")
KIND = re.compile(r"\[spmd:(?P<kind>[a-z-]+)\]\s*$")


class Diag:
    def __init__(self, path, line, sev, msg, kind):
        self.path, self.line, self.sev, self.msg, self.kind = (
            path, line, sev, msg, kind)

    def key(self):
        return (os.path.basename(self.path), self.line, self.sev, self.msg)


def parse(output):
    """Diagnostics of a compiler run; a message's kind is on its last line."""
    diags = []
    for raw in output.splitlines():
        m = DIAG.match(raw)
        if m:
            diags.append(Diag(m["file"], int(m["line"]), m["sev"], m["msg"],
                              None))
        if diags and diags[-1].kind is None:
            k = KIND.search(raw)
            if k:
                diags[-1].kind = k["kind"]
    return diags


# The warnings of strict mode: an unknown type used, and a typed tensor
# passed to a function the checker cannot see through.
STRICT_KINDS = ("unknown-type", "opaque-call")


def compile_tu(args, path, plugin=True, strict=False, corpus_dir=None):
    cmd = [args.clang, "-std=c++17", "-fsyntax-only", "-fno-color-diagnostics",
           "-ferror-limit=0", "-I" + (corpus_dir or HERE)] + [
               "-I" + i for i in args.include]
    if plugin:
        cmd.append("-fplugin=" + args.plugin)
        if strict:
            cmd.append("-fplugin-arg-spmd-check-" + args.strict_arg)
        if args.global_mode:
            cmd.append("-fplugin-arg-spmd-check-global")
    cmd.append(path)
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def corpus_files():
    return sorted(f for f in os.listdir(HERE) if f.endswith(".cpp"))


def line_text(path, line):
    with open(path) as f:
        lines = f.read().split("\n")
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def line_of(text, needle):
    """1-based line where `needle` starts; None unless it occurs once."""
    if text.count(needle) != 1:
        return None
    return text[:text.index(needle)].count("\n") + 1


def errors(diags):
    return [d for d in diags if d.sev == "error"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clang", required=True)
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--include", action="append", default=[])
    ap.add_argument("--only", help="run only the mutants whose id contains "
                    "this text (no false-alarm or unknown checks)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--global", dest="global_mode", action="store_true",
                    help="run the plugin in global mode")
    ap.add_argument("--corpus-dir", default=HERE,
                    help="the corpus (its .cpp files, headers and mutants.py; "
                    "default: this script's directory)")
    ap.add_argument("--strict-arg", default="strict",
                    choices=["strict", "strict-shards"],
                    help="the plugin argument of the strict-mode run of the "
                    "clean corpus (default: strict)")
    ap.add_argument("--measure", action="store_true",
                    help="print the outcomes without comparing them with "
                    "mutants.py (e.g. the local corpus in global mode)")
    args = ap.parse_args()
    load_corpus(args.corpus_dir)
    problems = []
    pool = ThreadPoolExecutor(max(1, args.jobs))

    # ---- the clean corpus ---------------------------------------------------
    clean = {}
    false_alarms = []
    unknowns = []
    runs = {}
    for f in corpus_files():
        path = os.path.join(HERE, f)
        runs[f] = [pool.submit(compile_tu, args, path, plugin=False),
                   pool.submit(compile_tu, args, path),
                   pool.submit(compile_tu, args, path, strict=True)]
    for f in corpus_files():
        rc, out = runs[f][0].result()
        if rc != 0:
            print(out)
            problems.append(f"{f} does not compile without the plugin")
            continue
        _, out = runs[f][1].result()
        clean[f] = parse(out)
        for d in errors(clean[f]):
            false_alarms.append((os.path.basename(d.path), d.line,
                                 line_text(d.path, d.line), d.kind, d.msg))
        _, out = runs[f][2].result()
        for d in parse(out):
            if d.kind in STRICT_KINDS:
                unknowns.append((os.path.basename(d.path), d.line,
                                 line_text(d.path, d.line), d.msg))

    if not args.only:
        print("== false alarms on the clean corpus (errors) ==")
        got = collections.Counter((f, t, k) for f, _, t, k, _ in false_alarms)
        want = collections.Counter(table.EXPECTED_FALSE_ALARMS)
        for f, line, text, kind, msg in false_alarms:
            print(f"  {f}:{line}: [{kind}] {msg}")
        print(f"  total: {len(false_alarms)}")
        for k in sorted(got - want):
            problems.append(f"new false alarm (or not recorded): {k}; fix "
                            "the plugin or add it to EXPECTED_FALSE_ALARMS")
        for k in sorted(want - got):
            problems.append(f"recorded false alarm no longer reported: {k}; "
                            "remove it from EXPECTED_FALSE_ALARMS")

        print("== strict-mode unknown-type / opaque-call warnings on the "
              "clean corpus ==")
        per_idiom = collections.Counter()
        for f, line, text, msg in unknowns:
            idiom = "unclassified"
            for entry in table.IDIOMS:
                tf, needle, name = entry[0], entry[1], entry[-1]
                about = entry[2] if len(entry) == 4 else ""
                if tf == f and needle in text and about in msg:
                    idiom = name
                    break
            per_idiom[idiom] += 1
            print(f"  {f}:{line}: [{idiom}] {text}")
        print(f"  total: {len(unknowns)}")
        for idiom in sorted(set(per_idiom) | set(table.EXPECTED_UNKNOWNS)):
            n, w = per_idiom.get(idiom, 0), table.EXPECTED_UNKNOWNS.get(idiom, 0)
            print(f"  {idiom:40s} {n:3d}" + ("" if n == w else
                                               f"   (recorded: {w})"))
            if n != w:
                problems.append(f"unknowns for idiom '{idiom}': {n}, recorded "
                                f"{w}; update EXPECTED_UNKNOWNS")

    # ---- mutants ------------------------------------------------------------
    print("== mutants ==")
    results = collections.Counter()
    typeable = caught_typeable = 0
    ids = set()
    with tempfile.TemporaryDirectory() as tmp:
        prepared = []
        for m in table.MUTANTS:
            mid, f = m["id"], m["file"]
            if mid in ids:
                problems.append(f"duplicate mutant id {mid}")
            ids.add(mid)
            if args.only and args.only not in mid:
                continue
            with open(os.path.join(HERE, f)) as fh:
                src = fh.read()
            orig, repl = m["original"], m["replacement"]
            start = line_of(src, orig)
            if start is None or orig.count("\n") != repl.count("\n"):
                problems.append(f"{mid}: the original text must occur once "
                                f"in {f} and keep its line count")
                continue
            mutated = src.replace(orig, repl)
            at = m.get("at")
            at_line = start if at is None else line_of(mutated, at)
            if at_line is None:
                problems.append(f"{mid}: 'at' text must occur once in the "
                                "mutated file")
                continue
            # The mutant replaces its file in a copy of the corpus directory
            # (the headers are found through -I of the corpus).
            mdir = os.path.join(tmp, mid)
            os.makedirs(mdir)
            mpath = os.path.join(mdir, f)
            with open(mpath, "w") as fh:
                fh.write(mutated)
            prepared.append((m, at_line, mpath,
                             pool.submit(compile_tu, args, mpath,
                                         plugin=False),
                             pool.submit(compile_tu, args, mpath)))
        for m, at_line, mpath, plain, checked in prepared:
            mid, f = m["id"], m["file"]
            rc, out = plain.result()
            if rc != 0:
                print(out)
                problems.append(f"{mid}: the mutant does not compile")
                continue
            _, out = checked.result()
            before = {d.key() for d in errors(clean.get(f, []))}
            new = [d for d in errors(parse(out)) if d.key() not in before]
            here = [d for d in new
                    if os.path.basename(d.path) == f and d.line == at_line]
            outcome = "caught" if here else "elsewhere" if new else "missed"
            results[outcome] += 1
            if m["typeable"]:
                typeable += 1
                caught_typeable += outcome != "missed"
            flag = "" if outcome == m["expected"] else \
                f"   <-- recorded: {m['expected']}"
            print(f"  {outcome:9s} {'T' if m['typeable'] else '-'} {mid} "
                  f"({f}:{at_line}){flag}")
            for d in (here or new)[:2]:
                print(f"            {os.path.basename(d.path)}:{d.line}: "
                      f"[{d.kind}] {d.msg}")
            if outcome != m["expected"]:
                problems.append(f"{mid}: {outcome}, recorded {m['expected']}; "
                                "flip its `expected` in mutants.py if this is "
                                "the intended change")
    pool.shutdown()

    total = sum(results.values())
    print("== summary ==")
    if not args.only:
        print(f"  false alarms on clean code: {len(false_alarms)}")
        print(f"  strict-mode unknowns:       {len(unknowns)}")
    print(f"  mutants: {total}: caught {results['caught']}, elsewhere "
          f"{results['elsewhere']}, missed {results['missed']}")
    if typeable:
        print(f"  mutation score (typeable mutants caught anywhere): "
              f"{caught_typeable}/{typeable} = "
              f"{100.0 * caught_typeable / typeable:.0f}%")
    if problems and args.measure:
        print("== differences from the records (not checked: --measure) ==")
        for p in problems:
            print("  " + p)
        return 0
    if problems:
        print("== differences from mutants.py ==")
        for p in problems:
            print("  " + p)
        return 1
    print("OK: every outcome as recorded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
