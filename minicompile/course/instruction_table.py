"""docs/instructions.md: the instruction table, generated from the interpreter's handler
registry (course tooling: no counterpart in torch)."""

from __future__ import annotations

from ..dynamo import handlers_data, handlers_flow  # noqa: F401  (fill the registry)
from ..dynamo.bytecode import (EXCEPTION_PATH, EXPANSIONS, ONLY_311, ONLY_312, ONLY_313,
                               REMOVED_IN_313, RENAMES, dis_link)
from ..dynamo.symbolic_convert import OPCODE_HANDLERS


def instruction_table() -> str:
    """docs/instructions.md: every instruction of 3.11 to 3.13 the interpreter meets, as a
    Markdown table generated from the handler registry (so it stays true)."""
    names = set(OPCODE_HANDLERS) | set(RENAMES) | set(EXPANSIONS) | EXCEPTION_PATH
    names -= {"LOAD_SUPER_METHOD", "CACHE"}  # internal names, not real instructions
    rows = ["| instruction | 3.11 | 3.12 | 3.13 | supported | handler | notes |",
            "|---|---|---|---|---|---|---|"]
    for name in sorted(names):
        new_in_313 = name in ONLY_313
        on311 = name not in ONLY_312 and not new_in_313
        on312 = name not in ONLY_311 and not new_in_313
        on313 = name not in ONLY_311 and name not in REMOVED_IN_313
        target = RENAMES.get(name, name)
        fn = OPCODE_HANDLERS.get(target)
        if name in EXCEPTION_PATH:
            supported, where, note = "not needed", "-", "exception path only"
        elif fn is None and name in EXPANSIONS:
            supported, where, note = "yes", "(normalised)", EXPANSIONS[name]
        elif fn is None:
            supported, where, note = "no", "-", "Unsupported"
        else:
            supported = "yes" if getattr(fn, "supported", True) else "no (Unsupported)"
            where = f"`{fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}`"
            note = f"-> {target}" if target != name else EXPANSIONS.get(name, "")
        link = f"[{name}]({dis_link(name, '3.13' if on313 else '3.12' if on312 else '3.11')})"
        columns = " | ".join("yes" if on else "-" for on in (on311, on312, on313))
        rows.append(f"| {link} | {columns} | {supported} | {where} | {note} |")
    return "\n".join(rows) + "\n"
