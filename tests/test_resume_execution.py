"""Resume functions and the bytecode assembler, checked against real CPython execution.

For every function of a corpus and every offset it reaches, we stop a real run there (an
instrumented copy, see minicompile/dynamo/stack_capture.py), build a resume function at that
offset from the captured stack and the *live* locals only, call it and compare with what the
original function returns (or raises). This module needs neither torch nor pytest: it also runs
as a script under any supported Python (``PYTHONPATH=. python3.12 tests/test_resume_execution.py``),
which is how ``course.sh test`` checks the versions it has no torch for.
"""

from __future__ import annotations

import dis
import importlib
import math
import os
import sys
import types

try:
    import pytest
except ImportError:  # plain-script run (python3.12 without pytest): see the bottom of the file
    pytest = None

from torch_free import load_bytecode_layer_without_torch

load_bytecode_layer_without_torch()  # before the first import of minicompile

from minicompile.dynamo.bytecode import cleaned_instructions, expansion_start
from minicompile.dynamo.bytecode_analysis import live_locals_at, stack_depths
from minicompile.dynamo.bytecode_transformation import (
    code_from_instructions,
    instructions_from_code,
    parse_exception_table,
)
from minicompile.dynamo.resume_execution import (
    CONTEXT,
    NULL,
    VALUE,
    ContinueExecutionCache,
    ResumeSpec,
    create_resume,
    live_locals,
    resume_blocker,
    resume_function,
)
from minicompile.dynamo.stack_capture import capture

# ------------------------------------------------------------------------------ the corpus


def helper(a, b=2):
    return a * 10 + b


class Counter:
    def __init__(self):
        self.n = 0

    def bump(self, k):
        self.n += k
        return self.n


class Ctx:
    """A context manager that logs enter/exit, so a missed or doubled __exit__ shows."""

    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, *exc):
        self.log.append("exit" if exc[0] is None else f"exit:{exc[0].__name__}")
        return False


def straight_line(a, b):
    c = a + b
    d = c * 2 - a
    unused = d * 100
    return (c, d, helper(a, d))


def for_loop(n, out):
    total = 0
    for i in range(n):
        total += i * i
        out.append(total)
    return total, out


def while_loop_break_continue(n):
    i, acc = 0, []
    while True:
        i += 1
        if i % 3 == 0:
            continue
        if i > n:
            break
        acc.append(i)
    return acc


def nested_loops(xs, ys):
    pairs = []
    for x in xs:
        for j, y in enumerate(ys):
            if (x + y) % 2:
                pairs.append((x, j, y))
    return pairs


def pending_call_and_tuple(a, b):
    # offsets inside these expressions have a NULL, a callable or a half-built tuple on the stack
    return (a, b, helper(a, helper(b, a)), [a, b, a + b], {"k": a, "v": helper(b)})


def method_calls(xs):
    c = Counter()
    out = []
    for x in xs:
        out.append(c.bump(x))
    return out, c.n, math.sqrt(c.n), " ".join(str(v) for v in out)


def with_block(log, x):
    with Ctx(log) as c:
        y = x + 1
        log.append(y)
        z = helper(y)
    return z, c is not None, log


def with_raises(log, x):
    try:
        with Ctx(log):
            log.append("body")
            if x > 0:
                raise ValueError("boom")
            log.append("not reached")
    except ValueError as e:
        log.append(str(e))
    return log


def nested_try_with(log, xs):
    total = 0
    for x in xs:
        try:
            with Ctx(log):
                try:
                    total += 10 // x
                finally:
                    log.append(("finally", x))
        except ZeroDivisionError:
            log.append("zero")
            total -= 1
        else:
            log.append("ok")
    return total, log


def comprehensions(xs, k):
    squares = [x * x for x in xs if x % 2 == 0]
    table = {x: x + k for x in xs}
    sets = {x % 3 for x in xs}
    nested = [[x * y for y in range(3)] for x in xs[:3]]
    return squares, table, sorted(sets), nested


def comprehension_shadowing(xs):
    x = "outer"
    ys = [x + 1 for x in xs]  # 3.12 inlines this: the outer x is saved on the stack meanwhile
    return ys, x


def closures(a):
    scale = a + 1  # a cell variable: read by the nested function

    def inner(v):
        return v * scale

    scale += 1
    return [inner(i) for i in range(3)], scale


def make_closure_user(k):
    def user(x):  # has a free variable k
        y = x + k
        return [y * i for i in range(k)]

    return user


closure_user = make_closure_user(3)


def keyword_and_star_calls(a, *args, key=1, **kw):
    r1 = helper(b=a, a=key)
    r2 = helper(*args[:2])
    r3 = dict(**kw, extra=a)
    return r1, r2, sorted(r3.items())


def chained_compare_and_unpack(a, b, c):
    first, *rest = [a, b, c, a + b]
    ok = a < b <= c
    x, (y, z) = a, (b, c)
    return first, rest, ok, x + y + z, f"{a}-{b!r}:{c:>4}"


def exceptions_and_finally(xs):
    log = []
    for x in xs:
        try:
            if x < 0:
                raise KeyError(x)
            log.append(100 // x)
        except ZeroDivisionError:
            log.append("div")
        except KeyError as e:
            log.append(("key", e.args[0]))
        finally:
            log.append("f")
    return log


def raises_at_end(a):
    b = a * 2
    return helper(b) + {"x": 1}[a]  # KeyError for a != "x": same exception expected


def del_and_rebind(a):
    b = a + 1
    c = b * 2
    del b
    b = c - 1
    return b, c


def conditional_binding(flag, a):
    if flag:
        maybe = a * 3  # bound on one path only: live after the if, maybe unbound
    out = []
    if flag:
        out.append(maybe)
    return out


def long_function(n):
    # > 256 constants and long jumps: needs EXTENDED_ARG prefixes
    acc = 0
    for i in range(n):
        acc += i
        if acc > 10**9:
            break
        """padding"""
    return acc + sum([1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009]) + BIG[-1]


BIG = eval("[" + ",".join(f"'{i}' * 2" for i in range(300)) + "]")


def many_constants():
    vals = eval("[" + ",".join(str(i + 0.5) for i in range(300)) + "]")
    return vals[-1]


def slicing(xs, n, ys):
    head = xs[:n]  # 3.12: BINARY_SLICE (-> BUILD_SLICE 2; BINARY_SUBSCR)
    ys[1:n] = head  # 3.12: STORE_SLICE (-> BUILD_SLICE 2; STORE_SUBSCR)
    if helper(len(head)) > 0:  # LOAD_GLOBAL with the NULL bit (-> PUSH_NULL; LOAD_GLOBAL)
        return None  # 3.12: RETURN_CONST (-> LOAD_CONST; RETURN_VALUE)
    return ys


exec("def huge(x):\n" + "".join(f"    x = x + {i}.25\n" for i in range(300))
     + "    for i in range(3):\n        x = x - i\n    return x\n")

CASES = [
    (straight_line, (3, 4)),
    (for_loop, (5, [])),
    (while_loop_break_continue, (8,)),
    (nested_loops, ([1, 2, 3], [4, 5])),
    (pending_call_and_tuple, (2, 5)),
    (method_calls, ([1, 2, 3],)),
    (with_block, ([], 4)),
    (with_raises, ([], 1)),
    (with_raises, ([], -1)),
    (nested_try_with, ([], [2, 0, 5])),
    (comprehensions, ([1, 2, 3, 4, 5], 7)),
    (comprehension_shadowing, ([1, 2, 3],)),
    (closures, (2,)),
    (closure_user, (5,)),
    (keyword_and_star_calls, (1, 2, 3, 4)),
    (chained_compare_and_unpack, (1, 2, 3)),
    (exceptions_and_finally, ([5, 0, -2, 3],)),
    (raises_at_end, ("x",)),
    (raises_at_end, ("y",)),
    (del_and_rebind, (4,)),
    (conditional_binding, (True, 2)),
    (conditional_binding, (False, 2)),
    (slicing, ([1, 2, 3, 4], 3, [0, 0, 0, 0])),
    (long_function, (50,)),
    (huge, (1.0,)),  # noqa: F821 (defined by exec above)
]


def outcome(fn, *args):
    """(return value, None) or (None, (exception type, message))."""
    try:
        return fn(*args), None
    except Exception as e:  # noqa: BLE001
        return None, (type(e), str(e))


def check_resume_everywhere(fn, args) -> int:
    """Resume at every offset the run reaches (every 37th in long functions); returns how many
    offsets were checked."""
    import copy

    expected = outcome(fn, *copy.deepcopy(args))
    insts = instructions_from_code(fn.__code__)
    checked = 0
    every = 1 if len(insts) < 300 else 37
    for inst in insts[::every]:
        if resume_blocker(insts, inst):
            continue
        snap = capture(fn, inst.offset, *copy.deepcopy(args))
        if snap is None:  # never reached on this input
            continue
        live = live_locals(fn.__code__, inst.offset)
        passed = [name for name in live if name in snap.locals]
        spec = ResumeSpec(fn.__code__, inst.offset, snap.stack_kinds, tuple(passed))
        resume = resume_function(create_resume(spec, f"__resume_at_{inst.offset}"), fn, snap.cells)
        got = outcome(resume, *snap.stack_values, *[snap.locals[n] for n in passed])
        assert got == expected, f"{fn.__name__} resumed at {inst}: {got} != {expected}"
        checked += 1
    return checked


def test_resume_at_every_offset(case):
    fn, args = case
    assert check_resume_everywhere(fn, args) > 3


# --------------------------------------------------------------- hand-built stack layouts


def test_pending_call_with_null_slot():
    """Resume inside ``helper(a, helper(b, a))``: [NULL, helper, a] waits on the stack."""
    def f(a, b):
        return helper(a, helper(b, a))

    insts = instructions_from_code(f.__code__)
    # the LOAD_FAST b that starts the inner call's arguments (3.13: LOAD_FAST_LOAD_FAST b, a)
    inner = [i for i in insts if i.opname.startswith("LOAD_FAST") and
             (i.argval == "b" or i.argval == ("b", "a"))][0]
    assert stack_depths(insts)[inner] == 5  # NULL helper a NULL helper (3.13: helper NULL ...)
    layout = (VALUE, NULL, VALUE, VALUE, NULL) if sys.version_info >= (3, 13) else \
        (NULL, VALUE, VALUE, NULL, VALUE)
    spec = ResumeSpec(f.__code__, inner.offset, layout, ("a", "b"))
    resume = resume_function(create_resume(spec, "__resume_at_inner"), f)
    assert resume(helper, 7, helper, 7, 3) == f(7, 3)
    assert resume(lambda x, y: ("outer", x, y), 1, helper, 7, 3) == ("outer", 1, 3 * 10 + 7)


def test_context_slot_reenters_the_with_block():
    """A CONTEXT slot gets a context manager; the prologue enters it, the body exits it."""
    log = []

    def f(log, x):
        with Ctx(log):
            log.append("before")
            log.append(x)   # resume here: __exit__ of the Ctx is the only stack value
        return log

    insts = instructions_from_code(f.__code__)
    at = [i for i in insts if i.opname == "LOAD_FAST" and i.argval == "log"][2]
    assert stack_depths(insts)[at] == 1
    spec = ResumeSpec(f.__code__, at.offset, (CONTEXT,), ("log", "x"))
    resume = resume_function(create_resume(spec, "__resume_ctx"), f)
    assert resume(Ctx(log), log, 5) == ["enter", 5, "exit"]


def test_breaks_happen_before_the_first_part_of_an_expansion():
    """Normalisation splits one instruction into parts sharing its offset; a break between
    them would resume the original instruction on a stack laid out for a later part."""
    insts = cleaned_instructions(slicing.__code__)
    later_parts = [i for i in range(1, len(insts)) if insts[i].offset == insts[i - 1].offset]
    assert later_parts  # PUSH_NULL; LOAD_GLOBAL on 3.11 and 3.12, the slices on 3.12
    for i in later_parts:
        start = expansion_start(insts, i)
        assert start < i and insts[start].offset == insts[i].offset
        assert insts[start - 1].offset != insts[i].offset
        assert expansion_start(insts, start) == start
    if sys.version_info < (3, 12):
        return
    # 3.12: before the first part the stack is the original (xs, None, n): resuming works;
    # after BUILD_SLICE it would be (xs, slice(None, n)), one value short for BINARY_SLICE.
    raw = instructions_from_code(slicing.__code__)
    at = [i for i in raw if i.opname == "BINARY_SLICE"][0]
    names = tuple(live_locals(slicing.__code__, at.offset))
    spec = ResumeSpec(slicing.__code__, at.offset, (VALUE, VALUE, VALUE), names)
    resume = resume_function(create_resume(spec, "__resume_slice"), slicing)
    env = {"n": 3, "ys": [0, 0, 0, 0], "xs": [1, 2, 3, 4]}
    assert resume([1, 2, 3, 4], None, 3, *[env[n] for n in names]) is None
    # (Resuming there with the two-value stack is not tried: CPython may crash on it.)


def test_liveness_skips_dead_and_overwritten_locals():
    insts = instructions_from_code(straight_line.__code__)
    first = [i for i in insts if i.opname == "STORE_FAST" and i.argval == "c"][0]
    # after `c = a + b`: a is read later, b never again, unused is written before any read
    assert live_locals_at(insts, first) == ["a"]
    ret = [i for i in insts if i.opname == "STORE_FAST" and i.argval == "unused"][0]
    assert set(live_locals_at(insts, ret)) == {"a", "c", "d"}


def test_liveness_through_exception_handler():
    def f(x, y):
        try:
            z = 1 / x
        except ZeroDivisionError:
            return y  # y is live inside the try: the handler reads it
        return z

    insts = instructions_from_code(f.__code__)
    div = [i for i in insts if i.opname == "BINARY_OP"][0]
    assert set(live_locals_at(insts, div)) == {"y"}


def test_resume_cache_and_names():
    spec = ResumeSpec(straight_line.__code__, instructions_from_code(straight_line.__code__)[3]
                      .offset, (), ("a", "b"))
    first = ContinueExecutionCache.lookup(spec)
    assert ContinueExecutionCache.lookup(spec) is first
    assert first.co_name.startswith(f"__resume_at_{spec.offset}_")
    assert first.co_varnames[:2] == ("a", "b") and first.co_argcount == 2


# ------------------------------------------------------------------- assembler round trip


def _merged_exception_table(code):
    out = []
    for e in parse_exception_table(code.co_exceptiontable):
        if out and out[-1][1] == e[0] and out[-1][2:] == e[2:]:
            out[-1] = (out[-1][0], e[1], *e[2:])
        else:
            out.append(e)
    return out


def _all_codes(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _all_codes(c)


def test_assembler_round_trips_stdlib(modname):
    """Decode + re-assemble is byte-identical (code, positions, exceptions, stack size)."""
    mod = importlib.import_module(modname)
    codes = [c for obj in vars(mod).values() if isinstance(obj, types.FunctionType)
             for c in _all_codes(obj.__code__)]
    assert codes
    for code in codes:
        new = code_from_instructions(instructions_from_code(code), code)
        assert new.co_code == code.co_code, code
        assert list(new.co_positions()) == list(code.co_positions()), code
        assert _merged_exception_table(new) == _merged_exception_table(code), code
        assert new.co_stacksize == code.co_stacksize, code


def test_every_resume_point_in_a_fresh_interpreter():
    """Bytecode with a NULL on the wrong side of a callable does not raise on 3.13: it crashes
    the interpreter. So the whole resume check also runs in a child process, where a crash is a
    failing exit status rather than the end of the test run."""
    import subprocess

    import minicompile

    # the child imports the minicompile under test (not another copy installed in the venv)
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(minicompile.__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [package_root, *filter(None, [os.environ.get("PYTHONPATH")])])}
    run = subprocess.run([sys.executable, __file__], capture_output=True, text=True,
                         timeout=600, cwd=os.path.dirname(__file__), env=env)
    assert run.returncode == 0, f"exit status {run.returncode}\n{run.stdout}\n{run.stderr}"
    assert "resume points checked" in run.stdout


def test_round_trip_covers_superinstructions():
    """The stdlib corpus above really holds 3.13's superinstructions, so its byte-identical
    round trip covers their packed arguments."""
    seen = {i.opname for name in STDLIB for obj in vars(importlib.import_module(name)).values()
            if isinstance(obj, types.FunctionType) for c in _all_codes(obj.__code__)
            for i in dis.get_instructions(c)}
    assert {"LOAD_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST"} <= seen


def test_superinstruction_with_a_local_past_15_becomes_two_instructions():
    """A resume function that moves a local to index 16 or more can't pack it in 4 bits."""
    def f(a, b):
        return a + b

    insts = instructions_from_code(f.__code__)
    assert any(i.opname == "LOAD_FAST_LOAD_FAST" for i in insts)
    padding = tuple(f"pad{i}" for i in range(16))
    code = code_from_instructions(insts, f.__code__, co_varnames=padding + ("a", "b"),
                                  co_argcount=18)
    ops = [i.opname for i in dis.get_instructions(code)]
    assert "LOAD_FAST_LOAD_FAST" not in ops and ops.count("LOAD_FAST") == 2
    assert types.FunctionType(code, {})(*range(16), 3, 4) == 7


def test_exception_table_parser_matches_dis():
    for code in _all_codes(nested_try_with.__code__):
        assert [tuple(e) for e in dis._parse_exception_table(code)] == \
            parse_exception_table(code.co_exceptiontable)


def test_extended_args_really_used():
    ops = [i.opname for i in dis.get_instructions(huge)]  # noqa: F821
    assert "EXTENDED_ARG" in ops
    insts = instructions_from_code(huge.__code__)  # noqa: F821
    assert all(i.opname != "EXTENDED_ARG" for i in insts)


STDLIB = ["dis", "inspect", "json.decoder", "argparse", "dataclasses", "ast", "difflib"]

if pytest is not None:
    test_resume_at_every_offset = pytest.mark.parametrize(
        "case", CASES, ids=[f"{f.__name__}-{i}" for i, (f, _) in enumerate(CASES)]
    )(test_resume_at_every_offset)
    test_assembler_round_trips_stdlib = pytest.mark.parametrize("modname", STDLIB)(
        test_assembler_round_trips_stdlib)
    only_313 = pytest.mark.skipif(sys.version_info < (3, 13),
                                  reason="superinstructions are new in 3.13")
    test_round_trip_covers_superinstructions = only_313(test_round_trip_covers_superinstructions)
    test_superinstruction_with_a_local_past_15_becomes_two_instructions = only_313(
        test_superinstruction_with_a_local_past_15_becomes_two_instructions)


if __name__ == "__main__":  # torch-free run, e.g. under python3.12 without pytest
    total = 0
    for case in CASES:
        total += check_resume_everywhere(*case)
    for name in STDLIB:
        test_assembler_round_trips_stdlib(name)
    for name, obj in list(globals().items()):
        if name.startswith("test_") and obj.__code__.co_argcount == 0 \
                and name != "test_every_resume_point_in_a_fresh_interpreter" \
                and (sys.version_info >= (3, 13) or "superinstruction" not in name):
            obj()
    print(f"ok: python {sys.version.split()[0]}, {total} resume points checked")
