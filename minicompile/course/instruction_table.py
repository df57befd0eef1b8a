"""docs/instructions.md: the instruction table, generated from the interpreter's handler
registry (course tooling: no counterpart in torch)."""

from __future__ import annotations

from ..dynamo import handlers_data, handlers_flow  # noqa: F401  (fill the registry)
from ..dynamo.bytecode import EXCEPTION_PATH, EXPANSIONS, PYTHONS, RENAMES, dis_link, exists_on
from ..dynamo.symbolic_convert import OPCODE_HANDLERS


def instruction_table() -> str:
    """docs/instructions.md: every instruction of the supported CPythons (bytecode.PYTHONS) the
    interpreter meets, as a Markdown table generated from the handler registry (so it stays
    true), a column per CPython."""
    names = set(OPCODE_HANDLERS) | set(RENAMES) | set(EXPANSIONS) | EXCEPTION_PATH
    names -= {"LOAD_SUPER_METHOD", "STOPITERATION_ERROR", "CACHE"}  # internal names, no opcodes
    versions = " | ".join("%d.%d" % v for v in PYTHONS)
    rows = [f"| instruction | {versions} | supported | handler | notes |",
            "|---|" + "---|" * len(PYTHONS) + "---|---|---|"]
    for name in sorted(names):
        on = [exists_on(name, version) for version in PYTHONS]
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
        newest = max(v for v, there in zip(PYTHONS, on) if there)  # its docs: the newest release
        link = f"[{name}]({dis_link(name, newest)})"
        columns = " | ".join("yes" if there else "-" for there in on)
        rows.append(f"| {link} | {columns} | {supported} | {where} | {note} |")
    return "\n".join(rows) + "\n"
