"""Per-instruction tests of the interpreter: each instruction really appears in ``dis`` output
on the running Python (skipped where this Python doesn't have it), and the function using it
gives the same result, or raises the same exception, compiled as in plain Python."""

from __future__ import annotations

import dis
import sys

import pytest
import torch

import minicompile as mc
from minicompile.dynamo import handlers_data, handlers_flow  # noqa: F401 (registers handlers)
from minicompile.dynamo.bytecode import PYTHONS, RENAMES, cleaned_instructions, format_cleaned
from minicompile.dynamo.symbolic_convert import OPCODE_HANDLERS

from bytecode_corpus import CORPUS, EXCEPTION_PATH, all_instructions, f_assert, f_branches


def exists_here(opname: str) -> bool:
    """A real instruction of this Python (3.12's opmap also lists pseudo-instructions >= 256)."""
    return dis.opmap.get(opname, 256) < 256


@pytest.mark.parametrize("opname", sorted(CORPUS))
def test_instruction_appears_in_dis(opname):
    if not exists_here(opname):
        pytest.skip(f"{opname} does not exist on Python {sys.version_info[:2]}")
    fn, _ = CORPUS[opname]
    assert opname in all_instructions(fn), f"{fn.__name__} does not use {opname} here"


@pytest.mark.parametrize("opname", sorted(CORPUS))
def test_instruction_runs_like_python(opname):
    if not exists_here(opname):
        pytest.skip(f"{opname} does not exist on Python {sys.version_info[:2]}")
    fn, args = CORPUS[opname]
    expected = fn(*args)
    got = mc.compile(fn, backend="eager")(*args)
    assert got == expected and type(got) is type(expected)
    assert mc.metrics.eager_fallbacks == 0, "the frame was not traced"
    assert mc.metrics.frames_compiled == 1


def test_every_corpus_instruction_has_a_handler_after_normalisation():
    missing = {inst.opname for fn, _ in CORPUS.values()
               for inst in cleaned_instructions(fn.__code__)} - set(OPCODE_HANDLERS) - EXCEPTION_PATH
    assert not missing


def test_renamed_instructions_are_handled():
    assert set(RENAMES.values()) <= set(OPCODE_HANDLERS)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="END_FOR is new in 3.12")
def test_for_iter_exits_past_end_for():
    """An exhausted FOR_ITER pops its iterator and continues after END_FOR (3.12) or after
    END_FOR and the POP_TOP that follows it (3.13): the 3.11 meaning of its target."""
    skipped = ["END_FOR", "POP_TOP"] if sys.version_info >= (3, 13) else ["END_FOR"]
    insts = cleaned_instructions(CORPUS["FOR_ITER"][0].__code__)
    for inst in insts:
        if inst.opname == "FOR_ITER":
            target = next(k for k, i in enumerate(insts) if i is inst.target)
            if sys.version_info >= (3, 12):
                assert [i.opname for i in insts[target - len(skipped):target]] == skipped


def test_same_exception_as_python():
    cf = mc.compile(f_assert, backend="eager")
    with pytest.raises(AssertionError, match="negative"):
        cf(-1)
    cz = mc.compile(lambda a: a / 0, backend="eager")
    with pytest.raises(ZeroDivisionError):
        cz(3)


def test_branches_with_tensors_follow_constants():
    x = torch.randn(3)
    cf = mc.compile(lambda x, flag=None: f_branches(x.shape[0], flag) * x, backend="eager")
    torch.testing.assert_close(cf(x), f_branches(3, None) * x)
    torch.testing.assert_close(cf(x, 0), f_branches(3, 0) * x)


def test_tensor_instructions_in_one_graph():
    def fn(x, xs):
        a, *rest = xs
        ys = [t * 2 for t in rest]
        d = {"k": x, **{"m": a}}
        s = x[1:3] + x[:2]
        s[0] = -s[1]
        return (*ys, d["k"] @ d["m"], s, -x, ~(x > 0), not x.shape[0])

    x, xs = torch.randn(4, 4), [torch.randn(4, 4) for _ in range(3)]
    expected = fn(x, xs)
    got = mc.compile(fn, backend="eager")(x, xs)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e)
    assert mc.metrics.graphs_compiled == 1 and mc.metrics.eager_fallbacks == 0


def test_instruction_table_doc_is_current():
    import os

    from minicompile.course.instruction_table import instruction_table

    path = os.path.join(os.path.dirname(__file__), "..", "docs", "instructions.md")
    assert instruction_table() in open(path).read(), "regenerate docs/instructions.md"


def test_instruction_table_column_of_this_python_is_true():
    """The table's yes/- for the running version is what its ``dis`` says is a real instruction
    (so each CPython that runs the suite checks its own column)."""
    from minicompile.course.instruction_table import instruction_table

    column = 1 + PYTHONS.index(sys.version_info[:2])
    wrong = []
    for row in instruction_table().splitlines()[2:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        opname = cells[0][1:cells[0].index("]")]  # [NAME](link)
        if (cells[column] == "yes") != exists_here(opname):
            wrong.append(f"{opname}: {cells[column]}")
    assert not wrong, f"Python {sys.version_info[:2]} column: {wrong}"


def test_cleaned_listing_shows_the_normalised_instructions():
    """The listing notebook 01 prints is what the interpreter executes, not dis's: a global call
    gets its own PUSH_NULL, RESUME is a NOP, and every renamed instruction says what it was."""
    def calls_a_global():
        return range(3)

    cleaned = format_cleaned(calls_a_global.__code__)
    original = dis.Bytecode(calls_a_global.__code__).dis()
    assert "PUSH_NULL  (was LOAD_GLOBAL)" in cleaned and "PUSH_NULL" not in original
    assert "NOP 0  (was RESUME)" in cleaned
    names = [inst.opname for inst in cleaned_instructions(calls_a_global.__code__)]
    body = cleaned.splitlines()[1:]
    assert len(body) == len(names)
    assert all(name in line for name, line in zip(names, body))
