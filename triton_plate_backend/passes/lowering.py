"""The one lowering table: TTIR op name -> lowering rule (`LOWERING`), gathered at import from the
rules_*.py modules (each declares its own `RULES`). The ops plate refuses on purpose (`REJECTED`,
with the reason the user sees) and those the op that owns them lowers (`HANDLED_BY_PARENT`) are read
from the op vocabulary (`ir.vocabulary.OPS`). Adding an op means a row there and a rule in a rules_*
module's RULES; a completeness test checks the two against each other."""

from __future__ import annotations

from ..errors import CompileError
from ..ir.vocabulary import OPS
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

# the ops without a rule, and why: the vocabulary's lowering column (`why` is what the user sees)
REJECTED: dict[str, str] = {name: op.why for name, op in OPS.items() if op.lowering == "rejected"}
HANDLED_BY_PARENT: dict[str, str] = {name: op.why for name, op in OPS.items() if op.lowering == "parent"}
