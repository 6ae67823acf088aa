#!/usr/bin/env python3
"""File and function sizes (in lines) of the C++ sources of spmd-check.

Prints, for plugin/ (without plugin/tools), plugin/tools, core/ and runtime/:
a summary per area, the largest files and the largest functions.

Functions are found by a brace-matching scan over the token stream (comments,
string and character literals, raw strings and preprocessor lines removed;
only the first branch of an #if/#elif/#else chain is read), which is reliable
on clang-formatted code and needs no compile command.  A function is a brace
body at namespace or class scope whose declaration has a parameter list
(free functions, member functions defined in or out of their class,
constructors, operators, TEST(...) bodies, lambdas assigned to namespace-scope
variables).  Lambdas and local classes count towards the function that holds
them.  A function's size runs from the first line of its declaration (template
header included, comments excluded) to its closing brace.

    scripts/code_size.py                 # the working tree
    scripts/code_size.py --rev 79f26c1   # a git revision (git archive, temp dir)
    scripts/code_size.py --markdown --files 15 --functions 20
"""

import argparse
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from collections import namedtuple

AREAS = [
    ("plugin", "plugin", ["plugin/tools"]),
    ("plugin/tools", "plugin/tools", []),
    ("core", "core", []),
    ("runtime", "runtime", []),
]
SOURCE_EXT = (".cpp", ".cc", ".cxx", ".h", ".hpp", ".cu", ".def", ".inc")
LONG_FUNCTION = 80

Token = namedtuple("Token", "text line")
Function = namedtuple("Function", "path name start end reason")
REASON_MARK = "long on purpose"

_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_NUMBER = re.compile(r"\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.']|)*")
_PUNCT3 = ("<<=", ">>=", "...", "->*", "<=>")
_PUNCT2 = ("::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&",
           "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ".*", "##")
_RAW_PREFIX = re.compile(r"(?:u8|u|U|L)?R$")
_STRING_PREFIX = re.compile(r"(?:u8|u|U|L)$")
_KEYWORDS_NOT_NAMES = {
    "if", "for", "while", "switch", "catch", "return", "sizeof", "alignof",
    "decltype", "noexcept", "static_assert", "alignas", "requires",
}
_CLASS_KEYS = {"class", "struct", "union", "enum"}


def _skip_preprocessor(src, i, n):
    """Index just past the preprocessor line starting at i (continuations)."""
    while i < n:
        j = src.find("\n", i)
        if j < 0:
            return n
        # A comment may span lines inside a directive; ignore that corner.
        k = j - 1
        if k >= 0 and src[k] == "\r":
            k -= 1
        if k >= 0 and src[k] == "\\":
            i = j + 1
            continue
        return j
    return n


def tokenize(src):
    """Tokens with line numbers; comments, literals and directives dropped.

    String and character literals become one token '""'.  Of an
    #if/#elif/#else chain only the first branch is kept, so that duplicated
    signatures in alternative branches do not unbalance the braces.
    """
    tokens = []
    i, n, line = 0, len(src), 1
    at_line_start = True
    skip_depth = 0  # >0: inside a dropped #elif/#else branch
    cond_stack = []  # per open #if: True once its first branch has ended
    while i < n:
        c = src[i]
        if c == "\n":
            line += 1
            i += 1
            at_line_start = True
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if c == "#" and at_line_start:
            end = _skip_preprocessor(src, i, n)
            directive = src[i + 1:end].strip()
            word = _IDENT.match(directive)
            word = word.group(0) if word else ""
            if word in ("if", "ifdef", "ifndef"):
                cond_stack.append(False)
                if skip_depth:
                    skip_depth += 1
            elif word in ("elif", "else", "elifdef", "elifndef"):
                if not skip_depth and cond_stack:
                    cond_stack[-1] = True
                    skip_depth = 1
            elif word == "endif":
                if cond_stack:
                    cond_stack.pop()
                if skip_depth:
                    skip_depth -= 1
            line += src.count("\n", i, end)
            i = end
            continue
        at_line_start = False
        if c == "/" and src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "/" and src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += src.count("\n", i, j)
            i = j
            continue
        if skip_depth:
            # Dropped branch: still honour literals so that a '#' or a quote
            # inside them does not confuse the scan.
            if c in "\"'":
                j = _end_of_quoted(src, i, c)
                line += src.count("\n", i, j)
                i = j
            else:
                i += 1
            continue
        m = _IDENT.match(src, i)
        if m:
            word = m.group(0)
            j = m.end()
            if j < n and src[j] == '"' and _RAW_PREFIX.match(word):
                k = _end_of_raw_string(src, j)
                line += src.count("\n", i, k)
                tokens.append(Token('""', line))
                i = k
                continue
            if j < n and src[j] in "\"'" and _STRING_PREFIX.match(word):
                k = _end_of_quoted(src, j, src[j])
                tokens.append(Token('""', line))
                line += src.count("\n", i, k)
                i = k
                continue
            tokens.append(Token(word, line))
            i = j
            continue
        if c.isdigit() or (c == "." and i + 1 < n and src[i + 1].isdigit()):
            m = _NUMBER.match(src, i)
            tokens.append(Token("0", line))
            i = m.end()
            continue
        if c in "\"'":
            j = _end_of_quoted(src, i, c)
            tokens.append(Token('""', line))
            line += src.count("\n", i, j)
            i = j
            continue
        for p in _PUNCT3 + _PUNCT2:
            if src.startswith(p, i):
                tokens.append(Token(p, line))
                i += len(p)
                break
        else:
            tokens.append(Token(c, line))
            i += 1
    return tokens


def _end_of_quoted(src, i, quote):
    j, n = i + 1, len(src)
    while j < n:
        ch = src[j]
        if ch == "\\":
            j += 2
            continue
        if ch == quote or ch == "\n":
            return j + 1
        j += 1
    return n


def _end_of_raw_string(src, j):
    """src[j] is the '"' of R"delim( ... )delim"."""
    open_paren = src.find("(", j)
    if open_paren < 0:
        return len(src)
    delim = src[j + 1:open_paren]
    close = src.find(")" + delim + '"', open_paren)
    return len(src) if close < 0 else close + len(delim) + 2


class _Scope:
    __slots__ = ("kind", "name", "start", "keep_statement")

    def __init__(self, kind, name="", start=0, keep_statement=False):
        self.kind = kind  # file, namespace, class, function, block, inner
        self.name = name
        self.start = start
        self.keep_statement = keep_statement


def _depth0(statement):
    """Indices of the statement's tokens outside (), [] and <>."""
    out = []
    paren = angle = 0
    prev = None
    for idx, tok in enumerate(statement):
        t = tok.text
        if t in ("(", "["):
            if paren == 0 and angle == 0:
                out.append(idx)
            paren += 1
        elif t in (")", "]"):
            paren = max(0, paren - 1)
        elif paren == 0 and t == "<" and prev is not None and (
                _IDENT.fullmatch(prev) or prev == "template"):
            if prev != "operator":
                angle += 1
        elif paren == 0 and angle and t == ">":
            angle -= 1
        elif paren == 0 and angle and t == ">>":
            angle = max(0, angle - 2)
        elif paren == 0 and angle == 0:
            out.append(idx)
        prev = t
    return out


def _strip_template_header(statement):
    """Index of the first token after leading `template <...>` headers."""
    i = 0
    while i < len(statement) and statement[i].text == "template":
        depth = 0
        i += 1
        while i < len(statement):
            t = statement[i].text
            if t == "<":
                depth += 1
            elif t == ">":
                depth -= 1
            elif t == ">>":
                depth -= 2
            i += 1
            if depth <= 0:
                break
    return i


def _function_name(statement, depth0):
    """The declarator name before the first top-level '(' (or None)."""
    positions = set(depth0)
    for idx in depth0:
        if statement[idx].text != "(":
            continue
        # operator names: operator==, operator(), operator[] ...
        j = idx - 1
        k = j
        while k >= 0 and statement[k].text != "operator" and \
                not _IDENT.fullmatch(statement[k].text) and k > idx - 4:
            k -= 1
        if k >= 0 and statement[k].text == "operator":
            j = k
            name = "operator" + "".join(
                t.text for t in statement[k + 1:idx])
        elif idx + 1 < len(statement) and statement[idx - 1].text == "operator":
            # operator()(...): the first '(' belongs to the name.
            continue
        else:
            if j < 0 or not _IDENT.fullmatch(statement[j].text):
                if j >= 0 and statement[j].text == ")":
                    return None  # e.g. a function-pointer declarator
                continue
            name = statement[j].text
            if name in _KEYWORDS_NOT_NAMES:
                return None
        # Qualifiers: A::B<T>::name, ~Name.
        k = j - 1
        if k >= 0 and statement[k].text == "~":
            name = "~" + name
            k -= 1
        while k >= 1 and statement[k].text == "::":
            q = k - 1
            if statement[q].text == ">":
                depth = 0
                while q >= 0:
                    t = statement[q].text
                    if t == ">":
                        depth += 1
                    elif t == "<":
                        depth -= 1
                        if depth == 0:
                            break
                    q -= 1
                q -= 1
            if q >= 0 and _IDENT.fullmatch(statement[q].text):
                name = statement[q].text + "::" + name
                k = q - 1
            else:
                break
        if name.isupper() or name.startswith("TEST"):
            # A test macro: TEST(Suite, Name) -> TEST(Suite, Name).
            close = idx
            depth = 0
            for close in range(idx, len(statement)):
                t = statement[close].text
                if t == "(":
                    depth += 1
                elif t == ")":
                    depth -= 1
                    if depth == 0:
                        break
            args = " ".join(t.text for t in statement[idx + 1:close])
            name = "%s(%s)" % (name, args.replace(" ,", ","))
        del positions
        return name
    return None


def _classify(statement, in_class_name):
    """What a '{' at namespace/class scope opens, given its statement.

    Returns (kind, name, keep_statement) with kind one of namespace, class,
    function, inner.
    """
    if not statement:
        return ("inner", "", True)
    first = _strip_template_header(statement)
    body = statement[first:]
    texts = [t.text for t in body]
    if texts[:1] in (["namespace"], ["inline"]) and "namespace" in texts[:2]:
        return ("namespace", "", False)
    if texts and texts[0] == "extern" and (len(texts) == 1 or
                                           texts[1] == '""'):
        return ("namespace", "", False)
    d0 = _depth0(body)
    d0_texts = [texts[i] for i in d0]
    last = texts[-1] if texts else ""
    # An open '(' or '[' at the brace: a lambda or braced init in an argument.
    paren = 0
    for t in texts:
        if t in ("(", "["):
            paren += 1
        elif t in (")", "]"):
            paren -= 1
    if paren > 0:
        return ("inner", "", True)
    # Class, struct, union, enum (not `struct X f() {`, which has a '(').
    lead = [t for t in texts[:3]]
    if any(t in _CLASS_KEYS for t in lead) and "(" not in d0_texts:
        name = ""
        for idx, t in enumerate(texts):
            if t in _CLASS_KEYS:
                rest = [x for x in texts[idx + 1:]
                        if _IDENT.fullmatch(x) and x not in
                        ("class", "struct", "final", "alignas")]
                name = rest[0] if rest else ""
                break
        return ("class", name, False)
    if "=" in d0_texts:
        eq = d0[d0_texts.index("=")]
        if "[" in texts[eq:] and last in (")", "]", "mutable") or \
                (last not in ("=", ",") and "->" in texts[eq:] and
                 "[" in texts[eq:]):
            var = texts[eq - 1] if eq > 0 else "lambda"
            return ("function", var, True)
        return ("inner", "", True)
    if "(" not in d0_texts:
        return ("inner", "", True)
    # A constructor's member initializer `m{...}` before the body.
    colon = None
    for i in d0:
        if texts[i] == ":" and i > 0 and texts[i - 1] in (")", "const",
                                                          "noexcept"):
            colon = i
            break
    if colon is not None and last not in (")", "}", "noexcept", "const",
                                          "override", "final"):
        return ("inner", "", True)
    name = _function_name(body, d0)
    if name is None:
        return ("inner", "", True)
    if in_class_name and "::" not in name and not name.startswith("TEST"):
        name = in_class_name + "::" + name
    return ("function", name, False)


def _has_reason(lines, start):
    """Whether the comment block ending just above line `start` (1-based)
    contains REASON_MARK."""
    i = start - 2
    while i >= 0:
        text = lines[i].strip()
        if not (text.startswith("//") or text.startswith("/*") or
                text.startswith("*") or text.endswith("*/")):
            break
        if REASON_MARK in text.lower():
            return True
        i -= 1
    return False


def find_functions(path, src):
    lines = src.split("\n")
    return [f._replace(reason=_has_reason(lines, f.start))
            for f in _scan_functions(path, src)]


def _scan_functions(path, src):
    tokens = tokenize(src)
    functions = []
    stack = [_Scope("file")]
    statement = []
    for tok in tokens:
        t = tok.text
        top = stack[-1]
        if top.kind in ("function", "block"):
            if t == "{":
                stack.append(_Scope("block"))
            elif t == "}":
                stack.pop()
                if top.kind == "function":
                    functions.append(Function(path, top.name, top.start,
                                              tok.line, False))
                    if not top.keep_statement:
                        statement = []
                    else:
                        statement.append(Token("{}", tok.line))
            continue
        if top.kind == "inner":
            if t == "{":
                stack.append(_Scope("inner", keep_statement=True))
            elif t == "}":
                stack.pop()
                if len(stack) and stack[-1].kind not in ("inner",):
                    statement.append(Token("{}", tok.line))
            continue
        # file, namespace or class scope
        if t == "{":
            class_name = top.name if top.kind == "class" else ""
            kind, name, keep = _classify(statement, class_name)
            start = statement[0].line if statement else tok.line
            if kind == "class" and class_name and name:
                name = class_name + "::" + name
            stack.append(_Scope(kind, name, start, keep))
            if kind in ("namespace", "class"):
                statement = []
            continue
        if t == "}":
            if len(stack) > 1:
                stack.pop()
            statement = []
            continue
        if t == ";":
            statement = []
            continue
        if t == ":" and len(statement) == 1 and statement[0].text in (
                "public", "private", "protected"):
            statement = []
            continue
        statement.append(tok)
    return functions


def count_lines(src):
    return src.count("\n") + (0 if src.endswith("\n") or not src else 1)


def area_of(rel):
    for name, prefix, exclude in AREAS:
        if (rel == prefix or rel.startswith(prefix + "/")) and not any(
                rel.startswith(e + "/") for e in exclude):
            return name
    return None


def measure(root):
    files = []  # (area, rel, lines)
    functions = []
    for _, prefix, _ in AREAS:
        base = os.path.join(root, prefix)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for fn in sorted(filenames):
                if not fn.endswith(SOURCE_EXT):
                    continue
                full = os.path.join(dirpath, fn)
                rel = os.path.relpath(full, root)
                area = area_of(rel)
                if area is None or any(rel == f[1] for f in files):
                    continue
                with open(full, encoding="utf-8", errors="replace") as f:
                    src = f.read()
                files.append((area, rel, count_lines(src)))
                functions.extend(find_functions(rel, src))
    return files, functions


def _table(rows, header, markdown):
    if markdown:
        numeric = [all(isinstance(r[i], int) for r in rows) and i > 0
                   for i in range(len(header))]
        out = ["| " + " | ".join(header) + " |",
               "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
        out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
        return "\n".join(out)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    fmt = "  ".join("{:<%d}" % w if i == 0 else "{:>%d}" % w
                    for i, w in enumerate(widths))
    return "\n".join([fmt.format(*header)] +
                     [fmt.format(*[str(c) for c in r]) for r in rows])


def report(files, functions, n_files, n_functions, markdown, label):
    out = []
    title = "Code size at %s" % label
    out.append(("### " if markdown else "== ") + title)
    rows = []
    for name, _, _ in AREAS:
        fs = [f for f in files if f[0] == name]
        fn = [f for f in functions if area_of(f.path) == name]
        sizes = [f.end - f.start + 1 for f in fn]
        long_fns = [f for f in fn if f.end - f.start + 1 > LONG_FUNCTION]
        rows.append((name, len(fs), sum(f[2] for f in fs),
                     max((f[2] for f in fs), default=0), len(fn),
                     max(sizes, default=0), len(long_fns),
                     sum(1 for f in long_fns if not f.reason)))
    out.append("")
    out.append(_table(rows, ("area", "files", "lines", "largest file",
                             "functions", "largest function",
                             "functions > %d" % LONG_FUNCTION,
                             "of those without a reason"), markdown))
    out.append("")
    biggest = sorted(files, key=lambda f: (-f[2], f[1]))[:n_files]
    out.append(_table([(f[1], f[2]) for f in biggest], ("file", "lines"),
                      markdown))
    out.append("")
    longest = sorted(functions,
                     key=lambda f: (-(f.end - f.start), f.path, f.start))
    longest = longest[:n_functions]
    def reason(f):
        if f.end - f.start + 1 <= LONG_FUNCTION:
            return ""
        return "yes" if f.reason else "no"
    out.append(_table([("`%s`" % f.name if markdown else f.name,
                        "%s:%d" % (f.path, f.start), f.end - f.start + 1,
                        reason(f))
                       for f in longest],
                      ("function", "where", "lines", "reason given"),
                      markdown))
    return "\n".join(out)


def export_revision(rev, dest):
    """Extract the measured directories of `rev` into dest (git archive)."""
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"],
                         check=True, capture_output=True,
                         text=True).stdout.strip()
    paths = sorted({p for _, p, _ in AREAS if "/" not in p})
    present = []
    for p in paths:
        r = subprocess.run(["git", "-C", top, "cat-file", "-e",
                            "%s:%s" % (rev, p)], capture_output=True)
        if r.returncode == 0:
            present.append(p)
    archive = os.path.join(dest, "src.tar")
    with open(archive, "wb") as f:
        subprocess.run(["git", "-C", top, "archive", "--format=tar", rev,
                        "--"] + present, check=True, stdout=f)
    with tarfile.open(archive) as tar:
        tar.extractall(os.path.join(dest, "tree"))
    return os.path.join(dest, "tree")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", help="measure this git revision instead of "
                        "the working tree")
    parser.add_argument("--root", default=None,
                        help="source root (default: the repository)")
    parser.add_argument("--files", type=int, default=15,
                        help="how many of the largest files (default 15)")
    parser.add_argument("--functions", type=int, default=20,
                        help="how many of the largest functions (default 20)")
    parser.add_argument("--long", action="store_true",
                        help="list every function over %d lines" %
                        LONG_FUNCTION)
    parser.add_argument("--markdown", action="store_true",
                        help="Markdown tables")
    args = parser.parse_args(argv)
    root = args.root or os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))
    if args.rev:
        with tempfile.TemporaryDirectory() as tmp:
            os.chdir(root)
            label = subprocess.run(["git", "rev-parse", "--short", args.rev],
                                   check=True, capture_output=True,
                                   text=True).stdout.strip()
            files, functions = measure(export_revision(args.rev, tmp))
    else:
        label = "the working tree"
        files, functions = measure(root)
    n_functions = args.functions
    if args.long:
        n_functions = sum(1 for f in functions
                          if f.end - f.start + 1 > LONG_FUNCTION)
    print(report(files, functions, args.files, n_functions, args.markdown,
                 label))
    return 0


if __name__ == "__main__":
    sys.exit(main())
