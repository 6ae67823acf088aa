#!/usr/bin/env python3
"""Compiles examples/gpt/model.cpp with one mistake of bugs.h switched on
(-DGPT_BUG=GPT_BUG_<name>) through the spmd-check plugin, with the flags of
the build (compile_commands.json: strict global mode, the precompiled
header), and checks that the plugin rejects it AT the line marked
"// BUG(<name>)" (an SPMD error, or a note of one, at that line; a mistake in a declaration
marks the line where its use is caught too).

  gpt_bug_compile.py BUILD_DIR PLUGIN NAME

Exit status 0 when it does, 1 when not, 2 on a usage error.
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples", "tools"))
from plugin_compile import find_command, syntax_only  # noqa: E402


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    build, plugin, bug = sys.argv[1:]
    gpt = os.path.join(ROOT, "examples", "gpt")
    source = os.path.join(gpt, "model.cpp")
    marker = f"BUG({bug})"
    marked = []
    for name in ("model.cpp", "gpt.h"):
        with open(os.path.join(gpt, name)) as f:
            marked += [(name, i + 1) for i, l in enumerate(f.read().splitlines())
                       if marker in l]
    if not marked:
        print(f"error: no line of examples/gpt marks '{marker}'",
              file=sys.stderr)
        return 2
    directory, args = find_command(build, source)
    cmd = syntax_only(args, os.path.abspath(plugin))
    cmd = cmd[:-1] + [f"-DGPT_BUG=GPT_BUG_{bug}", "-fno-color-diagnostics",
                      "-fno-caret-diagnostics"] + cmd[-1:]
    r = subprocess.run(cmd, cwd=directory, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    print(r.stdout, end="")
    errors = [l for l in r.stdout.splitlines()
              if re.search(r": error: .*\[spmd:", l)]
    print(f"{len(errors)} SPMD errors")
    if r.returncode == 0 or not errors:
        print(f"FAIL: the plugin did not reject {bug}", file=sys.stderr)
        return 1
    # An error (or a note of one) on one of the marked lines.
    here = [f"{n}:{line}:" for n, line in marked]
    hits = [l for l in r.stdout.splitlines()
            if re.search(r": (error|note): ", l) and any(h in l for h in here)]
    if not hits:
        print(f"FAIL: no SPMD diagnostic at {', '.join(here)}", file=sys.stderr)
        return 1
    print(f"rejected at {hits[0].split(': ')[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
