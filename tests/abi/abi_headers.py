#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
"""Header ABI inventory for the public librdmacm headers.

Used by check-layout.sh; three sub-commands:

  scan INCDIR OUT.json
      Inventory the public headers found under INCDIR (HEADERS below):
      every struct/union and each of its members (anonymous unions and
      structs flattened the way C exposes them, named nested ones as
      "outer.inner" paths), enum tags and enum constants, typedefs, every
      #define (whether or not it ends up defined, so "#ifndef AF_IB" style
      fallbacks are seen too) and every function prototype.  Structs and
      enums are read from the preprocessor's output restricted to lines that
      come from the headers themselves; prototypes come from gcc -aux-info.

  compare OURS.json REF.json ALLOWLIST
      Report what the reference declares that ours lacks (always an error),
      what ours declares beyond the reference that ALLOWLIST does not
      explain (an error), and every textual difference that does not show up
      in a compiled program: member declared types, macro bodies that are
      not numeric constants, and function prototypes (parameter names
      ignored).  Exit status 1 if anything is reported.  ALLOWLIST "-"
      checks a newer reference (rdma-core 65) instead: ours must declare
      everything it declares, the same way; what only ours declares is
      fine (the older reference's run polices that).

  gen OURS.json REF.json OUT.c
      Write one C program over the names both sides declare.  It prints
      sizeof/alignof of every struct, union, enum and typedef,
      offsetof/sizeof/alignof/type class/signedness of every member, and
      value/size/signedness of every enum constant and numeric macro.
      check-layout.sh builds it once against each header set and diffs the
      two outputs.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

# The public headers compared, as included by applications.
HEADERS = [
    "rdma/rdma_cma.h",
    "rdma/rdma_verbs.h",
    "rdma/rdma_cma_abi.h",
    "infiniband/ib.h",
    "rdma/rsocket.h",
]

CC = os.environ.get("CC", "cc")
# -aux-info (the prototype dump) is gcc's alone, whatever CC is.
AUX_CC = os.environ.get("ABI_GCC", "gcc")
CPPFLAGS = os.environ.get("ABI_CPPFLAGS", "").split()

KEYWORDS_TYPEISH = {
    "struct", "union", "enum", "typedef", "const", "volatile", "static",
    "extern", "inline", "void", "char", "short", "int", "long", "float",
    "double", "signed", "unsigned", "_Bool", "__typeof__", "typeof",
}


# --------------------------------------------------------------------------
# Preprocessed text of the headers
# --------------------------------------------------------------------------

def translation_unit():
    return "".join(f"#include <{h}>\n" for h in HEADERS)


def header_paths(incdir):
    return {os.path.realpath(os.path.join(incdir, h)) for h in HEADERS}


def preprocess(incdir):
    """Return the preprocessed text that comes from the public headers."""
    with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as f:
        f.write(translation_unit())
        tu = f.name
    try:
        out = subprocess.run(
            [CC, "-E", "-std=gnu11", "-I", incdir] + CPPFLAGS + [tu],
            check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(tu)
    ours = header_paths(incdir)
    keep, current = [], None
    for line in out.splitlines():
        m = re.match(r'#\s*(?:line\s+)?\d+\s+"([^"]*)"', line)
        if m:
            current = os.path.realpath(m.group(1)) if m.group(1) else None
            continue
        if line.startswith("#"):
            continue  # pragmas and the like
        if current in ours:
            keep.append(line)
    return "\n".join(keep)


TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')
  | (?P<num>\.?\d[\w.]*)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<punct>->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||\.\.\.|[{}()\[\];,*=.:&|^~!<>+\-/%?])
""", re.X)


def tokenize(text):
    toks, pos = [], 0
    while pos < len(text):
        m = TOKEN_RE.match(text, pos)
        if not m:
            raise SystemExit(f"abi_headers: cannot tokenize near {text[pos:pos+40]!r}")
        pos = m.end()
        if m.lastgroup != "ws":
            toks.append(m.group())
    return toks


def strip_attributes(toks):
    """Drop __attribute__((...)), __extension__ and __restrict qualifiers."""
    out, i = [], 0
    while i < len(toks):
        t = toks[i]
        if t in ("__attribute__", "__attribute", "__declspec", "__asm__", "__asm"):
            i += 1
            if i < len(toks) and toks[i] == "(":
                i = skip_balanced(toks, i)
            continue
        if t in ("__extension__", "__restrict", "__restrict__", "restrict"):
            i += 1
            continue
        out.append(t)
        i += 1
    return out


def skip_balanced(toks, i):
    """toks[i] is an opening bracket; return the index after its partner."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = [pairs[toks[i]]]
    i += 1
    while stack:
        if i >= len(toks):
            raise SystemExit("abi_headers: unbalanced brackets in header")
        t = toks[i]
        if t in pairs:
            stack.append(pairs[t])
        elif t == stack[-1]:
            stack.pop()
        i += 1
    return i


def split_top(toks, sep):
    parts, cur, depth = [], [], 0
    for t in toks:
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
        if t == sep and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    parts.append(cur)
    return parts


# --------------------------------------------------------------------------
# Declarations
# --------------------------------------------------------------------------

class Inventory:
    def __init__(self):
        self.records = {}      # "struct foo" -> [member dicts]
        self.enum_tags = []    # "enum foo"
        self.enum_consts = []  # names
        self.typedefs = {}     # name -> declared type text
        self.macros = {}       # name -> {"kind", "body"}
        self.funcs = {}        # name -> normalized prototype


def declarator_name(toks):
    """Name, and type modifiers, of one declarator (tokens after the base)."""
    # Function pointer: ( * name ) ( ... ) [...]
    if toks and toks[0] == "(":
        inner_end = skip_balanced(toks, 0)
        inner = toks[1:inner_end - 1]
        ids = [t for t in inner if re.match(r"[A-Za-z_]\w*$", t)
               and t not in ("const", "volatile")]
        name = ids[-1] if ids else None
        mods = " ".join(t for t in toks if t != name)
        return name, mods, False
    name, mods, bitfield = None, [], False
    for j, t in enumerate(toks):
        if t == ":":
            bitfield = True
            mods.extend(toks[j:])
            break
        if re.match(r"[A-Za-z_]\w*$", t) and t not in ("const", "volatile"):
            name = t
            continue
        mods.append(t)
    return name, " ".join(mods), bitfield


def parse_member_decls(toks, prefix, inv, members):
    """Parse the tokens between a struct/union's braces."""
    i = 0
    while i < len(toks):
        # one declaration: up to the next top-level ';'
        j, depth = i, 0
        while j < len(toks) and not (toks[j] == ";" and depth == 0):
            if toks[j] in "([{":
                depth += 1
            elif toks[j] in ")]}":
                depth -= 1
            j += 1
        decl = toks[i:j]
        i = j + 1
        if not decl:
            continue
        if decl[0] in ("struct", "union", "enum") and "{" in decl[:3]:
            kw = decl[0]
            k = 1
            tag = None
            if decl[k] != "{":
                tag = decl[k]
                k += 1
            body_end = skip_balanced(decl, k)
            body = decl[k + 1:body_end - 1]
            rest = decl[body_end:]
            if kw == "enum":
                parse_enum_body(body, inv)
                if tag:
                    inv.enum_tags.append(f"enum {tag}")
                base_text = f"enum {tag}" if tag else "enum {...}"
                sub = None
            else:
                sub = []
                parse_member_decls(body, "", inv, sub)
                if tag:
                    inv.records[f"{kw} {tag}"] = sub
                base_text = f"{kw} {tag}" if tag else f"{kw} {{...}}"
            if not rest:
                # anonymous member: its members belong to the outer record
                if sub is None:
                    continue
                for m in sub:
                    members.append(dict(m, path=prefix + m["path"]))
                continue
            for d in split_top(rest, ","):
                name, mods, bitfield = declarator_name(d)
                path = prefix + name
                members.append({"path": path, "type": norm(base_text + " " + mods),
                                "bitfield": bitfield, "flex": "[ ]" in mods})
                if sub is not None and not mods.strip():
                    for m in sub:
                        members.append(dict(m, path=path + "." + m["path"]))
            continue
        # ordinary declaration: base type, then declarators
        parts = split_top(decl, ",")
        first = parts[0]
        # base type = tokens before the first declarator start
        k = 0
        base = []
        while k < len(first):
            t = first[k]
            if t in ("*", "(") or (k == len(first) - 1) or first[k + 1] in ("[", ":", ";"):
                break
            base.append(t)
            k += 1
        parts[0] = first[k:]
        base_text = " ".join(base)
        for d in parts:
            name, mods, bitfield = declarator_name(d)
            if name is None:
                raise SystemExit(f"abi_headers: no member name in {' '.join(decl)!r}")
            members.append({"path": prefix + name, "type": norm(base_text + " " + mods),
                            "bitfield": bitfield, "flex": "[ ]" in mods})


def parse_enum_body(body, inv):
    for part in split_top(body, ","):
        if part:
            inv.enum_consts.append(part[0])


def norm(text):
    """Canonical spelling of a type: single spaces, equivalent int names."""
    t = " ".join(text.split())
    t = re.sub(r"\s*([*\[\](),])\s*", r" \1 ", t)
    t = " ".join(t.split())
    for a, b in (("unsigned short int", "unsigned short"),
                 ("short int", "short"),
                 ("unsigned long long int", "unsigned long long"),
                 ("unsigned long int", "unsigned long"),
                 ("long long int", "long long"),
                 ("long int", "long"),
                 ("signed int", "int"),
                 ("unsigned int", "unsigned")):
        t = re.sub(r"\b%s\b" % a, b, t)
    # tighten brackets for reading: "f ( int * , char [ 4 ] )" -> "f(int *, char[4])"
    t = re.sub(r" ?([(\[]) ", r"\1", t)
    t = re.sub(r" ([,)\]])", r"\1", t)
    return t


def parse_declarations(text, inv):
    toks = strip_attributes(tokenize(text))
    i = 0
    while i < len(toks):
        t = toks[i]
        if t == "{":
            i = skip_balanced(toks, i)  # a function body
            continue
        if t in ("struct", "union", "enum") and i + 1 < len(toks):
            tag = toks[i + 1] if toks[i + 1] != "{" else None
            k = i + 2 if tag else i + 1
            if k < len(toks) and toks[k] == "{":
                end = skip_balanced(toks, k)
                body = toks[k + 1:end - 1]
                if t == "enum":
                    parse_enum_body(body, inv)
                    if tag:
                        inv.enum_tags.append(f"enum {tag}")
                else:
                    members = []
                    parse_member_decls(body, "", inv, members)
                    if not tag:
                        raise SystemExit("abi_headers: untagged top-level struct/union "
                                         "(typedef'd?); teach abi_headers.py about it")
                    inv.records[f"{t} {tag}"] = members
                i = end
                continue
        if t == "typedef":
            j, depth = i, 0
            while not (toks[j] == ";" and depth == 0):
                if toks[j] in "([{":
                    depth += 1
                elif toks[j] in ")]}":
                    depth -= 1
                j += 1
            decl = toks[i + 1:j]
            if "{" in decl:
                raise SystemExit("abi_headers: typedef with a body; teach abi_headers.py about it")
            if "(" in decl:  # function or function-pointer type
                name = declarator_name(decl[decl.index("("):])[0]
            else:
                name = decl[-1]
            inv.typedefs[name] = norm(" ".join(t for t in decl if t != name))
            i = j + 1
            continue
        i += 1


# --------------------------------------------------------------------------
# Macros, straight from the header text
# --------------------------------------------------------------------------

NUMERIC_RE = re.compile(r"^[\w\s()+\-*/%<>|&^~!?:]+$")


def scan_macros(incdir, inv):
    for h in HEADERS:
        with open(os.path.join(incdir, h)) as f:
            text = f.read()
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = re.sub(r"//[^\n]*", "", text)
        text = text.replace("\\\n", " ")
        undefined = set(re.findall(r"^\s*#\s*undef\s+(\w+)", text, re.M))
        for m in re.finditer(r"^\s*#\s*define\s+(\w+)(\(([^)]*)\))?(.*)$", text, re.M):
            name, fargs, body = m.group(1), m.group(3), " ".join(m.group(4).split())
            if name in undefined:
                continue  # a helper the header removes again
            if fargs is not None:
                kind = "fmacro"
                body = f"({','.join(a.strip() for a in fargs.split(','))}) {body}"
            elif body == "":
                kind = "flag"
            elif NUMERIC_RE.match(body) and not (set(re.findall(r"\w+", body)) & KEYWORDS_TYPEISH):
                kind = "value"
            else:
                kind = "text"
            inv.macros[name] = {"kind": kind, "body": norm(body), "header": h}


# --------------------------------------------------------------------------
# Prototypes, from gcc -aux-info
# --------------------------------------------------------------------------

def scan_prototypes(incdir, inv):
    with tempfile.TemporaryDirectory() as d:
        tu = os.path.join(d, "tu.c")
        aux = os.path.join(d, "tu.aux")
        with open(tu, "w") as f:
            f.write(translation_unit())
        subprocess.run([AUX_CC, "-std=gnu11", "-c", "-o", os.devnull, "-aux-info", aux,
                        "-I", incdir] + CPPFLAGS + [tu], check=True)
        with open(aux) as f:
            lines = f.read().splitlines()
    ours = header_paths(incdir)
    for line in lines:
        m = re.match(r"/\* (.*):\d+:\w+ \*/ (.*?);(?: /\* \(([^)]*)\).*\*/)?$", line)
        if not m or os.path.realpath(m.group(1)) not in ours:
            continue
        proto, names = m.group(2), m.group(3)
        # Drop parameter names (present for inline definitions only).
        pm = re.match(r"(.*?)\s*\b(\w+) \((.*)\)$", proto)
        if not pm:
            raise SystemExit(f"abi_headers: cannot read prototype {proto!r}")
        ret, fname, params = pm.groups()
        if names:
            plist = [p.strip() for p in split_params(params)]
            nlist = [n.strip() for n in names.split(",")]
            if len(plist) == len(nlist):
                plist = [re.sub(r"\b%s\s*((?:\[[^\]]*\])*)$" % re.escape(n), r"\1", p).strip()
                         for p, n in zip(plist, nlist)]
            params = ", ".join(plist)
        ret = ret.replace("extern ", "").strip()
        static = ret.startswith("static ")
        inv.funcs[fname] = {"proto": norm(f"{ret} {fname}({params})"), "static": static}


def split_params(params):
    out, depth, cur = [], 0, ""
    for ch in params:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def scan(incdir, out):
    incdir = os.path.abspath(incdir)
    for h in HEADERS:
        if not os.path.exists(os.path.join(incdir, h)):
            raise SystemExit(f"abi_headers: {incdir}/{h} does not exist")
    inv = Inventory()
    parse_declarations(preprocess(incdir), inv)
    scan_macros(incdir, inv)
    scan_prototypes(incdir, inv)
    with open(out, "w") as f:
        json.dump(inv.__dict__, f, indent=1, sort_keys=True)


# --------------------------------------------------------------------------
# Comparison of the two inventories
# --------------------------------------------------------------------------

def items(inv):
    """Flatten an inventory into {(kind, name): detail}."""
    d = {}
    for rec, members in inv["records"].items():
        d[("record", rec)] = None
        short = rec.split()[-1]
        for m in members:
            d[("member", f"{short}.{m['path']}")] = m
    for t in inv["enum_tags"]:
        d[("enum", t)] = None
    for c in inv["enum_consts"]:
        d[("const", c)] = None
    for t, ty in inv["typedefs"].items():
        d[("typedef", t)] = ty
    for name, mac in inv["macros"].items():
        d[("macro", name)] = mac
    for name, fn in inv["funcs"].items():
        d[("func", name)] = fn
    return d


def read_allowlist(path):
    allow = set()
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if line and line[0] == "record":
                # record names carry their keyword: "record struct foo"
                line = [line[0], " ".join(line[1:])]
            if line:
                if len(line) != 2:
                    raise SystemExit(f"abi_headers: bad allowlist line {line!r}")
                allow.add((line[0], line[1]))
    return allow


def load(path):
    with open(path) as f:
        return json.load(f)


def compare(ours_path, ref_path, allow_path):
    ours, ref = items(load(ours_path)), items(load(ref_path))
    superset = allow_path == "-"
    allow = set() if superset else read_allowlist(allow_path)
    problems = []
    for key in sorted(set(ref) - set(ours)):
        problems.append(f"missing from ours: {key[0]} {key[1]}")
    for key in sorted(set(ours) - set(ref)):
        if superset:
            break
        if key in allow:
            continue
        if key[0] == "func" and ours[key]["static"] and key[1].startswith("__"):
            continue  # a header-internal inline helper, no ABI
        problems.append(f"only in ours, not in ours-only.txt: {key[0]} {key[1]}")
    for key in sorted(allow & set(ref)):
        problems.append(f"ours-only.txt lists {key[0]} {key[1]}, but the reference has it")
    for key in sorted(set(ours) & set(ref)):
        kind, a, b = key[0], ours[key], ref[key]
        if kind == "member" and a["type"] != b["type"]:
            problems.append(f"type of {key[1]}: ours '{a['type']}', reference '{b['type']}'")
        elif kind == "typedef" and a != b:
            problems.append(f"typedef {key[1]}: ours '{a}', reference '{b}'")
        elif kind == "macro":
            if a["kind"] != b["kind"]:
                problems.append(f"macro {key[1]}: ours is a {a['kind']} ({a['body']!r}), "
                                f"reference a {b['kind']} ({b['body']!r})")
            elif a["kind"] in ("text", "fmacro") and a["body"] != b["body"]:
                problems.append(f"macro {key[1]}: ours '{a['body']}', reference '{b['body']}'")
        elif kind == "func" and a["proto"] != b["proto"]:
            problems.append(f"prototype of {key[1]}:\n      ours      {a['proto']}\n"
                            f"      reference {b['proto']}")
    for p in problems:
        print("  " + p)
    return 1 if problems else 0


# --------------------------------------------------------------------------
# The layout program
# --------------------------------------------------------------------------

PROLOGUE = r"""/* Generated by tests/abi/abi_headers.py: do not edit. */
#include <stddef.h>
#include <stdio.h>
%(includes)s
#define SGN(x) _Generic((x), \
	char: (char)-1 < 0, signed char: 1, short: 1, int: 1, long: 1, \
	long long: 1, _Bool: 0, unsigned char: 0, unsigned short: 0, \
	unsigned: 0, unsigned long: 0, unsigned long long: 0, default: -1)
#define REC(T) printf("%%s size=%%zu align=%%zu\n", #T, sizeof(T), _Alignof(T))
#define MEM(T, m) printf("  %%s.%%s off=%%zu size=%%zu align=%%zu class=%%d signed=%%d\n", \
	#T, #m, offsetof(T, m), sizeof(((T *)0)->m), __alignof__(((T *)0)->m), \
	__builtin_classify_type(((T *)0)->m), SGN(((T *)0)->m))
#define FLEX(T, m) printf("  %%s.%%s off=%%zu (flexible array)\n", #T, #m, offsetof(T, m))
#define CONST(c) printf("%%s value=%%lld\n", #c, (long long)(c))
#define VALUE(c) printf("%%s value=0x%%llx size=%%zu signed=%%d\n", #c, \
	(unsigned long long)(c), sizeof(c), SGN(c))

int main(void)
{
"""


def gen(ours_path, ref_path, out):
    ours_inv, ref_inv = load(ours_path), load(ref_path)
    common = set(items(ours_inv)) & set(items(ref_inv))
    lines = []
    for rec, members in ours_inv["records"].items():
        if ("record", rec) not in common:
            continue
        ctype = rec
        lines.append(f"\tREC({ctype});")
        short = rec.split()[-1]
        for m in members:
            if ("member", f"{short}.{m['path']}") not in common:
                continue
            if m["bitfield"]:
                lines.append(f'\tputs("  {short}.{m["path"]} bitfield {m["type"]}");')
            elif m["flex"]:
                lines.append(f"\tFLEX({ctype}, {m['path']});")
            else:
                lines.append(f"\tMEM({ctype}, {m['path']});")
    for t in ours_inv["enum_tags"]:
        if ("enum", t) in common:
            lines.append(f"\tREC({t});")
    for t in ours_inv["typedefs"]:
        if ("typedef", t) in common:
            lines.append(f"\tREC({t});")
    for c in ours_inv["enum_consts"]:
        if ("const", c) in common:
            lines.append(f"\tCONST({c});")
    for name, mac in ours_inv["macros"].items():
        if ("macro", name) in common and mac["kind"] == "value":
            lines.append(f"\tVALUE({name});")
    includes = "\n".join(f"#include <{h}>" for h in HEADERS)
    with open(out, "w") as f:
        f.write(PROLOGUE % {"includes": includes})
        f.write("\n".join(lines))
        f.write("\n\treturn 0;\n}\n")


def main(argv):
    if len(argv) >= 2 and argv[1] == "scan" and len(argv) == 4:
        return scan(argv[2], argv[3])
    if len(argv) >= 2 and argv[1] == "compare" and len(argv) == 5:
        return compare(argv[2], argv[3], argv[4])
    if len(argv) >= 2 and argv[1] == "gen" and len(argv) == 5:
        return gen(argv[2], argv[3], argv[4])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv) or 0)
