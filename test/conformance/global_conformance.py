#!/usr/bin/env python3
"""Global-mode conformance: our runtime checker against the reference.

Enumerates small global SPMD programs (spec §12): inputs typed R, I, V, P or
S(d) on mesh axis `a` (sometimes also `b`), one op of a sharding rule family
(pointwise with broadcasting, contractions, linear and nonlinear reductions,
along-dim ops, norms, shape ops, cat/stack), sometimes followed by a global
collective (all_gather with src S(d), all_reduce, reduce_scatter to S(d)).
Each program runs through the reference (`spmd_types`, typecheck(local=False),
fake process group) and through our runtime checker (conformance_driver,
TypecheckOptions::local = false); verdicts (ok / error kind, failing step)
and result types ("{a:S(1)}": a V axis with a PartitionSpec entry prints as
S(d)) are compared. Every disagreement must match an entry of
global_known.json, each explained in docs/type-system.md §17.

usage:
  global_conformance.py --driver <conformance_driver> [--work DIR] [--list]
"""
import argparse
import contextlib
import io
import itertools
import json
import logging
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance as base  # noqa: E402

TYPES_2D = ["R", "I", "P", "V", "S0", "S1"]
TYPES_3D = ["R", "P", "S0", "S1", "S2"]
TYPES_1D = ["R", "P", "S0"]


def types_for(shape):
    return {1: TYPES_1D, 2: TYPES_2D, 3: TYPES_3D}[len(shape)]


# (op, operand shapes, extra step fields)
TEMPLATES = [
    ("add", [[4, 4], [4, 4]], {}),
    ("mul", [[4, 4], [4, 4]], {}),
    ("add", [[4, 4], [4]], {}),
    ("mm", [[4, 4], [4, 4]], {}),
    ("matmul", [[2, 4, 4], [4, 4]], {}),
    ("bmm", [[2, 4, 4], [2, 4, 4]], {}),
    ("linear", [[4, 4], [4, 4]], {}),
    ("linear", [[4, 4], [4, 4], [4]], {}),
    ("gelu", [[4, 4]], {}),
    ("sum_dim", [[4, 4]], {"dim": 0}),
    ("sum_dim", [[4, 4]], {"dim": 1}),
    ("sum", [[4, 4]], {}),
    ("mean_dim", [[4, 4]], {"dim": 1}),
    ("amax_dim", [[4, 4]], {"dim": 1}),
    ("softmax_dim", [[4, 4]], {"dim": -1}),
    ("softmax_dim", [[4, 4]], {"dim": 0}),
    ("layer_norm", [[4, 4]], {}),
    ("transpose01", [[2, 4, 4]], {}),
    ("t", [[4, 4]], {}),
    ("unsqueeze", [[4, 4]], {"dim": 0}),
    ("unsqueeze", [[4, 4]], {"dim": 2}),
    ("reshape", [[2, 4, 4]], {"size": [8, 4]}),
    ("reshape", [[2, 4, 4]], {"size": [2, 16]}),
    ("cat_dim", [[4, 4], [4, 4]], {"dim": 0}),
    ("cat_dim", [[4, 4], [4, 4]], {"dim": 1}),
    ("stack_dim", [[4, 4], [4, 4]], {"dim": 0}),
    ("narrow", [[4, 4]], {"dim": 0, "length": 2}),
    ("narrow", [[4, 4]], {"dim": 1, "length": 4}),
]

# Collectives after the op, on axis a (src is chosen from the result type).
FOLLOW = ["gather_shard", "all_reduce", "scatter_shard"]


def generate():
    programs = []

    def add(steps, axes=("a",)):
        programs.append({"id": len(programs), "axes": list(axes),
                         "strict": True, "global": True, "steps": steps})

    for op, shapes, extra in TEMPLATES:
        pools = [types_for(s) for s in shapes]
        for combo in itertools.product(*pools):
            steps = [{"op": "input", "shape": s, "type": {"a": t},
                      "requires_grad": False}
                     for s, t in zip(shapes, combo)]
            step = {"op": op, "args": list(range(len(shapes)))}
            step.update(extra)
            steps.append(step)
            add(steps)
    # Two axes: a sharding dim 0, b replicated / sharding dim 1 / partial.
    for op, shapes, extra in TEMPLATES:
        if len(shapes[0]) != 2:
            continue
        for tb in ["R", "S1", "P"]:
            steps = [{"op": "input", "shape": s,
                      "type": {"a": "S0" if k == 0 else "R",
                               "b": tb if k == 0 else "R"},
                      "requires_grad": False}
                     for k, s in enumerate(shapes)]
            step = {"op": op, "args": list(range(len(shapes)))}
            step.update(extra)
            steps.append(step)
            add(steps, axes=("a", "b"))
    # Collectives on a global axis: src from {S0, S1, P, R}, dst legal.
    for t in ["S0", "S1", "P", "R", "V"]:
        for coll, src, dst in [("gather_shard", "S0", "R"),
                               ("gather_shard", "S1", "R"),
                               ("all_reduce", "P", "R"),
                               ("scatter_shard", "P", "S0"),
                               ("scatter_shard", "P", "S1"),
                               ("all_gather", "V", "R")]:
            add([{"op": "input", "shape": [4, 4], "type": {"a": t},
                  "requires_grad": False},
                 {"op": coll, "args": [0], "axis": "a", "src": src,
                  "dst": dst}])
    return {"programs": programs}


class GlobalReference(base.Reference):
    def __init__(self):
        super().__init__()
        from spmd_types.runtime import get_partition_spec
        self.get_partition_spec = get_partition_spec
        for d in range(3):
            self.T["S%d" % d] = self.st.S(d)

    def tstr(self, x):
        m = self.get_local_type(x)
        spec = self.get_partition_spec(x)
        out = {}
        for k, v in m.items():
            name = self.axis_name.get(k, str(k))
            t = self.name_of_type.get(v, str(v))
            if t == "V" and spec is not None:
                for d, entry in enumerate(spec):
                    axes = entry if isinstance(entry, tuple) else (entry,)
                    if any(a is not None and (a == k or getattr(a, "name", None)
                                              == getattr(k, "name", 0))
                           for a in axes):
                        t = "S(%d)" % d
            out[name] = t
        return base.type_str(out)

    def step(self, s, vals):
        torch, st = self.torch, self.st
        op = s["op"]
        args = [vals[i] for i in s.get("args", [])]
        F = torch.nn.functional
        if op == "bmm":
            return torch.bmm(*args)
        if op == "linear":
            return F.linear(*args)
        if op == "gelu":
            return F.gelu(args[0])
        if op in ("sum_dim", "mean_dim", "amax_dim"):
            return getattr(torch, op[:-4])(args[0], [s["dim"]])
        if op == "softmax_dim":
            return torch.softmax(args[0], s["dim"])
        if op == "transpose01":
            return torch.transpose(args[0], 0, 1)
        if op == "unsqueeze":
            return torch.unsqueeze(args[0], s["dim"])
        if op == "reshape":
            return torch.reshape(args[0], s["size"])
        if op == "cat_dim":
            return torch.cat(args, s["dim"])
        if op == "stack_dim":
            return torch.stack(args, s["dim"])
        if op == "layer_norm":
            return F.layer_norm(args[0], [args[0].shape[-1]])
        if op == "narrow":
            return torch.narrow(args[0], s["dim"], 0, s["length"])
        if op == "gather_shard":
            return st.all_gather(args[0], self.pg[s["axis"]],
                                 src=self.T[s["src"]], dst=self.T[s["dst"]])
        if op == "scatter_shard":
            return st.reduce_scatter(args[0], self.pg[s["axis"]],
                                     src=self.T[s["src"]],
                                     dst=self.T[s["dst"]])
        return super().step(s, vals)

    def run_program(self, prog, checking=True):
        tc = self.typecheck
        self.typecheck = lambda strict_mode: tc(strict_mode=strict_mode,
                                                local=False)
        try:
            return super().run_program(prog, checking)
        finally:
            self.typecheck = tc


def describe(prog):
    parts = []
    for s in prog["steps"]:
        if s["op"] == "input":
            parts.append("%s%s" % (base.type_str(s["type"]), s["shape"]))
        else:
            extra = {k: v for k, v in s.items() if k not in ("op", "args")}
            parts.append("%s%s" % (s["op"], json.dumps(extra) if extra else ""))
    return " ; ".join(parts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--driver", required=True)
    ap.add_argument("--work", default="global_conformance_work")
    ap.add_argument("--known", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "global_known.json"))
    ap.add_argument("--list", action="store_true",
                    help="print every disagreement")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    doc = generate()
    progs_path = os.path.join(a.work, "global_programs.json")
    ours_path = os.path.join(a.work, "global_ours.json")
    with open(progs_path, "w") as f:
        json.dump(doc, f)
    subprocess.run([a.driver, progs_path, ours_path], check=True)
    with open(ours_path) as f:
        ours = {r["id"]: r for r in json.load(f)["results"]}
    logging.disable(logging.CRITICAL)
    with contextlib.redirect_stderr(io.StringIO()):
        ref_runner = GlobalReference()
        ref = {r["id"]: r for r in
               (ref_runner.run_program(p) for p in doc["programs"])}
    known = []
    if os.path.exists(a.known):
        with open(a.known) as f:
            known = json.load(f)["known"]
    agree, explained, unexplained = 0, {}, []
    steps = 0
    for p in doc["programs"]:
        r, o = ref[p["id"]], ours[p["id"]]
        steps += len(p["steps"])
        if (r["verdict"], r["step"], r["types"]) == (
                o["verdict"], o["step"], o["types"]):
            agree += 1
            continue
        text = "%s | ref: %s@%d %s %s | ours: %s@%d %s %s" % (
            describe(p), r["verdict"], r["step"], r["types"][-1:],
            r["message"][:160], o["verdict"], o["step"], o["types"][-1:],
            o["message"][:160])
        for k in known:
            if re.search(k["match"], text):
                explained.setdefault(k["cause"], []).append(text)
                break
        else:
            unexplained.append(text)
    n = len(doc["programs"])
    print("global conformance: %d programs (%d steps), %d agree (%.1f %%), "
          "%d explained disagreements, %d unexplained" % (
              n, steps, agree, 100.0 * agree / n,
              sum(len(v) for v in explained.values()), len(unexplained)))
    for cause, items in explained.items():
        print("  %4d  %s" % (len(items), cause))
        if a.list:
            for t in items:
                print("        " + t)
    for t in unexplained:
        print("UNEXPLAINED: " + t)
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
