#!/usr/bin/env python3
"""Compiles every ```cpp block of a Markdown file with clang-19 and the
spmd-check plugin, checks that it is clean or rejected as its marker says,
and runs the runnable ones on 2 Gloo ranks, so that no code sample of the
documentation can teach a bug or fail to build.

  check_doc_snippets.py --source-dir SRC --build-dir BUILD --plugin SO
                        --torch-root TORCH --torchrun TORCHRUN FILE.md

A block's expectations come from an HTML comment on the line just before its
fence (invisible in the rendered page):

  <!-- doc-test: [fragment] [run] [file=NAME] [MODE=clean|reject:REGEX ...] -->

MODE is local, local-strict, global or global-strict (the plugin arguments
`global` and `strict`); each one given is a separate compile. clean: the
compile succeeds with no diagnostic at all. reject:REGEX: the compile fails
and its output matches REGEX. Without a MODE a block must be clean in local
mode (the default). `fragment`: the block is not a translation unit and is
not compiled (use it sparingly). `run`: the block is also compiled, linked
against libspmd_runtime and libtorch, and run as 2 ranks with torchrun; it
must exit 0. `file=NAME`: the block is saved as NAME in the work directory,
for the shell blocks below.

A ```sh block marked `<!-- doc-test: sh -->` is run with bash in the work
directory (where the blocks with file= were saved), with `/path/to/spmd-check`
replaced by SRC, and must exit 0: the page's own compile and launch commands.
They expect the build in SRC/build, and are skipped (saying so) otherwise.

Prints one line per check and a closing "N passed, N failed" line; exit
status 0 only when every check passed.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

MODES = {
    "local": [],
    "local-strict": ["strict"],
    "global": ["global"],
    "global-strict": ["global", "strict"],
}
MARKER = re.compile(r"^\s*<!--\s*doc-test:(.*?)-->\s*$")
FENCE = re.compile(r"^(\s*)```\s*([A-Za-z0-9_+-]*)\s*$")


class Block:
    """One fenced block: its language, first line number, text and marker."""

    def __init__(self, lang, line, text, marker):
        self.lang = lang
        self.line = line
        self.text = text
        self.flags = set()
        self.modes = {}  # mode -> "clean" or the reject regex
        self.file = None
        self.bad = []  # errors in the marker itself
        for word in shlex.split(marker or ""):
            key, _, value = word.partition("=")
            if key in ("fragment", "run", "sh") and not value:
                self.flags.add(key)
            elif key == "file" and value:
                self.file = value
            elif key in MODES and value == "clean":
                self.modes[key] = "clean"
            elif key in MODES and value.startswith("reject:") and len(value) > 7:
                self.modes[key] = value[len("reject:"):]
            else:
                self.bad.append(word)
        if not self.modes and "fragment" not in self.flags:
            self.modes["local"] = "clean"


def blocks_of(path):
    """The fenced blocks of a Markdown file, with the marker before each."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or not m.group(2):
            i += 1
            continue
        marker = None
        if i > 0:
            mm = MARKER.match(lines[i - 1])
            if mm:
                marker = mm.group(1)
        indent, lang, start = m.group(1), m.group(2), i + 1
        body = []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line)
            i += 1
        out.append(Block(lang, start, "\n".join(body) + "\n", marker))
        i += 1
    return out


def run(cmd, cwd, timeout, env=None):
    """Runs cmd; returns (exit status, stdout and stderr together)."""
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           timeout=timeout, env=env)
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        out = e.stdout or ""
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        return 124, out + f"\n(timed out after {timeout} s)"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source-dir", required=True)
    p.add_argument("--build-dir", required=True)
    p.add_argument("--plugin", required=True)
    p.add_argument("--torch-root", required=True,
                   help="the torch package directory (include/ and lib/)")
    p.add_argument("--torchrun", required=True)
    p.add_argument("--clang", default="clang++-19")
    p.add_argument("markdown")
    a = p.parse_args()

    src = os.path.abspath(a.source_dir)
    build = os.path.abspath(a.build_dir)
    torch = a.torch_root
    include = [f"-I{src}/annotations/include", f"-I{src}/core/include",
               f"-I{src}/runtime/include", f"-I{torch}/include",
               f"-I{torch}/include/torch/csrc/api/include"]
    compile_flags = [a.clang, "-std=c++20", "-fno-color-diagnostics",
                     f"-fplugin={os.path.abspath(a.plugin)}"] + include
    link_flags = [f"-L{build}/lib", "-lspmd_runtime", f"-L{torch}/lib",
                  "-ltorch", "-ltorch_cpu", "-lc10",
                  f"-Wl,-rpath,{build}/lib:{torch}/lib"]
    name = os.path.relpath(a.markdown, src)
    passed = failed = 0

    def report(ok, what, detail=""):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
        if not ok and detail:
            print("     " + detail.rstrip().replace("\n", "\n     "))

    work = tempfile.mkdtemp(prefix="doc-snippets-")
    blocks = blocks_of(a.markdown)
    for n, b in enumerate(blocks):
        where = f"{name}:{b.line} (```{b.lang})"
        if b.bad:
            report(False, where, "unknown marker words: " + " ".join(b.bad) +
                   " (expected fragment, run, sh, file=NAME, MODE=clean, "
                   "MODE=reject:REGEX with MODE one of " + ", ".join(MODES) + ")")
            continue
        if b.lang == "sh" and "sh" in b.flags:
            if os.path.realpath(build) != os.path.realpath(f"{src}/build"):
                print(f"skip {where}: its commands use $SPMD/build, and the "
                      f"build is {build}")
                continue
            script = b.text.replace("/path/to/spmd-check", src)
            rc, out = run(["bash", "-euo", "pipefail", "-c", script], work, 300)
            report(rc == 0, f"{where}: the commands succeed",
                   f"exit {rc}:\n{out}")
            continue
        if b.lang != "cpp":
            continue
        if "fragment" in b.flags:
            print(f"skip {where}: a fragment")
            continue
        file = b.file or f"block{n}.cpp"
        path = os.path.join(work, file)
        with open(path, "w", encoding="utf-8") as f:
            f.write(b.text)
        for mode, want in b.modes.items():
            cmd = compile_flags + [f"-fplugin-arg-spmd-check-{x}"
                                   for x in MODES[mode]] + [
                                       "-fsyntax-only", path]
            rc, out = run(cmd, work, 300)
            out = out.replace(path, file)
            if want == "clean":
                report(rc == 0 and not out.strip(),
                       f"{where}: clean in {mode} mode",
                       f"exit {rc}, output:\n{out}")
            else:
                ok = rc != 0 and re.search(want, out) is not None
                report(ok, f"{where}: rejected in {mode} mode ({want})",
                       f"exit {rc}, output:\n{out}")
        if "run" in b.flags:
            exe = os.path.join(work, os.path.splitext(file)[0])
            rc, out = run(compile_flags + [path, "-o", exe] + link_flags,
                          work, 300)
            if rc != 0:
                report(False, f"{where}: compiles and links", out)
                continue
            port = free_port()
            env = dict(os.environ, OMP_NUM_THREADS="1")
            rc, out = run([os.path.abspath(a.torchrun), "--no_python", "--nproc_per_node", "2",
                           "--master_addr", "127.0.0.1", "--master_port",
                           str(port), exe], work, 120, env)
            report(rc == 0, f"{where}: runs on 2 ranks (torchrun)",
                   f"exit {rc}:\n{out}")
            if rc == 0:
                print("     " + out.strip().replace("\n", "\n     "))
    print(f"{passed} passed, {failed} failed")
    if failed == 0:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"the blocks and programs are kept in {work}")
    return 0 if failed == 0 and passed > 0 else 1


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


if __name__ == "__main__":
    sys.exit(main())
