#!/usr/bin/env python3
"""Differential test: our runtime checker against the reference `spmd_types`.

Seeded random typed programs (ops of core's op registry, collectives with
legal and illegal src/dst, types on 1-3 mesh axes of size 2, strict or
permissive, local SPMD) are written as JSON, run through the reference's
checker (`spmd_types`, fake process group, one process) and through our
runtime checker (the C++ driver conformance_driver, fake backend), and the
verdicts (ok or error kind, failing step) and the result type of every step
are compared. Every disagreement must match an entry of known.json, each of
which is explained in docs/type-system.md ("Conformance with the reference").

usage:
  conformance.py generate --seed S --count N --out programs.json
  conformance.py reference programs.json results.json [--repeat K]
  conformance.py compare programs.json ref.json ours.json [--known known.json]
  conformance.py run --driver <conformance_driver> [--seed S] [--count N]
                     [--work DIR] [--time]
      generate + both runs + compare (the ctest and `make bench` entry;
      the reference runs in this interpreter: use the project's venv).
"""
import argparse
import contextlib
import json
import os
import random
import re
import subprocess
import sys
import time

AXES = ["a", "b", "c"]
TYPES = ["R", "I", "V", "P"]

# name -> (arity, needs 2-D operands, result shape: "same" | "0d" | "other")
# "other" results are not used by later steps (shapes differ by backend).
BINARY = ["add", "sub", "mul", "div", "maximum"]
MATMUL = ["matmul", "mm"]
UNARY_SAME = ["neg", "clone", "relu", "exp", "tanh", "sigmoid", "abs"]
UNARY_2D = ["t", "transpose", "cumsum", "softmax", "flip"]
REDUCE = ["sum", "mean"]
SCALAR = ["add_scalar", "sub_scalar", "mul_scalar", "div_scalar"]
INPLACE = ["add_", "mul_"]
LISTS = ["cat", "stack"]
FACTORIES = ["zeros", "ones", "randn"]
COLLECTIVES = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all",
               "convert", "reinterpret", "redistribute", "shard", "unshard",
               "invariant_to_replicate"]
# Ops with a typed scalar operand (the reference's Scalar(value, type); ours
# checker::typed_scalar, a typed 0-d tensor).
TYPED_SCALAR = ["add_typed", "mul_typed", "div_typed"]
# A bias towards legal src/dst pairs (spec §7), so that more programs run
# past their collectives; illegal pairs are still drawn.
LEGAL = {
    "all_reduce": {"P": "RI", "V": "RI"},
    "all_gather": {"V": "RI"},
    "reduce_scatter": {"P": "V", "V": "V"},
    "all_to_all": {"V": "V"},
    "convert": {"R": "RPV", "I": "RIV", "V": "V", "P": "P"},
    "reinterpret": {"R": "R", "I": "IVP", "V": "VP", "P": "P"},
    "redistribute": {"R": "RIP", "I": "RIP", "V": "VRI", "P": "RIP"},
    "shard": {},
    "unshard": {},
    "invariant_to_replicate": {},
}
# Collectives whose result shape is not the input's (gather/scatter/stack).
SHAPE_CHANGING = {"all_gather", "reduce_scatter", "redistribute", "shard",
                  "unshard"}


# ----------------------------------------------------------------- generator

def random_type(rng, axes, allow_partial=True):
    """A type map on `axes` (sometimes missing an axis, sometimes untyped)."""
    r = rng.random()
    if allow_partial and r < 0.04:
        return None  # untyped
    t = {a: rng.choice("RRIVVP") for a in axes}
    if allow_partial and len(axes) > 1 and r < 0.10:
        del t[rng.choice(axes)]
    return t


def generate_program(rng, pid):
    naxes = rng.randint(1, 3)
    axes = sorted(rng.sample(AXES, naxes))
    prog = {"id": pid, "axes": axes, "strict": rng.random() < 0.75,
            "steps": []}
    steps = prog["steps"]
    usable = []  # (var, shape) usable as operands: shape "2d" or "0d"
    types = {}  # var -> generator's idea of its type (for legal src/dst)

    def add(step, shape):
        steps.append(step)
        v = len(steps) - 1
        if shape in ("2d", "0d"):
            usable.append((v, shape))
        return v

    def new_input(shape="2d"):
        t = random_type(rng, axes)
        # 2x2: dim 0 equals the axis size, as a V dst of reduce_scatter /
        # all_to_all needs (it unbinds that dim). Some inputs require grad:
        # the reference coerces R/I operands that cannot receive a gradient.
        v = add({"op": "input", "shape": [2, 2] if shape == "2d" else [],
                 "type": t, "requires_grad": rng.random() < 0.5}, shape)
        types[v] = t
        return v

    def pick(shape=None):
        cands = [v for v, s in usable if shape is None or s == shape]
        if not cands or rng.random() < 0.15:
            return new_input(shape or "2d")
        return rng.choice(cands)

    for _ in range(rng.randint(1, 3)):
        new_input("2d" if rng.random() < 0.9 else "0d")
    for _ in range(rng.randint(1, 6)):
        r = rng.random()
        if r < 0.22:
            op = rng.choice(BINARY)
            a = pick()
            b = pick()
            add({"op": op, "args": [a, b]},
                "2d" if "2d" in (dict(usable)[a], dict(usable)[b]) else "0d")
        elif r < 0.32:
            op = rng.choice(MATMUL)
            add({"op": op, "args": [pick("2d"), pick("2d")]}, "2d")
        elif r < 0.36:
            add({"op": "addmm", "args": [pick("2d"), pick("2d"), pick("2d")]},
                "2d")
        elif r < 0.46:
            op = rng.choice(UNARY_SAME)
            a = pick()
            add({"op": op, "args": [a]}, dict(usable)[a])
        elif r < 0.52:
            add({"op": rng.choice(UNARY_2D), "args": [pick("2d")]}, "2d")
        elif r < 0.56:
            add({"op": rng.choice(REDUCE), "args": [pick("2d")]}, "0d")
        elif r < 0.64:
            a = pick()
            add({"op": rng.choice(SCALAR), "args": [a], "scalar": 2.0},
                dict(usable)[a])
        elif r < 0.66:
            a = pick()
            add({"op": rng.choice(TYPED_SCALAR), "args": [a], "scalar": 2.0,
                 "scalar_type": {x: rng.choice("RRIVVP") for x in axes}},
                dict(usable)[a])
        elif r < 0.68:
            a = pick("2d")
            add({"op": rng.choice(INPLACE), "args": [a, pick("2d")]}, "2d")
        elif r < 0.71:
            add({"op": rng.choice(LISTS), "args": [pick("2d"), pick("2d")]},
                "other")
        elif r < 0.75:
            add({"op": rng.choice(FACTORIES), "args": []}, "2d")
        else:
            op = rng.choice(COLLECTIVES)
            a = pick("2d")
            axis = rng.choice(axes)
            t = types.get(a)
            cur = t.get(axis) if t else None
            # Mostly the src matches what the generator believes the
            # input is (legal input); dst is random (legal or not).
            src = cur if (cur and rng.random() < 0.6) else rng.choice(TYPES)
            legal = LEGAL[op].get(src)
            dst = rng.choice(legal if legal and rng.random() < 0.6 else TYPES)
            if op == "shard":
                dst = "S0"
            elif op == "unshard":
                src = "S0"
            elif op == "invariant_to_replicate":
                src, dst = "I", "R"
            # convert(R|I -> V) unbinds dim 0 like a scatter.
            unbinds = op == "convert" and dst == "V" and src in "RI"
            add({"op": op, "args": [a], "axis": axis, "src": src, "dst": dst},
                "other" if op in SHAPE_CHANGING or unbinds else "2d")
    return prog


def generate(seed, count):
    rng = random.Random(seed)
    return {"seed": seed, "mesh": {a: 2 for a in AXES},
            "programs": [generate_program(rng, i) for i in range(count)]}


# ----------------------------------------------------------------- reference

def type_str(m):
    """Canonical text of a type map: "{a:P,b:R}" sorted by axis; "{}"."""
    return "{" + ",".join("%s:%s" % kv for kv in sorted(m.items())) + "}"


class Reference:
    """Runs programs through spmd_types on a fake 8-rank world (2x2x2)."""

    def __init__(self):
        import warnings
        warnings.filterwarnings("ignore")
        import torch
        import torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh
        from torch.testing._internal.distributed.fake_pg import FakeStore
        import spmd_types as st
        from spmd_types._checker import assert_type, no_typecheck, typecheck
        from spmd_types._mesh_axis import MeshAxis
        from spmd_types._type_attr import get_local_type
        self.torch, self.st = torch, st
        self.assert_type, self.no_typecheck = assert_type, no_typecheck
        self.typecheck, self.get_local_type = typecheck, get_local_type
        self.SpmdTypeError = st.SpmdTypeError
        self.T = {"R": st.R, "I": st.I, "V": st.V, "P": st.P, "S0": st.S(0)}
        self.name_of_type = {v: k for k, v in self.T.items()}
        if not dist.is_initialized():
            dist.init_process_group(backend="fake", rank=0, world_size=8,
                                    store=FakeStore())
        self.mesh = init_device_mesh("cpu", (2, 2, 2), mesh_dim_names=AXES)
        self.pg = {a: self.mesh.get_group(a) for a in AXES}
        self.axis = {a: MeshAxis.of(self.pg[a]) for a in AXES}
        self.axis_name = {v: k for k, v in self.axis.items()}
        torch.manual_seed(0)

    def kind(self, e):
        if isinstance(e, self.SpmdTypeError):
            return "type"
        if isinstance(e, (ValueError, TypeError)):
            return "invalid"
        if isinstance(e, AssertionError):
            return "assert"
        if isinstance(e, NotImplementedError):
            return "notimpl"
        if isinstance(e, (RuntimeError, IndexError)):
            return "runtime"  # torch's own errors (c10::Error in C++)
        return type(e).__name__

    def tstr(self, x):
        m = self.get_local_type(x)
        return type_str({self.axis_name.get(k, str(k)): self.name_of_type.get(
            v, str(v)) for k, v in m.items()})

    def step(self, s, vals):
        torch, st = self.torch, self.st
        op = s["op"]
        args = [vals[i] for i in s.get("args", [])]
        if op == "input":
            with self.no_typecheck():
                x = torch.randn(s["shape"]).requires_grad_(s["requires_grad"])
            if s["type"] is not None:
                self.assert_type(x, {a: self.T[t] for a, t in s["type"].items()})
            return x
        if op in ("add", "sub", "mul", "div", "maximum", "matmul", "mm"):
            return getattr(torch, op)(*args)
        if op == "addmm":
            return torch.addmm(*args)
        if op in ("neg", "clone", "relu", "exp", "tanh", "sigmoid", "abs",
                  "t", "sum", "mean"):
            return getattr(torch, op)(args[0])
        if op == "transpose":
            return torch.transpose(args[0], 0, 1)
        if op == "cumsum":
            return torch.cumsum(args[0], 0)
        if op == "softmax":
            return torch.softmax(args[0], -1)
        if op == "flip":
            return torch.flip(args[0], [0])
        if op.endswith("_scalar"):
            return getattr(torch, op[:-7])(args[0], s["scalar"])
        if op.endswith("_typed"):
            scalar = self.st.Scalar(s["scalar"], {
                self.axis[a]: self.T[t] for a, t in s["scalar_type"].items()})
            return getattr(torch, op[:-6])(args[0], scalar)
        if op == "add_":
            return args[0].add_(args[1])
        if op == "mul_":
            return args[0].mul_(args[1])
        if op in ("cat", "stack"):
            return getattr(torch, op)(args)
        if op in ("zeros", "ones", "randn"):
            return getattr(torch, op)(2, 2)
        # collectives
        pg = self.pg[s["axis"]]
        src, dst = self.T[s["src"]], self.T[s["dst"]]
        x = args[0]
        if op == "invariant_to_replicate":
            return st.invariant_to_replicate(x, pg)
        if op == "all_gather":
            return st.all_gather(x, pg, src=src, dst=dst, gather_dim=0)
        if op == "reduce_scatter":
            return st.reduce_scatter(x, pg, src=src, dst=dst, scatter_dim=0)
        if op == "all_to_all":
            return st.all_to_all(x, pg, src=src, dst=dst, split_dim=0,
                                 concat_dim=0)
        return getattr(st, op)(x, pg, src=src, dst=dst)

    def run_program(self, prog, checking=True):
        """Verdict and types of `prog`; `checking` False runs it outside
        typecheck() (the baseline of the timing)."""
        vals, types = [], []
        axes = {a: self.axis[a] for a in prog["axes"]}
        verdict, at, message = "ok", -1, ""
        mode = self.typecheck(
            strict_mode="strict" if prog["strict"] else "permissive"
        ) if checking else contextlib.nullcontext()
        with self.st.set_current_mesh(axes):
            with mode:
                for i, s in enumerate(prog["steps"]):
                    try:
                        v = self.step(s, vals)
                    except Exception as e:  # the verdict
                        verdict, at = self.kind(e), i
                        message = str(e).split("\n")[0]
                        break
                    vals.append(v)
                    types.append(self.tstr(v))
        return {"id": prog["id"], "verdict": verdict, "step": at,
                "types": types, "message": message}

    def run_all(self, doc, repeat=1):
        results = [self.run_program(p) for p in doc["programs"]]
        ops = sum(len(r["types"]) for r in results)
        secs = {}
        for on in (True, False):
            t0 = time.process_time()
            for _ in range(repeat - 1):
                for p in doc["programs"]:
                    self.run_program(p, checking=on)
            secs[on] = time.process_time() - t0
        return {"results": results,
                "timing": {"repeat": repeat - 1, "seconds": secs[True],
                           "seconds_off": secs[False], "ops": ops}}


# ------------------------------------------------------------------- compare

def load_known(path):
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return json.load(f)["disagreements"]


def describe(prog, ref, ours):
    """The first step where the two runs differ, as a cause record."""
    n = max(len(ref["types"]), len(ours["types"]))
    for i in range(n + 1):
        s = prog["steps"][i] if i < len(prog["steps"]) else {"op": "<end>"}
        rt = ref["types"][i] if i < len(ref["types"]) else (
            ref["verdict"] if ref["step"] == i else None)
        ot = ours["types"][i] if i < len(ours["types"]) else (
            ours["verdict"] if ours["step"] == i else None)
        if rt != ot:
            cause = {"op": s["op"], "ref": rt, "ours": ot}
            for k in ("src", "dst", "axis"):
                if k in s:
                    cause[k] = s[k]
            if s["op"] != "input":
                cause["inputs"] = [ref["types"][j] if j < len(ref["types"])
                                   else "?" for j in s.get("args", [])]
            if "scalar_type" in s:
                cause["inputs"].append(type_str(s["scalar_type"]))
            cause["strict"] = prog["strict"]
            for side, r in (("ref", ref), ("ours", ours)):
                if r["step"] == i:
                    cause[side + "_message"] = r["message"][:200]
            return i, cause
    return None, None


def parse_type(text):
    """"{a:P,b:R}" -> {"a": "P", "b": "R"}."""
    body = text.strip("{}")
    return dict(kv.split(":") for kv in body.split(",")) if body else {}


def is_type(text):
    return text is not None and text.startswith("{")


def mixes_invariant(cause):
    """An op whose operands mix I with R, V or P on one axis."""
    ins = [parse_type(t) for t in cause.get("inputs", []) if is_type(t)]
    axes = set().union(*[set(m) for m in ins]) if ins else set()
    return any("I" in {m.get(a) for m in ins} and
               {m.get(a) for m in ins} - {"I", None} for a in axes)


def other_flavour_src(cause):
    """A collective whose src is R but the input is I there, or vice versa."""
    ins = [parse_type(t) for t in cause.get("inputs", []) if is_type(t)]
    if not ins or "axis" not in cause:
        return False
    have = ins[0].get(cause["axis"])
    return {have, cause.get("src")} == {"R", "I"}


def lacks_axis_permissive(cause):
    """Permissive mode, and an operand lacks an axis another one has."""
    ins = [parse_type(t) if is_type(t) else {} for t in cause.get("inputs", [])]
    axes = set().union(*[set(m) for m in ins]) if ins else set()
    return not cause["strict"] and any(a not in m for m in ins for a in axes)


# Named conditions that known.json entries may require ("when").
PREDICATES = {
    "mixes_invariant": mixes_invariant,
    "other_flavour_src": other_flavour_src,
    "lacks_axis_permissive": lacks_axis_permissive,
}


def matches(entry, cause):
    """known.json: "match" fields equal (a list: one of), "re:" prefix for a
    regular expression; "when": names of PREDICATES that must hold."""
    for k, v in entry.get("match", {}).items():
        got = cause.get(k)
        if isinstance(v, list):
            if got not in v:
                return False
        elif isinstance(v, str) and v.startswith("re:"):
            if got is None or not re.fullmatch(v[3:], str(got)):
                return False
        elif got != v:
            return False
    return all(PREDICATES[w](cause) for w in entry.get("when", []))


def compare(doc, ref, ours, known):
    progs = {p["id"]: p for p in doc["programs"]}
    ours_by = {r["id"]: r for r in ours["results"]}
    agree, by_cause, undocumented, examples = 0, {}, {}, {}
    steps = 0
    for r in ref["results"]:
        o = ours_by[r["id"]]
        steps += len(r["types"])
        if all(r[k] == o[k] for k in ("verdict", "step", "types")):
            agree += 1
            continue
        prog = progs[r["id"]]
        i, cause = describe(prog, r, o)
        if cause is None:
            agree += 1
            continue
        entry = next((k for k in known if matches(k, cause)), None)
        name = entry["cause"] if entry else (
            "UNDOCUMENTED %s: ref %s, ours %s" % (
                cause["op"] + ("(%s->%s)" % (cause["src"], cause["dst"])
                               if "src" in cause else ""),
                cause["ref"], cause["ours"]))
        by_cause[name] = by_cause.get(name, 0) + 1
        if entry is None:
            undocumented[name] = undocumented.get(name, 0) + 1
        examples.setdefault(name, (r["id"], i, cause))
    return {"programs": len(ref["results"]), "steps": steps, "agree": agree,
            "by_cause": by_cause, "undocumented": undocumented,
            "examples": examples}


def report(summary):
    print("conformance: %d programs (%d typed steps), %d agree, %d disagree"
          % (summary["programs"], summary["steps"], summary["agree"],
             summary["programs"] - summary["agree"]))
    causes = sorted(summary["by_cause"].items(), key=lambda kv: -kv[1])
    if len(causes) > 25:
        print("  (the 25 most frequent of %d causes)" % len(causes))
    for name, n in causes[:25]:
        pid, step, cause = summary["examples"][name]
        print("  %5d  %s\n         e.g. program %d step %d: %s"
              % (n, name, pid, step, json.dumps(cause)))


def report_timing(ref_timing, our_timing):
    """Per-step CPU time of both sides, checker on and off."""
    def per_step(t, key):
        return 1e6 * t[key] / (t["repeat"] * t["ops"])
    ref_on, ref_off = (per_step(ref_timing, k)
                       for k in ("seconds", "seconds_off"))
    our_on, our_off = (per_step(our_timing, k)
                       for k in ("seconds", "seconds_off"))
    print("timing, same programs, %d runs each, CPU time per executed "
          "step (op, collective or input), microseconds:"
          % ref_timing["repeat"])
    print("  %-10s %10s %10s %12s" % ("", "checker on", "off",
                                      "added (on-off)"))
    print("  %-10s %10.2f %10.2f %12.2f" % ("reference", ref_on, ref_off,
                                            ref_on - ref_off))
    print("  %-10s %10.2f %10.2f %12.2f" % ("ours", our_on, our_off,
                                            our_on - our_off))
    print("  overhead ratio reference/ours: %.0fx added per step, %.0fx "
          "total per step with the checker on"
          % ((ref_on - ref_off) / max(our_on - our_off, 1e-3),
             ref_on / our_on))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--count", type=int, default=1000)
    g.add_argument("--out", required=True)
    r = sub.add_parser("reference")
    r.add_argument("programs")
    r.add_argument("out")
    r.add_argument("--repeat", type=int, default=1)
    c = sub.add_parser("compare")
    c.add_argument("programs")
    c.add_argument("ref")
    c.add_argument("ours")
    c.add_argument("--known", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "known.json"))
    u = sub.add_parser("run")
    u.add_argument("--driver", required=True)
    u.add_argument("--seed", type=int, default=1)
    u.add_argument("--count", type=int, default=1000)
    u.add_argument("--work", default="conformance-work")
    u.add_argument("--time", type=int, default=0,
                   help="also time K extra runs of every program on each side")
    u.add_argument("--known", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "known.json"))
    a = ap.parse_args()

    if a.cmd == "generate":
        with open(a.out, "w") as f:
            json.dump(generate(a.seed, a.count), f)
        return 0
    if a.cmd == "reference":
        with open(a.programs) as f:
            doc = json.load(f)
        with open(a.out, "w") as f:
            json.dump(Reference().run_all(doc, a.repeat), f)
        return 0
    if a.cmd == "compare":
        docs = []
        for p in (a.programs, a.ref, a.ours):
            with open(p) as f:
                docs.append(json.load(f))
        s = compare(*docs, load_known(a.known))
        report(s)
        return 1 if s["undocumented"] else 0

    os.makedirs(a.work, exist_ok=True)

    def drive(doc, name, runs):
        path = os.path.join(a.work, name + ".json")
        out = os.path.join(a.work, name + ".ours.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        p = subprocess.run([a.driver, path, out, str(runs)],
                           capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            raise SystemExit("driver failed (%d):\n%s%s"
                             % (p.returncode, p.stdout, p.stderr))
        with open(out) as f:
            return json.load(f)

    t0 = time.time()
    doc = generate(a.seed, a.count)
    ours = drive(doc, "programs", 1)
    t1 = time.time()
    try:
        ref_runner = Reference()
    except ImportError as e:
        print("cannot import the reference (%s): run with the project's venv "
              "python (scripts/install-deps.sh installs spmd_types)" % e)
        return 1
    ref = ref_runner.run_all(doc)
    t2 = time.time()
    with open(os.path.join(a.work, "programs.ref.json"), "w") as f:
        json.dump(ref, f)
    known = load_known(a.known)
    s = compare(doc, ref, ours, known)
    report(s)
    unseen = [k["cause"] for k in known if k["cause"] not in s["by_cause"]]
    if unseen:
        print("  (known causes not met by these programs: %d)" % len(unseen))
    print("wall: ours %.1f s, reference %.1f s (incl. imports)" % (t1 - t0,
                                                                    t2 - t1))
    if a.time:
        # Time only the programs both sides run to the end, so that the
        # checker-off runs execute the same steps as the checker-on runs.
        ok = {r["id"] for r in ref["results"] if r["verdict"] == "ok"} & {
            r["id"] for r in ours["results"] if r["verdict"] == "ok"}
        sub = dict(doc, programs=[p for p in doc["programs"] if p["id"] in ok])
        our_t = drive(sub, "timed", a.time + 1)["timing"]
        ref_t = ref_runner.run_all(sub, a.time + 1)["timing"]
        print("timed: the %d programs (%d steps) that both run to the end"
              % (len(sub["programs"]), ref_t["ops"]))
        report_timing(ref_t, our_t)
    if s["undocumented"]:
        print("FAILED: disagreements not listed in known.json (fix the "
              "checker, or document the cause in docs/type-system.md and "
              "known.json)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
