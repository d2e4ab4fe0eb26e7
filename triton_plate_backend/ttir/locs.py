"""MLIR locations: parsed to small trees while reading, resolved to `Loc` once every `#locN`
alias is known (Triton prints most aliases AFTER the module, so resolution waits for the end).

Trees are tuples: ("file", f, line, col) | ("unknown",) | ("name", n, child | None) |
("callsite", callee, caller) | ("fused", children) | ("alias", "loc12").

Resolution rule (what a user wants to read in an error): unfold the call chain, innermost frame
first; the kernel's file is the file of the outermost frame (the @jit function that was
compiled). The op gets the innermost frame in that file, so a line inside a user helper wins
over its call site, while code inlined from `triton/language/*.py` reports the kernel line that
called it. A name loc (`loc("x"(...))`, the Python variable) names the outermost frame it wraps.
"""

from __future__ import annotations

from ..srcloc import Loc
from .attrs import decode_string

UNKNOWN = ("unknown",)

Frame = tuple[str, int, int, str]  # file, line, col, name


def frames(tree, aliases: dict, seen: frozenset = frozenset()) -> list[Frame]:
    """The call chain of a location tree, innermost (callee) first."""
    kind = tree[0]
    if kind == "alias":
        if tree[1] in seen:
            raise ValueError(f"location alias #{tree[1]} refers to itself")
        if tree[1] not in aliases:
            raise KeyError(tree[1])
        return frames(aliases[tree[1]], aliases, seen | {tree[1]})
    if kind == "file":
        return [(tree[1], tree[2], tree[3], "")]
    if kind == "name":
        inner = frames(tree[2], aliases, seen) if tree[2] is not None else []
        if not inner:
            return [("", 0, 0, tree[1])]
        f, line, col, _ = inner[-1]
        return inner[:-1] + [(f, line, col, tree[1])]
    if kind == "callsite":
        return frames(tree[1], aliases, seen) + frames(tree[2], aliases, seen)
    if kind == "fused":
        for child in tree[1]:
            found = frames(child, aliases, seen)
            if any(fr[0] for fr in found):
                return found
        return []
    return []  # unknown


def to_loc(tree, aliases: dict) -> Loc:
    chain = frames(tree, aliases)
    files = [fr for fr in chain if fr[0]]
    if not files:
        names = [fr[3] for fr in chain if fr[3]]
        return Loc(name=names[-1]) if names else Loc()
    kernel_file = files[-1][0]
    for f, line, col, name in files:
        if f == kernel_file:
            return Loc(f, line, col, name)
    raise AssertionError("unreachable: the outermost frame is in the kernel file")


class LocResolver:
    """Memoised alias resolution: thousands of ops share a few hundred `#locN` aliases."""

    def __init__(self, aliases: dict):
        self.aliases = aliases
        self.memo: dict[str, Loc] = {}

    def __call__(self, tree) -> Loc:
        if tree[0] == "alias":
            loc = self.memo.get(tree[1])
            if loc is None:
                loc = self.memo[tree[1]] = to_loc(tree, self.aliases)
            return loc
        return to_loc(tree, self.aliases)


# ---- locations in the token stream (bound as a Parser method: p.opt_loc()) --------------------


def parse_opt_loc(p):
    """An optional trailing `loc(...)`; returns its tree or None."""
    tok = p.toks[p.i]
    if tok[:5] == "loc(#":
        p.i += 1
        return ("alias", tok[5:-1])
    if tok != "loc":
        return None
    p.i += 1
    p.expect("(")
    tree = parse_loc_body(p)
    p.expect(")", "to close loc(...)")
    return tree


def parse_loc_body(p):
    tok = p.next()
    if tok[:1] == "#":
        return ("alias", tok[1:])
    if tok == "unknown":
        return UNKNOWN
    if tok[:1] == '"':
        text = decode_string(tok)
        if p.accept(":"):
            line = p.integer()
            p.expect(":")
            col = p.integer()
            if p.accept("to"):  # a range: keep its start
                if p.toks[p.i][:1].isdigit():
                    p.integer()
                p.expect(":")
                p.integer()
            return ("file", text, line, col)
        if p.accept("("):
            child = parse_loc_body(p)
            p.expect(")")
            return ("name", text, child)
        return ("name", text, None)
    if tok == "callsite":
        p.expect("(")
        callee = parse_loc_body(p)
        p.expect("at", "in callsite(... at ...)")
        caller = parse_loc_body(p)
        p.expect(")")
        return ("callsite", callee, caller)
    if tok == "fused" or tok.startswith("fused<"):
        p.expect("[")
        children = [parse_loc_body(p)]
        while p.accept(","):
            children.append(parse_loc_body(p))
        p.expect("]")
        return ("fused", tuple(children))
    raise p.error(f"expected a location, found '{tok}'", p.i - 1)
