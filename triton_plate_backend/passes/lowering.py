"""The one lowering table: TTIR op name -> lowering rule (`LOWERING`), gathered at import from the
rules_*.py modules (each declares its own `RULES`), with the ops plate refuses on purpose
(`REJECTED`, with the reason the user sees) and the ops whose parent op lowers them
(`HANDLED_BY_PARENT`). Adding an op means adding a rule to a rules_* module's RULES; a
completeness test checks the table against the TTIR op list."""

from __future__ import annotations

from ..errors import CompileError
from . import rules_arith, rules_dot, rules_map, rules_math, rules_memory, rules_reduce, rules_scf, rules_tt

RULE_MODULES = (rules_arith, rules_math, rules_tt, rules_reduce, rules_map, rules_memory, rules_scf, rules_dot)


def _gather_rules(modules) -> dict:
    table: dict = {}
    for mod in modules:
        for op_name, rule in mod.RULES.items():
            if op_name in table:
                raise CompileError(f"internal: two lowering rules for {op_name} (the second in {mod.__name__})")
            table[op_name] = rule
    return table


LOWERING: dict = _gather_rules(RULE_MODULES)

# ops plate refuses on purpose, with the reason the user sees
REJECTED: dict[str, str] = {
    "tt.elementwise_inline_asm": "PTX inline assembly cannot run on PLATE; express the function with tl.* ops "
    "(or libdevice functions plate maps)",
    "tt.call": "a call to a function that could not be inlined (recursive or with several blocks)",
}

# ops with no rule of their own because the op that owns them lowers them
HANDLED_BY_PARENT: dict[str, str] = {
    "builtin.module": "the module: codegen lowers its public tt.func",
    "tt.func": "the kernel: codegen walks its body; other functions are inlined (passes/inline.py)",
    "tt.reduce.return": "terminator of a tt.reduce combine region, read by the tt.reduce rule",
    "tt.scan.return": "terminator of a tt.scan combine region, read by the tt.scan rule",
}
