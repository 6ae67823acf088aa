#!/usr/bin/env python3
"""Random annotated C++ for the spmd-check plugin, against the mini libtorch
of test/plugin/Inputs (milliseconds per file instead of seconds).

Each generated file is one *input class*:

  well_formed   valid C++: annotated functions with random SPMD types, tensor
                ops, collectives, assert_type, branches, loops, switch, goto,
                lambdas, templates, try/catch. SPMD errors are expected (the
                types are random); any other compiler error is a generator bug.
  bad_attribute valid code with [[spmd::...]] attributes given garbage
                arguments or placed where they do not apply.
  broken_syntax a well-formed file with tokens deleted, duplicated or
                swapped, or cut short.
  deep_nesting  blocks, branches and expressions nested hundreds deep.
  huge_function one function with thousands of statements and branches.

Deterministic for a given seed: case i of a run is generated from
random.Random(seed * 1000003 + i).
"""
import random

CLASSES = ["well_formed", "bad_attribute", "broken_syntax", "deep_nesting",
           "huge_function"]
AXES = ["dp", "tp"]
TYPES = ["R", "I", "V", "P", "S(0)", "S(1)", "S(-1)"]
COLLECTIVES = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all",
               "convert", "reinterpret", "redistribute", "shard", "unshard"]
UNARY_METHODS = ["relu", "exp", "tanh", "neg", "clone", "detach", "t",
                 "contiguous", "sum", "mean", "sigmoid"]
BINARY_METHODS = ["add", "sub", "mul", "div", "matmul", "mm"]
BINARY_OPS = ["+", "-", "*", "/"]
FREE_UNARY = ["torch::relu", "torch::gelu", "opaque"]
FREE_BINARY = ["torch::matmul"]
INPLACE = ["add_", "sub_", "mul_", "copy_"]

PRELUDE = '#include "prelude.h"\n\n'


def spmd_type(rng, axes=None):
    axes = axes or [a for a in AXES if rng.random() < 0.7] or [rng.choice(AXES)]
    return ", ".join("%s = %s" % (a, rng.choice(TYPES)) for a in axes)


class FunctionGen:
    """Generates one function body over tensor variables."""

    def __init__(self, rng, depth_limit=4):
        self.rng = rng
        self.vars = []
        self.counter = 0
        self.depth_limit = depth_limit
        self.labels = 0

    def locals(self):
        """Assignable variables (parameters are const references)."""
        return [v for v in self.vars if not v.startswith("p")]

    def fresh(self):
        self.counter += 1
        return "v%d" % self.counter

    def tensor(self):
        return self.rng.choice(self.vars) if self.vars else "Tensor()"

    def expr(self, depth=0):
        r = self.rng
        if depth > 2 or r.random() < 0.3:
            return self.tensor()
        k = r.randrange(9)
        if k == 0:
            return "(%s %s %s)" % (self.expr(depth + 1),
                                   r.choice(BINARY_OPS), self.expr(depth + 1))
        if k == 1:
            return "%s.%s()" % (self.expr(depth + 1), r.choice(UNARY_METHODS))
        if k == 2:
            return "%s.%s(%s)" % (self.expr(depth + 1),
                                  r.choice(BINARY_METHODS),
                                  self.expr(depth + 1))
        if k == 3:
            return "%s(%s)" % (r.choice(FREE_UNARY), self.expr(depth + 1))
        if k == 4:
            return "%s(%s, %s)" % (r.choice(FREE_BINARY), self.expr(depth + 1),
                                   self.expr(depth + 1))
        if k == 5:
            src, dst = r.choice(TYPES), r.choice(TYPES)
            opts = ""
            if r.random() < 0.3:
                opts = ", {.gather_dim = %d}" % r.randrange(-1, 2)
            return "spmd::%s(%s, %s, %s, %s%s)" % (
                r.choice(COLLECTIVES), self.expr(depth + 1), r.choice(AXES),
                src, dst, opts)
        if k == 6:
            return "spmd::invariant_to_replicate(%s, %s)" % (
                self.expr(depth + 1), r.choice(AXES))
        if k == 7:
            return "(%s ? %s : %s)" % (r.choice(["c", "n > 2", "true"]),
                                       self.expr(depth + 1),
                                       self.expr(depth + 1))
        return "(%s * 2.0)" % self.expr(depth + 1)

    def stmt(self, depth, out, indent):
        r = self.rng
        pad = "  " * indent
        k = r.randrange(14) if depth < self.depth_limit else r.randrange(5)
        if k in (0, 1):
            v = self.fresh()
            ann = ("SPMD_TYPE(%s) " % spmd_type(r)) if r.random() < 0.3 else ""
            out.append("%s%sTensor %s = %s;" % (pad, ann, v, self.expr()))
            self.vars.append(v)
        elif k == 2 and self.locals():
            out.append("%s%s = %s;" % (pad, r.choice(self.locals()),
                                       self.expr()))
        elif k == 3 and self.vars:
            out.append("%s%s.%s(%s);" % (pad, r.choice(self.vars),
                                         r.choice(INPLACE), self.expr()))
        elif k == 4 and self.vars:
            out.append("%sspmd::assert_type(%s, {%s});" % (
                pad, r.choice(self.vars), spmd_type(r)))
        elif k == 5:
            out.append("%sif (%s) {" % (pad, r.choice(["c", "n > 1"])))
            self.block(depth + 1, out, indent + 1)
            if r.random() < 0.5:
                out.append("%s} else {" % pad)
                self.block(depth + 1, out, indent + 1)
            out.append("%s}" % pad)
        elif k == 6:
            i = "i%d" % depth
            out.append("%sfor (int %s = 0; %s < n; ++%s) {" % (pad, i, i, i))
            self.block(depth + 1, out, indent + 1)
            if r.random() < 0.3:
                out.append("%s  if (%s == 3) break;" % (pad, i))
            out.append("%s}" % pad)
        elif k == 7:
            out.append("%swhile (n-- > 0) {" % pad)
            self.block(depth + 1, out, indent + 1)
            out.append("%s}" % pad)
        elif k == 8:
            out.append("%sswitch (n) {" % pad)
            for case in range(r.randrange(1, 4)):
                out.append("%scase %d: {" % (pad, case))
                self.block(depth + 1, out, indent + 1)
                if r.random() < 0.7:
                    out.append("%s  break;" % pad)
                out.append("%s}" % pad)
            out.append("%sdefault: break;" % pad)
            out.append("%s}" % pad)
        elif k == 9:
            out.append("%stry {" % pad)
            self.block(depth + 1, out, indent + 1)
            out.append("%s} catch (...) {" % pad)
            self.block(depth + 1, out, indent + 1)
            out.append("%s}" % pad)
        elif k == 10:
            v = self.fresh()
            p = "SPMD_TYPE(%s) " % spmd_type(r) if r.random() < 0.5 else ""
            out.append("%sauto %s = [&](%sconst Tensor& a) { return %s; };" % (
                pad, v, p, r.choice(["a", "a.relu()", "a + a",
                                     "spmd::all_reduce(a, tp, P, R)"])))
            if self.vars:
                w = self.fresh()
                out.append("%sTensor %s = %s(%s);" % (pad, w, v,
                                                      self.tensor()))
                self.vars.append(w)
        elif k == 11:
            self.labels += 1
            lab = "L%d_%d" % (self.labels, r.randrange(1000))
            # The jumped-over code is a block: a goto may not bypass a
            # declaration in its own scope.
            out.append("%sif (n == %d) goto %s;" % (pad, r.randrange(5), lab))
            out.append("%s{" % pad)
            self.block(depth + 1, out, indent + 1)
            out.append("%s}" % pad)
            out.append("%s%s:;" % (pad, lab))
        elif k == 12:
            out.append("%s{" % pad)
            self.block(depth + 1, out, indent + 1)
            out.append("%s}" % pad)
        else:
            out.append("%sif (c) return %s;" % (pad, self.expr()))

    def block(self, depth, out, indent):
        saved = list(self.vars)
        for _ in range(self.rng.randrange(1, 4)):
            self.stmt(depth, out, indent)
        self.vars = saved  # variables declared inside go out of scope

    def function(self, name, nstmts):
        r = self.rng
        params = []
        for p in range(r.randrange(1, 4)):
            v = "p%d" % p
            ann = "SPMD_TYPE(%s) " % spmd_type(r) if r.random() < 0.8 else ""
            params.append("%sconst Tensor& %s" % (ann, v))
            self.vars.append(v)
        params += ["bool c", "int n"]
        head = ""
        if r.random() < 0.5:
            head += "SPMD_TYPE(%s)\n" % spmd_type(r)
        if r.random() < 0.15:
            head += "SPMD_MESH(dp, tp)\n"
        out = ["%sTensor %s(%s) {" % (head, name, ", ".join(params))]
        for _ in range(nstmts):
            self.stmt(0, out, 1)
        out.append("  return %s;" % self.expr())
        out.append("}")
        return "\n".join(out) + "\n"


def well_formed(rng):
    parts = [PRELUDE]
    for f in range(rng.randrange(2, 7)):
        parts.append(FunctionGen(rng).function("f%d" % f,
                                               rng.randrange(3, 20)))
    if rng.random() < 0.5:  # a template and a class with annotated members
        parts.append(
            "template <typename T>\nT tmpl(SPMD_TYPE(tp = %s) const T& x) "
            "{ return %s; }\nTensor use_tmpl(const Tensor& t) "
            "{ return tmpl(t); }\n" % (rng.choice(TYPES), rng.choice(
                ["x", "x.relu()", "spmd::all_reduce(x, tp, P, R)"])))
        parts.append(
            "struct Layer {\n  SPMD_TYPE(%s) Tensor w;\n  SPMD_TYPE(%s) "
            "Tensor forward(SPMD_TYPE(%s) const Tensor& x) const "
            "{ return torch::matmul(x, w); }\n};\n" %
            (spmd_type(rng), spmd_type(rng), spmd_type(rng)))
    return "".join(parts)


GARBAGE = ["tp", "dp", "=", "R", "P", "S", "(", ")", ",", "\"x\"", "3", "-1",
           "nullptr", "tp = ", "= R", "linear", "\"linear\"", "::", "spmd::",
           "S(", "S(99999999999)", "S(-2147483648)", "{", "}", "...", "+",
           "sizeof(int)", "[]{ return R; }()", "tp = R, tp = R", "0x7f",
           "\"\\xff\"", "u8\"\"", "'c'", "1.5"]
PLACES = [
    "ATTR Tensor g_%d;",
    "struct ATTR S_%d {};",
    "namespace ATTR ns_%d {}",
    "enum ATTR E_%d { A_%d };",
    "ATTR Tensor fn_%d(const Tensor& x);",
    "Tensor fp_%d(ATTR const Tensor& x);",
    "void st_%d() { ATTR; }",
    "void lo_%d() { ATTR Tensor x; (void)x; }",
    "void sl_%d() { ATTR static Tensor x; (void)x; }",
    "void lam_%d() { auto l = [] ATTR (int) {}; l(1); }",
    "template <typename T> ATTR T tp_%d(const T& x) { return x; }",
    "struct M_%d { ATTR Tensor m; ATTR static int s; };",
    "using Alias_%d ATTR = Tensor;",
]


def bad_attribute(rng):
    parts = [PRELUDE]
    for i in range(rng.randrange(5, 25)):
        name = rng.choice(["type", "mesh", "op", "unchecked", "typ", "Type"])
        args = " ".join(rng.choice(GARBAGE)
                        for _ in range(rng.randrange(0, 6)))
        scope = rng.choice(["spmd::", "spmd::", "spmd::", "", "spmdx::"])
        attr = "[[%s%s(%s)]]" % (scope, name, args) if rng.random() < 0.9 \
            else "[[%s%s]]" % (scope, name)
        place = rng.choice(PLACES)
        parts.append(place.replace("ATTR", attr).replace("%d", str(i)) + "\n")
    parts.append(FunctionGen(rng).function("body", 5))
    return "".join(parts)


def broken_syntax(rng):
    text = well_formed(rng)
    head, body = text[:len(PRELUDE)], text[len(PRELUDE):]
    toks = body.split(" ")
    for _ in range(rng.randrange(1, 8)):
        if not toks:
            break
        i = rng.randrange(len(toks))
        op = rng.randrange(5)
        if op == 0:
            del toks[i]
        elif op == 1:
            toks.insert(i, toks[i])
        elif op == 2:
            j = rng.randrange(len(toks))
            toks[i], toks[j] = toks[j], toks[i]
        elif op == 3:
            toks.insert(i, rng.choice(["{", "}", "(", ")", ";", "[[", "]]",
                                       "spmd::", "template", "<", ">"]))
        else:
            toks = toks[:i]
    return head + " ".join(toks)


def deep_nesting(rng):
    n = rng.randrange(100, 400)
    k = rng.randrange(4)
    lines = [PRELUDE, "Tensor deep(SPMD_TYPE(tp = %s) const Tensor& x, bool c,"
             " int n) {\n  Tensor y = x;\n" % rng.choice(TYPES)]
    if k == 0:
        lines.append("  {" * n + " y = y + x; " + "}" * n + "\n")
    elif k == 1:
        lines.append("  if (c) {" * n + " y = spmd::all_reduce(y, tp, P, R); "
                     + "}" * n + "\n")
    elif k == 2:
        lines.append("  y = " + "(" * n + "y" + " + x)" * n + ";\n")
    else:
        lines.append("  y = " + "torch::relu(" * n + "y" + ")" * n + ";\n")
    lines.append("  return y;\n}\n")
    return "".join(lines)


def huge_function(rng):
    n = rng.randrange(1000, 3000)
    out = [PRELUDE, "Tensor huge(SPMD_TYPE(tp = P) const Tensor& x, bool c, "
           "int n) {\n  Tensor y = x;\n"]
    for i in range(n):
        r = rng.randrange(4)
        if r == 0:
            out.append("  Tensor t%d = y + x;\n" % i)
        elif r == 1:
            out.append("  if (c) y = spmd::all_reduce(y, tp, P, R);\n")
        elif r == 2:
            out.append("  if (n == %d) { y = x; } else { y = y * 2.0; }\n" % i)
        else:
            out.append("  y = torch::matmul(y, x);\n")
    out.append("  return y;\n}\n")
    return "".join(out)


GENERATORS = {"well_formed": well_formed, "bad_attribute": bad_attribute,
              "broken_syntax": broken_syntax, "deep_nesting": deep_nesting,
              "huge_function": huge_function}


def generate(cls, seed, index):
    """The text of case `index` of class `cls` for run `seed`."""
    rng = random.Random(seed * 1000003 + index * 7919 + CLASSES.index(cls))
    return GENERATORS[cls](rng)


if __name__ == "__main__":
    import sys
    print(generate(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
