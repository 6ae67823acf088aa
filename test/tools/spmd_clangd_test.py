#!/usr/bin/env python3
"""spmd-clangd driven by a scripted LSP client against the real clangd.

usage: spmd_clangd_test.py <case> <spmd-clangd> <clangd> <source-dir> <work-dir>
Cases: diagnostics (merge, related information, quick fixes, edits, stale
results, shutdown/exit), crash (a crashing analysis is contained),
clangd_exit (the proxy follows clangd out),
header_annotations (annotations in headers are never lost to the preamble),
latency (re-checks reuse the preamble; times printed, never asserted).
"""
import os
import re
import statistics
import sys
import time

from lsp_client import LspClient
from project import make_project

CASE, PROXY, CLANGD, SOURCE_DIR, WORKDIR = sys.argv[1:6]
SRC, BUILD = make_project(WORKDIR, SOURCE_DIR)
INPUTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs",
                      "project")
# The document is clean.cpp; the editor's unsaved text differs from the disk.
PATH = os.path.join(SRC, "clean.cpp")
URI = "file://" + PATH
# Something clangd itself reports (-Wall is in the compile command).
CLANGD_WARNING = "\nint unused_local() {\n  int unused = 0;\n  return 1;\n}\n"
BAD_TEXT = open(os.path.join(INPUTS, "bad.cpp")).read() + CLANGD_WARNING
GOOD_TEXT = open(os.path.join(INPUTS, "clean.cpp")).read() + CLANGD_WARNING
TIMEOUT = 120  # seconds; generous for a loaded 2-core machine


def check(cond, what, client=None):
    if not cond:
        print("FAILED:", what)
        if client is not None:
            print("--- server stderr ---")
            print("\n".join(client.stderr_lines[-60:]))
        sys.exit(1)
    print("ok:", what)


def start(extra=()):
    client = LspClient([PROXY, "--clangd=" + CLANGD,
                        "--background-index=false"] + list(extra), cwd=SRC)
    rid = client.request("initialize", {
        "processId": os.getpid(),
        "rootUri": "file://" + os.path.dirname(SRC),
        "capabilities": {"textDocument": {
            "publishDiagnostics": {"relatedInformation": True,
                                   "codeActionsInline": True,
                                   "versionSupport": True},
            "codeAction": {"codeActionLiteralSupport": {
                "codeActionKind": {"valueSet": ["quickfix"]}}}}},
    })
    resp = client.response(rid, TIMEOUT)
    check("capabilities" in resp.get("result", {}),
          "initialize answered by clangd through the proxy", client)
    client.notify("initialized", {})
    return client


def spmd(diags):
    return [d for d in diags if d.get("source") == "spmd-check"]


def clangd_own(diags):
    return [d for d in diags if d.get("source") != "spmd-check"]


def is_publish(m):
    return (m.get("method") == "textDocument/publishDiagnostics" and
            m["params"]["uri"] == URI)


def wait_publish(client, predicate, what):
    return client.wait_for(lambda m: is_publish(m) and predicate(
        m["params"]["diagnostics"]), TIMEOUT, what)["params"]["diagnostics"]


def did_change(client, version, changes, uri=URI):
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": version},
        "contentChanges": changes})


def whole_range(text):
    lines = text.split("\n")
    return {"start": {"line": 0, "character": 0},
            "end": {"line": len(lines) - 1, "character": len(lines[-1])}}


def shutdown(client):
    rid = client.request("shutdown", None)
    client.response(rid, TIMEOUT)
    client.notify("exit", None)
    try:
        code = client.proc.wait(timeout=TIMEOUT)
    except Exception:
        client.proc.kill()
        check(False, "proxy exits after shutdown/exit", client)
    check(code == 0, "shutdown/exit: proxy exits with status 0", client)


def checked_lines(client):
    return [l for l in client.stderr_lines if "spmd-clangd: checked" in l]


def case_diagnostics():
    client = start()
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": URI, "languageId": "cpp", "version": 1, "text": BAD_TEXT}})
    diags = wait_publish(
        client, lambda d: len(spmd(d)) == 2 and clangd_own(d),
        "SPMD and clangd diagnostics for the unsaved text")
    check(any("unused" in d["message"] for d in clangd_own(diags)),
          "clangd's own diagnostic is kept", client)
    by_code = {d["code"]: d for d in spmd(diags)}
    check(set(by_code) == {"collective-input", "op-type"},
          "both SPMD diagnostics, with their kinds as codes", client)
    ci = by_code["collective-input"]
    check(ci["range"]["start"] == {"line": 5, "character": 26} and
          ci["severity"] == 1 and
          "expected input type P on axis tp, got R" in ci["message"],
          "collective-input at 6:27, severity error", client)
    check(ci["codeDescription"]["href"].endswith("tools.md#collective-input"),
          "codeDescription links the rule's documentation", client)
    rel = ci["relatedInformation"]
    check(len(rel) == 1 and rel[0]["location"]["uri"] == URI and
          rel[0]["location"]["range"]["start"]["line"] == 4 and
          "declared here" in rel[0]["message"],
          "the note is relatedInformation", client)
    op = by_code["op-type"]
    check(op["range"]["start"] == {"line": 12, "character": 9} and
          op["range"]["end"]["character"] > 9, "op-type range", client)
    check(any("spmd::convert(" in e["newText"]
              for a in op.get("codeActions", [])
              for e in a["edit"]["changes"][URI]),
          "fix-it inline as a code action (codeActionsInline)", client)

    rid = client.request("textDocument/codeAction", {
        "textDocument": {"uri": URI}, "range": op["range"],
        "context": {"diagnostics": [op]}})
    actions = client.response(rid, TIMEOUT)["result"]
    fixes = [a for a in actions if a.get("kind") == "quickfix" and
             "spmd::convert" in a["title"]]
    check(len(fixes) == 1 and fixes[0]["diagnostics"][0]["code"] == "op-type"
          and any("spmd::convert(" in e["newText"]
                  for e in fixes[0]["edit"]["changes"][URI]),
          "textDocument/codeAction answer carries the quick fix", client)

    # An incremental edit (a range) that fixes both errors.
    did_change(client, 2, [{"range": whole_range(BAD_TEXT),
                            "text": GOOD_TEXT}])
    client.wait_stderr("(version 2)", TIMEOUT)
    diags = wait_publish(client, lambda d: not spmd(d) and clangd_own(d),
                         "the SPMD diagnostics gone after the fix")
    check(True, "didChange that fixes the errors: SPMD diagnostics gone")

    # A buggy version immediately replaced by a fixed one: the result for
    # version 3 is stale by the time it is ready and must never be shown.
    seen = len(client.received)
    did_change(client, 3, [{"text": BAD_TEXT}])
    did_change(client, 4, [{"text": GOOD_TEXT}])
    client.wait_stderr("(version 4)", TIMEOUT)
    try:
        client.wait_for(lambda m: False, 3, "settling")
    except TimeoutError:
        pass
    later = [m for m in client.received[seen:] if is_publish(m)]
    check(all(not spmd(m["params"]["diagnostics"]) for m in later),
          "results for a superseded version (3) are never shown", client)

    # Back to the bug, by an edit inside a line: the error returns.
    did_change(client, 5, [{"text": BAD_TEXT}])
    wait_publish(client, lambda d: len(spmd(d)) == 2,
                 "SPMD diagnostics back for version 5")
    client.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
    shutdown(client)
    for line in checked_lines(client):
        print(line)


def case_crash():
    marker = "SPMD_TEST_CRASH"
    client = start(["--spmd-test-crash-marker=" + marker])
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": URI, "languageId": "cpp", "version": 1,
        "text": BAD_TEXT + "// " + marker + "\n"}})
    log = client.wait_for(
        lambda m: m.get("method") == "window/logMessage" and
        "crashed" in m["params"]["message"], TIMEOUT,
        "a log message about the crash")
    check(log["params"]["type"] == 1, "the crash is logged as an error",
          client)
    wait_publish(client, lambda d: clangd_own(d) and not spmd(d),
                 "clangd's diagnostics still published")
    did_change(client, 2, [{"text": BAD_TEXT}])
    wait_publish(client, lambda d: len(spmd(d)) == 2,
                 "the proxy keeps working after the crash")
    check(True, "analysis crash contained; proxy and clangd alive")
    shutdown(client)


def case_clangd_exit():
    # clangd dying under the editor: the proxy exits too (the editor then
    # restarts it) instead of swallowing the editor's messages.
    import signal
    import subprocess
    client = start()
    kids = subprocess.run(["pgrep", "-P", str(client.proc.pid)],
                          capture_output=True, text=True).stdout.split()
    check(len(kids) == 1, "the proxy runs one clangd", client)
    os.kill(int(kids[0]), signal.SIGKILL)
    try:
        code = client.proc.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        client.proc.kill()
        check(False, "proxy exits when clangd dies", client)
    check(code != 0, "proxy exits with a failure status when clangd dies",
          client)
    client.wait_stderr("clangd exited unexpectedly", TIMEOUT)


def case_header_annotations():
    # The annotations of a header are parsed into the checker's own table,
    # which a precompiled preamble cannot carry: the proxy must not use the
    # preamble then, or the call-argument error below would be missed.
    import shutil
    for name in ("annotated.h", "header_user.cpp"):
        shutil.copy(os.path.join(INPUTS, name), SRC)
    path = os.path.join(SRC, "header_user.cpp")
    uri = "file://" + path
    text = open(path).read()
    client = start()
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "cpp", "version": 1, "text": text}})
    pub = client.wait_for(
        lambda m: m.get("method") == "textDocument/publishDiagnostics" and
        m["params"]["uri"] == uri and spmd(m["params"]["diagnostics"]),
        TIMEOUT, "the call-argument error")
    d = spmd(pub["params"]["diagnostics"])[0]
    check(d["code"] == "call-argument" and
          any(r["location"]["uri"].endswith("/annotated.h")
              for r in d["relatedInformation"]),
          "call-argument found, with a note in the header", client)
    check("preamble unusable" in client.wait_stderr("(version 1)", TIMEOUT),
          "the preamble holding annotations is not used", client)
    # Edit the body (same preamble): still found.
    did_change(client, 2, [{"text": text + "// edit\n"}], uri)
    line = client.wait_stderr("(version 2)", TIMEOUT)
    check("1 SPMD diagnostic" in line, "still found after an edit", client)
    shutdown(client)


def case_latency():
    client = start()
    text = BAD_TEXT
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": URI, "languageId": "cpp", "version": 1, "text": text}})
    client.wait_stderr("(version 1)", TIMEOUT)
    runs = 10
    for v in range(2, runs + 2):
        # Typing: append a comment line, one re-check per version.
        text += "// edit %d\n" % v
        did_change(client, v, [{"text": text}])
        client.wait_stderr("(version %d)" % v, TIMEOUT)
    shutdown(client)
    pat = re.compile(r"analysis ([\d.]+) ms, frontend total ([\d.]+) ms "
                     r"\(cpu ([\d.]+) ms\)")
    analysis, total, cpu = [], [], []
    for line in checked_lines(client)[1:]:
        m = pat.search(line)
        analysis.append(float(m.group(1)))
        total.append(float(m.group(2)))
        cpu.append(float(m.group(3)))
    check(len(analysis) == runs, "one re-check per edit", client)
    check(all("preamble reused" in l for l in checked_lines(client)[1:]),
          "re-checks reuse the precompiled preamble", client)
    print("re-checks: %d; SPMD analysis median %.1f ms (max %.1f); whole "
          "frontend run (preprocess + parse + analysis) median %.1f ms wall "
          "(max %.1f), %.1f ms CPU" %
          (runs, statistics.median(analysis), max(analysis),
           statistics.median(total), max(total), statistics.median(cpu)))


CASES = {name[5:]: f for name, f in globals().items()
         if name.startswith("case_")}
if CASE not in CASES:
    sys.exit("unknown case %r; cases: %s" % (CASE, ", ".join(CASES)))
CASES[CASE]()
