#!/usr/bin/env python3
"""Plugin on vs off, frontend time (clang -fsyntax-only), one run of tables.

(a) a realistic libtorch-including translation unit (libtorch_tu.cpp);
(e) a real engine translation unit (examples/tp_transformer_block/train.cpp,
    C++20, libtorch's headers), the checker's own time in local, strict,
    global and strict global mode as ratios to local mode and to the compile
    without the plugin (with --callgrind, also the instructions executed
    inside the checker, which load on the machine does not change);
(b) generated translation units of N annotated statements (100 .. 100000),
    against the test suite's declarations-only mini libtorch so that the
    plugin's own cost is what grows.

Plugin off and on are compiled alternately, REPEAT times each (interleaved,
so that a change of load hits both alike), and the median wall time and the
median CPU time (user + system of the compiler process, less sensitive to
other load than wall time) of each are reported with the added percentage.
The libtorch headers are those of the torch package in the project's virtual
environment (.venv, or $SPMD_VENV), as CMake finds them
(cmake/SpmdTorch.cmake); --torch-include names another include directory.
The load average at the start of each table is printed: on a shared machine
wall times are only as good as it. Ratios are computed within one run of
this script; no absolute time is asserted anywhere.

(c) one function of N variables, each assigned in its own branch (issue
    17: the per-block state must not grow into a quadratic cost);
(d) one function with N diagnostics (the reporter's sorting and notes).

Usage: plugin_bench.py [--build build] [--plugin path/to/spmd-check.so]
                       [--annotations other/annotations/include]
                       [--repeat 3] [--sizes 100,1000,...]
                       [--branches 1000,2000,...] [--diagnostics 5000]
                       [--skip-libtorch] [--torch-include dir]
                       [--callgrind] [--out results.md]
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

STATS = "-fplugin-arg-spmd-check-stats"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def clang():
    for c in ("clang++-19", "clang++"):
        if subprocess.call(["which", c], stdout=subprocess.DEVNULL) == 0:
            return c
    sys.exit("clang++-19 not found")


def run_once(cmd, allow_errors=False):
    """One compile: wall seconds, CPU seconds (user + system of the child)
    and the plugin's own time (ms, from -fplugin-arg-spmd-check-stats) or
    None."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    err = [l for l in r.stderr.decode().splitlines()
           if not l.startswith("spmd-check: ")]
    if not allow_errors and (r.returncode != 0 or err):
        sys.exit("compile failed or produced diagnostics:\n" + " ".join(cmd) +
                 "\n" + "\n".join(err)[:4000])
    ms = None
    for l in r.stderr.decode().splitlines():
        if l.startswith("spmd-check: "):
            ms = float(l.rsplit(",", 1)[1].split()[0])
    return dt, cpu, ms


def compare(off_cmd, on_cmd, repeat, allow_errors=False):
    """Plugin off and on, alternately, `repeat` times each: the medians of
    wall time, CPU time and (plugin on) the checker's own time."""
    offs, ons = [], []
    for _ in range(repeat):
        offs.append(run_once(off_cmd, allow_errors))
        ons.append(run_once(on_cmd, allow_errors))
    med = statistics.median
    own = [m for _, _, m in ons if m is not None]
    return {"off": med(w for w, _, _ in offs), "on": med(w for w, _, _ in ons),
            "off_cpu": med(c for _, c, _ in offs),
            "on_cpu": med(c for _, c, _ in ons),
            "ms": med(own) if own else float("nan")}


def torch_include(explicit):
    """The -isystem flags of libtorch's headers: \p explicit, else those of
    the torch package of the project's virtual environment (the one
    cmake/SpmdTorch.cmake takes libtorch from)."""
    if explicit:
        inc = explicit
    else:
        venv = os.environ.get("SPMD_VENV", os.path.join(ROOT, ".venv"))
        py = os.path.join(venv, "bin", "python")
        if not os.path.exists(py):
            sys.exit(f"{py} not found: run scripts/install-deps.sh, set "
                     "SPMD_VENV, or pass --torch-include <libtorch>/include "
                     "(or --skip-libtorch)")
        r = subprocess.run([py, "-c", "import os, torch; print(os.path.join("
                            "os.path.dirname(torch.__file__), 'include'))"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True)
        if r.returncode != 0:
            sys.exit(f"{py} cannot import torch: run scripts/install-deps.sh "
                     "or pass --torch-include <libtorch>/include")
        inc = r.stdout.strip()
    api = os.path.join(inc, "torch/csrc/api/include")
    if not os.path.exists(os.path.join(api, "torch/torch.h")):
        sys.exit(f"{api}/torch/torch.h not found: pass --torch-include "
                 "<libtorch>/include")
    return ["-isystem", inc, "-isystem", api]


MODES = [("local", []), ("strict", ["-fplugin-arg-spmd-check-strict"]),
         ("global", ["-fplugin-arg-spmd-check-global"]),
         ("strict global", ["-fplugin-arg-spmd-check-strict",
                            "-fplugin-arg-spmd-check-global"])]


def callgrind_ir(cmd):
    """The instructions executed inside checkTranslationUnit (callgrind,
    collection toggled on around it) for one compile."""
    with tempfile.TemporaryDirectory() as tmp, \
            tempfile.TemporaryDirectory() as lib:
        # valgrind gives up on clang-19's DWARF 5: a copy of the plugin
        # without debug information (its symbols, which the toggle names,
        # stay).
        for i, c in enumerate(cmd):
            if c.startswith("-fplugin="):
                so = os.path.join(lib, "spmd-check.so")
                subprocess.run(["objcopy", "--strip-debug",
                                c[len("-fplugin="):], so], check=True)
                cmd = cmd[:i] + ["-fplugin=" + so] + cmd[i + 1:]
        out = os.path.join(tmp, "cg.out")
        subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes",
                        f"--callgrind-out-file={out}.%p",
                        "--toggle-collect=*checkTranslationUnit*"] + cmd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        total = 0
        for name in os.listdir(tmp):
            with open(os.path.join(tmp, name)) as f:
                for line in f:
                    if line.startswith("summary:") or line.startswith("totals:"):
                        total = max(total, int(line.split()[1]))
        return total


def engine_modes(base, inc, plugin, repeat, use_callgrind):
    """(e): the real engine TU, plugin off and on in each mode,
    interleaved; returns the table's lines."""
    src = os.path.join(ROOT, "examples/tp_transformer_block/train.cpp")
    cmd = [c if c != "-std=c++17" else "-std=c++20" for c in base]
    cmd += inc + ["-I" + os.path.join(ROOT, "examples/tp_transformer_block"),
                  "-DUSE_C10D_GLOO", "-DUSE_DISTRIBUTED", "-w"]
    off = cmd + [src]
    ons = [(m, cmd + [f"-fplugin={plugin}", STATS] + f + [src]) for m, f in MODES]
    offs, own, walls = [], {m: [] for m, _ in MODES}, {m: [] for m, _ in MODES}
    for _ in range(repeat):
        offs.append(run_once(off)[0])
        for m, c in ons:
            w, _, ms = run_once(c, allow_errors=True)
            walls[m].append(w)
            own[m].append(ms)
    med = statistics.median
    off_s = med(offs)
    local = med(own["local"])
    lines = ["(e) real engine translation unit (examples/tp_transformer_block/"
             f"train.cpp, libtorch headers), median of {repeat} interleaved "
             f"runs, {load()}", "",
             "| mode | compile (s) | checker's own time (ms) | own / local | own / compile without plugin |"
             + (" checker's instructions (callgrind) | instructions / local |" if use_callgrind else ""),
             "|---|---|---|---|---|" + ("---|---|" if use_callgrind else "")]
    lines.append(f"| plugin off | {off_s:.2f} | | | |" + (" | |" if use_callgrind else ""))
    ir = {m: callgrind_ir(c) for m, c in ons} if use_callgrind else {}
    for m, _ in MODES:
        o = med(own[m])
        row = (f"| {m} | {med(walls[m]):.2f} | {o:.1f} | {o / local:.2f} | "
               f"{100 * o / 1000 / off_s:.2f}% |")
        if use_callgrind:
            row += f" {ir[m]:,} | {ir[m] / max(ir['local'], 1):.2f} |"
        lines.append(row)
    return lines + [""]


def added(r, key=""):
    off, on = r["off" + key], r["on" + key]
    return f"{100 * (on - off) / off:+.1f}%"


def load():
    return "load average %.1f %.1f %.1f, %d CPUs" % (os.getloadavg() +
                                                     (os.cpu_count(),))


FUNC = """
SPMD_TYPE(dp = V, tp = I)
Tensor block{k}(SPMD_TYPE(dp = V, tp = I) const Tensor& x,
              SPMD_TYPE(dp = R, tp = V) const Tensor& w1,
              SPMD_TYPE(dp = R, tp = V) const Tensor& w2, int n) {{
  Tensor acc = x;
  for (int i = 0; i < n; ++i) {{
{body}
    acc = spmd::all_reduce(spmd::reinterpret(v{last}, tp, V, P), tp, P, I);
  }}
  return acc;
}}
"""


def generate(n_statements, per_function=50):
    """N statements in functions of `per_function` statements each."""
    out = ['#include "Inputs/prelude.h"', ""]
    k = 0
    remaining = n_statements
    while remaining > 0:
        m = min(per_function, remaining)
        lines = ["    auto v0 = spmd::convert(acc, tp, I, R);"]
        for i in range(1, m - 1):
            op = i % 4
            if op == 0:
                lines.append(f"    auto v{i} = torch::matmul(v{i-1}, w1);")
            elif op == 1:
                lines.append(f"    auto v{i} = torch::relu(v{i-1});")
            elif op == 2:
                lines.append(f"    auto v{i} = v{i-1} * 0.5 + v{i-1};")
            else:
                lines.append(f"    auto v{i} = torch::matmul(v{i-1}, w2.t());")
        last = max(0, m - 2)
        out.append(FUNC.format(k=k, body="\n".join(lines), last=last))
        remaining -= m
        k += 1
    return "\n".join(out)


BRANCHES = """
void branches(bool c, SPMD_TYPE(tp = R) const Tensor& r) {{
{body}
}}
"""


def generate_branches(n):
    """One function: n variables, each assigned again in its own branch."""
    body = []
    for i in range(n):
        body.append(f"  Tensor x{i} = r + r;")
        body.append(f"  if (c) x{i} = torch::relu(x{i});")
    return '#include "Inputs/prelude.h"\n' + BRANCHES.format(body="\n".join(body))


def generate_diagnostics(n):
    """One function with n op-type errors (relu of a pending sum)."""
    body = [f"  Tensor y{i} = torch::relu(p);" for i in range(n)]
    return ('#include "Inputs/prelude.h"\n'
            "void errors(SPMD_TYPE(tp = P) const Tensor& p) {\n" +
            "\n".join(body) + "\n}\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default="100,1000,10000,100000")
    ap.add_argument("--plugin", help="the plugin to measure (default: the build's)")
    ap.add_argument("--annotations",
                    help="the include directory of spmd/annotations.h to measure "
                         "(default: annotations/include)")
    ap.add_argument("--branches", default="1000,2000,5000,10000")
    ap.add_argument("--diagnostics", default="5000")
    ap.add_argument("--skip-libtorch", action="store_true")
    ap.add_argument("--skip-engine", action="store_true",
                    help="skip (e), the real engine translation unit")
    ap.add_argument("--torch-include",
                    help="libtorch's include directory (default: the venv's torch)")
    ap.add_argument("--callgrind", action="store_true",
                    help="(e) also counts the checker's instructions (slow)")
    ap.add_argument("--out")
    a = ap.parse_args()
    plugin = a.plugin or os.path.join(a.build, "lib", "spmd-check.so")
    if not os.path.exists(plugin):
        sys.exit(f"{plugin} not built")
    cxx = clang()
    inc = ["-I" + (a.annotations or os.path.join(ROOT, "annotations/include"))]
    inc += ["-I" + os.path.join(ROOT, p) for p in ("runtime/include", "core/include")]
    base = [cxx, "-std=c++17", "-fsyntax-only"]
    lines = []

    if not a.skip_libtorch:
        src = os.path.join(ROOT, "bench/plugin/libtorch_tu.cpp")
        tinc = torch_include(a.torch_include)
        lines += ["(a) libtorch translation unit (bench/plugin/libtorch_tu.cpp), " +
                  f"median of {a.repeat} interleaved runs, {load()}", ""]
        r = compare(base + inc + tinc + [src],
                    base + inc + tinc + [f"-fplugin={plugin}", STATS, src], a.repeat)
        lines += ["| plugin off (s) | plugin on (s) | added (wall) | added (CPU) | checker's own time (ms) | own / off |",
                  "|---|---|---|---|---|---|",
                  f"| {r['off']:.2f} | {r['on']:.2f} | {added(r)} | {added(r, '_cpu')} | {r['ms']:.1f} | {100 * r['ms'] / 1000 / r['off']:.2f}% |", ""]
        print("\n".join(lines), flush=True)
        if not a.skip_engine:
            e = engine_modes(base, inc + tinc, plugin, a.repeat, a.callgrind)
            lines += e
            print("\n".join(e), flush=True)

    lines += ["(b) generated translation units (mini libtorch), " +
              f"median of {a.repeat} interleaved runs, {load()}", "",
              "| statements | plugin off (s) | plugin on (s) | added (wall) | CPU off (s) | CPU on (s) | added (CPU) | checker's own time (ms) | own time per 1000 statements (ms) |",
              "|---|---|---|---|---|---|---|---|---|"]
    test_dir = os.path.join(ROOT, "test/plugin")
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(s) for s in a.sizes.split(",")]:
            path = os.path.join(tmp, f"gen_{n}.cpp")
            with open(path, "w") as f:
                f.write(generate(n))
            minc = inc + ["-I" + test_dir, "-I" + os.path.join(test_dir, "Inputs/mini-torch")]
            r = compare(base + minc + [path],
                        base + minc + [f"-fplugin={plugin}", STATS, path], a.repeat)
            lines.append(f"| {n} | {r['off']:.3f} | {r['on']:.3f} | {added(r)} | "
                         f"{r['off_cpu']:.3f} | {r['on_cpu']:.3f} | {added(r, '_cpu')} | "
                         f"{r['ms']:.1f} | {1000 * r['ms'] / n:.2f} |")
            print(lines[-1], flush=True)

        minc = inc + ["-I" + test_dir, "-I" + os.path.join(test_dir, "Inputs/mini-torch")]
        shapes = [("(c) one function, N variables across N branches", "variables",
                   a.branches, generate_branches, False),
                  ("(d) one function with N diagnostics", "diagnostics",
                   a.diagnostics, generate_diagnostics, True)]
        for title, what, sizes, gen, errors in shapes:
            if not sizes:
                continue
            lines += ["", title, "",
                      f"| {what} | plugin off (s) | plugin on (s) | checker's own time (ms) |",
                      "|---|---|---|---|"]
            for n in [int(s) for s in sizes.split(",")]:
                path = os.path.join(tmp, f"{what}_{n}.cpp")
                with open(path, "w") as f:
                    f.write(gen(n))
                r = compare(base + minc + [path],
                            base + minc + [f"-fplugin={plugin}", STATS, path],
                            a.repeat, allow_errors=errors)
                lines.append(f"| {n} | {r['off']:.3f} | {r['on']:.3f} | {r['ms']:.1f} |")
                print(lines[-1], flush=True)
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
