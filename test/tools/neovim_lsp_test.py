#!/usr/bin/env python3
"""spmd-clangd in a real editor: Debian's Neovim, headless, with its built-in
LSP client (neovim_lsp.lua) opens a file with two SPMD errors, receives the
diagnostics, applies the quick fixes the server offers one by one, and sees
the SPMD diagnostics clear.

usage: neovim_lsp_test.py <nvim> <spmd-clangd> <clangd> <source-dir> <work-dir>
The times to the first diagnostics (clangd's own and spmd-check's) are
printed, never asserted.
"""
import json
import os
import subprocess
import sys

from project import make_project

NVIM, PROXY, CLANGD, SOURCE_DIR, WORKDIR = sys.argv[1:6]
HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT_S = 240  # a loaded 2-core machine


def fail(what, detail=""):
    print("FAILED:", what)
    if detail:
        print(detail)
    sys.exit(1)


def main():
    src, _ = make_project(WORKDIR, SOURCE_DIR)
    path = os.path.join(src, "bad.cpp")
    # Something clangd itself reports (-Wall is in the compile command), to
    # time clangd's own first diagnostic beside ours.
    with open(path, "a") as f:
        f.write("\nint unused_local() {\n  int unused = 0;\n  return 1;\n}\n")
    out = os.path.join(WORKDIR, "nvim-result.json")
    env = dict(os.environ, SPMD_PROXY=PROXY, SPMD_CLANGD=CLANGD,
               SPMD_FILE=path, SPMD_ROOT=os.path.dirname(src), SPMD_OUT=out,
               SPMD_TIMEOUT_MS=str(TIMEOUT_S * 1000 // 4),
               XDG_STATE_HOME=os.path.join(WORKDIR, "state"),
               XDG_DATA_HOME=os.path.join(WORKDIR, "data"),
               XDG_CONFIG_HOME=os.path.join(WORKDIR, "config"))
    cmd = [NVIM, "--headless", "--clean", "-n", "-i", "NONE",
           "-S", os.path.join(HERE, "neovim_lsp.lua")]
    try:
        proc = subprocess.run(cmd, env=env, cwd=src, capture_output=True,
                              text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        fail("neovim finished within %d s" % TIMEOUT_S)
    if not os.path.exists(out):
        fail("neovim wrote its result", proc.stdout + proc.stderr)
    with open(out) as f:
        result = json.load(f)
    print(json.dumps(result, indent=1))
    if result.get("status") != "done":
        fail("the client script ran to the end: " + result.get("status", "?"),
             result.get("error", ""))
    steps = {s["name"]: s["value"] for s in result["steps"]}
    codes = sorted(d["code"] for d in steps["diagnostics"])
    if codes != ["collective-input", "op-type"]:
        fail("both SPMD diagnostics reached the editor, with their kinds: %s"
             % codes)
    print("ok: the editor shows both SPMD diagnostics")
    applied = steps.get("applied", [])
    if sorted(a["code"] for a in applied) != ["collective-input", "op-type"]:
        fail("a quick fix was offered and applied for each: %s" % applied)
    print("ok: a quick fix applied for each:",
          "; ".join(a["title"] for a in applied))
    if result["remaining"] != 0:
        fail("the SPMD diagnostics cleared after the fixes", result["text"])
    print("ok: the SPMD diagnostics cleared after the fixes")
    for fixed in ("  return x;\n",
                  "torch::matmul(spmd::convert(x, tp, spmd::I, spmd::R), w1)"):
        if fixed not in result["text"]:
            fail("the fixed text has " + repr(fixed), result["text"])
    print("ok: the fixed text is what the fix-its say")
    print("first diagnostic: clangd's own %.2f s, spmd-check's %.2f s" %
          (result["first_own_s"] or -1, result["first_spmd_s"] or -1))


main()
