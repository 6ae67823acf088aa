#!/usr/bin/env python3
"""Compiles one source of the examples with the spmd-check plugin, as its build
does, and reports the SPMD diagnostics.

The compile command is taken from the build's compile_commands.json (the same
flags, include paths and precompiled header), turned into a syntax-only run
with -fplugin added. Used by `make demo` and by the tests in test/examples.

  plugin_compile.py --build-dir BUILD --plugin SO SOURCE [--expect-clean]
                    [--expect REGEX ...] [--plugin-arg ARG ...]
                    [--define NAME[=VALUE] ...] [--quiet]

--expect-clean: succeed only if the compiler succeeds with no diagnostic.
--expect REGEX: succeed only if the compiler FAILS and its output matches
                every REGEX (an error the plugin must report).
--expect-at TEXT: also require an error or note on every line of SOURCE that
                contains TEXT (e.g. the "// BUG" marker of examples/bugs).
--expect-error-at TEXT: like --expect-at, but an error (not only a note)
                must be reported on the line.
--define NAME[=VALUE]: compile with -DNAME[=VALUE] (e.g. a bug switch of
                examples/tp_transformer_block/bugs.h).
--plugin-arg ARG: add -fplugin-arg-spmd-check-ARG (e.g. global, strict) to
                the build's own plugin arguments.
Prints the compiler's output (unless --quiet) and a line "N SPMD diagnostics".
Exit status 0 when the expectation holds, 1 when not, 2 on a usage error.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys


def find_command(build_dir, source):
    path = os.path.join(build_dir, "compile_commands.json")
    try:
        with open(path) as f:
            entries = json.load(f)
    except OSError as e:
        sys.exit(f"error: cannot read {path} ({e.strerror}); configure the "
                 "build first (cmake -S . -B BUILD)")
    want = os.path.realpath(source)
    for e in entries:
        if os.path.realpath(os.path.join(e["directory"], e["file"])) == want:
            args = e.get("arguments") or shlex.split(e["command"])
            return e["directory"], args
    sys.exit(f"error: {source} is not in {path}; is it part of a target?")


def syntax_only(args, plugin, plugin_args=(), defines=()):
    out = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-c"):
            skip = a == "-o"
            continue
        if a.startswith("-fplugin="):
            continue
        out.append(a)
    # The source is the last argument; flags go before it.
    return out[:-1] + ["-fsyntax-only", "-fcolor-diagnostics"
                       if sys.stdout.isatty() else "-fno-color-diagnostics",
                       f"-fplugin={plugin}"] + [
                           f"-fplugin-arg-spmd-check-{x}" for x in plugin_args
                       ] + [f"-D{d}" for d in defines] + out[-1:]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", required=True)
    p.add_argument("--plugin", required=True)
    p.add_argument("--expect-clean", action="store_true")
    p.add_argument("--expect", action="append", default=[])
    p.add_argument("--expect-at", action="append", default=[])
    p.add_argument("--expect-error-at", action="append", default=[])
    p.add_argument("--define", action="append", default=[])
    p.add_argument("--plugin-arg", action="append", default=[])
    p.add_argument("--quiet", action="store_true")
    p.add_argument("source")
    a = p.parse_args()
    if not os.path.exists(a.plugin):
        print(f"error: plugin {a.plugin} not found; build the spmd-check "
              "target first", file=sys.stderr)
        return 2
    directory, args = find_command(a.build_dir, a.source)
    cmd = syntax_only(args, os.path.abspath(a.plugin), a.plugin_arg,
                      a.define)
    r = subprocess.run(cmd, cwd=directory, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    text = r.stdout
    if not a.quiet and text:
        print(text, end="" if text.endswith("\n") else "\n")
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
    diags = [l for l in plain.splitlines()
             if re.search(r"(^|: )(error|warning|fatal error): ", l)]
    spmd = [l for l in diags if "[spmd:" in l or "spmd::" in l]
    print(f"{len(spmd)} SPMD diagnostics"
          + (f" ({len(diags) - len(spmd)} other)" if len(diags) > len(spmd)
             else ""))
    if a.expect_clean:
        ok = r.returncode == 0 and not diags
        if not ok:
            print("expected a clean compile", file=sys.stderr)
        return 0 if ok else 1
    if a.expect or a.expect_at or a.expect_error_at:
        if r.returncode == 0:
            print("expected the plugin to reject this source, but it compiled",
                  file=sys.stderr)
            return 1
        missing = [x for x in a.expect if not re.search(x, plain)]
        name = re.escape(os.path.basename(a.source))
        with open(a.source) as f:
            lines = f.read().splitlines()
        for text, kinds in ([(t, "(error|note)") for t in a.expect_at] +
                            [(t, "error") for t in a.expect_error_at]):
            marked = [i + 1 for i, l in enumerate(lines) if text in l]
            if not marked:
                print(f"no line of {a.source} contains '{text}'",
                      file=sys.stderr)
                return 1
            missing += [f"{name}:{n}:[0-9]+: {kinds}: " for n in marked]
        missing = [x for x in missing if not re.search(x, plain)]
        for x in missing:
            print(f"expected output matching /{x}/", file=sys.stderr)
        return 1 if missing else 0
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
