"""Small functions, one or more per instruction, shared by tests/test_bytecode.py.

Torch-free on purpose: ``python tests/bytecode_corpus.py`` under any CPython lists the normalised
instructions of the corpus, so the 3.12 normalisation can be checked without torch installed.
Each entry: instruction name as dis prints it -> (function, example arguments as a thunk).
Arguments use ints/floats here; tests/test_bytecode.py also runs tensor versions.
"""

from __future__ import annotations

import math


def f_stack(a, b):  # COPY / SWAP (chained comparison), POP_TOP, (3.13) LOAD_FAST_LOAD_FAST
    [a, b]
    return 0 < a < 10, (a, b)[::-1]


def f_locals(a):  # LOAD_FAST / STORE_FAST / DELETE_FAST
    t = a * 2
    u = t + 1
    del t
    return u


def f_global(a):  # LOAD_GLOBAL (+ NULL), LOAD_ATTR
    return math.floor(a) + abs(a)


def f_closure(a):  # MAKE_CELL, LOAD_CLOSURE, LOAD_DEREF, STORE_DEREF, COPY_FREE_VARS
    k = 2

    def inner(b):
        return b * k

    k = 3
    return inner(a)


def f_binary(a, b):  # BINARY_OP
    c = a + b - a * b / (b + 1) // 1 % 7 ** 1
    c += 1
    return c


def f_compare(a, b):  # COMPARE_OP, IS_OP, CONTAINS_OP
    return a < b, a == b, a is None, b is not None, 3 in (1, 2, 3), 4 not in [1]


def f_unary(a):  # UNARY_NEGATIVE, UNARY_INVERT, UNARY_NOT, (3.11) UNARY_POSITIVE
    return -a, ~int(a), not a, +a


def f_subscr(xs):  # BINARY_SUBSCR, BINARY_SLICE (3.12), STORE_SUBSCR, DELETE_SUBSCR
    ys = list(xs)
    ys[0] = ys[1]
    ys[1:2] = [9]
    del ys[-1]
    return ys[0], ys[1:], xs[::2]


def f_build(a, b):  # BUILD_TUPLE / LIST / MAP / CONST_KEY_MAP / SLICE / STRING, FORMAT_VALUE
    # (3.13: FORMAT_SIMPLE, FORMAT_WITH_SPEC, CONVERT_VALUE)
    d = {"a": a, "b": b}
    e = {a: 1, b: 2}
    s = f"{a}-{b!r}-{a:>4}"
    return (a, b), [a, b], d, e, s, [0, 1, 2, 3, 4][1:a:2]


def f_comprehension(xs):  # LIST_APPEND, MAP_ADD, (3.12) LOAD_FAST_AND_CLEAR, END_FOR,
    # (3.13) STORE_FAST_LOAD_FAST
    return [x * 2 for x in xs], {x: x for x in xs}


def f_star(xs, d):  # LIST_EXTEND, LIST_TO_TUPLE / CALL_INTRINSIC_1, DICT_MERGE, DICT_UPDATE
    t = (*xs, 1)
    m = {**d, "z": 1}
    return t, m, max(*xs), dict(**d)


def f_unpack(xs):  # UNPACK_SEQUENCE, UNPACK_EX, (3.13) STORE_FAST_STORE_FAST
    a, b, c = xs
    first, *rest = xs
    return a + b + c, first, rest


def f_loop(n):  # GET_ITER, FOR_ITER, JUMP_BACKWARD, END_FOR (3.12)
    total = 0
    for i in range(n):
        total += i
    return total


def f_while(n):  # JUMP_BACKWARD, POP_JUMP_IF_*
    i = 0
    while i < n:
        i += 1
    return i


def f_branches(a, b=None):  # POP_JUMP_IF_FALSE/TRUE, POP_JUMP_IF_NONE/NOT_NONE, JUMP_FORWARD,
    # (3.13) TO_BOOL
    if b is None:
        b = 1
    if a > 0:
        r = a
    else:
        r = -a
    if not a or b:
        r += 1
    if a < 0 or b:
        r += 2
    if a == 7:
        pass
    if b is not None:
        r += 0
    return r


def f_and_or(a, b):  # (3.11) JUMP_IF_FALSE_OR_POP / JUMP_IF_TRUE_OR_POP
    return (a and b), (a or b)


def f_calls(a):  # PUSH_NULL, KW_NAMES, CALL, (3.11) PRECALL, LOAD_METHOD, (3.13) CALL_KW
    fn = f_kw
    return round(a, ndigits=1), "x".upper(), f_kw(a, scale=2), fn(a)


def f_kw(a, *, scale=1):
    return a * scale


def f_call_ex(args, kwargs):  # CALL_FUNCTION_EX
    return f_kw(*args, **kwargs)


def f_make_function(a):  # MAKE_FUNCTION with defaults and closure (3.13: SET_FUNCTION_ATTRIBUTE)
    def g(b, c=3):
        return a + b + c

    return g(1), (lambda z=2: z * a)()


def f_genexpr(a):  # RETURN_GENERATOR, YIELD_VALUE (inlined generators run to completion)
    return sum(i * a for i in range(3))


class Recorder:
    """A user context manager: __enter__ and __exit__ are inlined."""

    def __enter__(self):
        return 10

    def __exit__(self, *exc):
        return False


def f_with(a, ctx):  # BEFORE_WITH
    with ctx as ten:
        a = a + ten
    return a


def f_return_const(a):  # RETURN_CONST (3.12)
    a + 1
    return None


def f_import(a):  # IMPORT_NAME, IMPORT_FROM
    from math import sqrt

    return sqrt(a * a)


def f_assert(a):  # LOAD_ASSERTION_ERROR (only executed when the assert fails)
    assert a >= 0, "negative"
    return a


class Base:
    def value(self, a):
        return a + 1


class Child(Base):
    def value(self, a):  # LOAD_SUPER_ATTR (3.12); 3.11 calls super() then LOAD_METHOD
        return super().value(a) * 2


def f_super(a):
    return Child().value(a)


def f_extended_arg(a):  # EXTENDED_ARG: a jump over more than 255 instructions
    if a > 100:
        a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1  # noqa: E702
        a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1  # noqa: E702
        a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1  # noqa: E702
        a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1  # noqa: E702
        a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1  # noqa: E702
        a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1  # noqa: E702
        a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1  # noqa: E702
        a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1  # noqa: E702
        a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1  # noqa: E702
        a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1; a = a + 1  # noqa: E702
    a = a * 2  # (3.13 copies a bare `return a` into the jump's source: no long jump then)
    return a


# instruction as dis prints it -> (function, args); an instruction may appear on one Python only
CORPUS = {
    "POP_TOP": (f_stack, (3, 4)), "COPY": (f_stack, (3, 4)), "SWAP": (f_stack, (3, 4)),
    "NOP": (f_branches, (7,)), "RESUME": (f_locals, (2,)),
    "LOAD_FAST": (f_locals, (2,)), "STORE_FAST": (f_locals, (2,)),
    "DELETE_FAST": (f_locals, (2,)), "LOAD_CONST": (f_locals, (2,)),
    "LOAD_GLOBAL": (f_global, (2.5,)), "LOAD_ATTR": (f_global, (2.5,)),
    "MAKE_CELL": (f_closure, (2,)), "LOAD_CLOSURE": (f_closure, (2,)),
    "LOAD_DEREF": (f_closure, (2,)), "STORE_DEREF": (f_closure, (2,)),
    "COPY_FREE_VARS": (f_closure, (2,)),
    "BINARY_OP": (f_binary, (3, 4)), "COMPARE_OP": (f_compare, (3, 4)),
    "IS_OP": (f_compare, (3, 4)), "CONTAINS_OP": (f_compare, (3, 4)),
    "UNARY_NEGATIVE": (f_unary, (3,)), "UNARY_INVERT": (f_unary, (3,)),
    "UNARY_NOT": (f_unary, (3,)), "UNARY_POSITIVE": (f_unary, (3,)),
    "BINARY_SUBSCR": (f_subscr, ((1, 2, 3),)), "STORE_SUBSCR": (f_subscr, ((1, 2, 3),)),
    "DELETE_SUBSCR": (f_subscr, ((1, 2, 3),)), "BINARY_SLICE": (f_subscr, ((1, 2, 3),)),
    "STORE_SLICE": (f_subscr, ((1, 2, 3),)),
    "BUILD_TUPLE": (f_build, (3, 4)), "BUILD_LIST": (f_build, (3, 4)),
    "BUILD_MAP": (f_build, (3, 4)), "BUILD_CONST_KEY_MAP": (f_build, (3, 4)),
    "BUILD_SLICE": (f_build, (3, 4)), "BUILD_STRING": (f_build, (3, 4)),
    "FORMAT_VALUE": (f_build, (3, 4)),
    "LIST_APPEND": (f_comprehension, ([1, 2],)), "MAP_ADD": (f_comprehension, ([1, 2],)),
    "LOAD_FAST_AND_CLEAR": (f_comprehension, ([1, 2],)),
    "LIST_EXTEND": (f_star, ([1, 2], {"a": 1})), "LIST_TO_TUPLE": (f_star, ([1, 2], {"a": 1})),
    "CALL_INTRINSIC_1": (f_star, ([1, 2], {"a": 1})),
    "DICT_MERGE": (f_star, ([1, 2], {"a": 1})), "DICT_UPDATE": (f_star, ([1, 2], {"a": 1})),
    "UNPACK_SEQUENCE": (f_unpack, ([1, 2, 3],)), "UNPACK_EX": (f_unpack, ([1, 2, 3],)),
    "GET_ITER": (f_loop, (4,)), "FOR_ITER": (f_loop, (4,)), "END_FOR": (f_loop, (4,)),
    "JUMP_BACKWARD": (f_loop, (3,)),
    "POP_JUMP_IF_FALSE": (f_branches, (2,)), "POP_JUMP_IF_TRUE": (f_branches, (0,)),
    "POP_JUMP_IF_NONE": (f_branches, (2,)), "POP_JUMP_IF_NOT_NONE": (f_branches, (2, 5)),
    "POP_JUMP_FORWARD_IF_FALSE": (f_branches, (2,)),
    "POP_JUMP_FORWARD_IF_TRUE": (f_branches, (0,)),
    "POP_JUMP_FORWARD_IF_NOT_NONE": (f_branches, (2, 5)),
    "POP_JUMP_FORWARD_IF_NONE": (f_branches, (2, 5)),
    "POP_JUMP_BACKWARD_IF_TRUE": (f_while, (3,)),
    "JUMP_FORWARD": (f_branches, (-2,)),
    "JUMP_IF_FALSE_OR_POP": (f_and_or, (0, 2)), "JUMP_IF_TRUE_OR_POP": (f_and_or, (0, 2)),
    "PUSH_NULL": (f_calls, (2.25,)), "KW_NAMES": (f_calls, (2.25,)), "CALL": (f_calls, (2.25,)),
    "PRECALL": (f_calls, (2.25,)), "LOAD_METHOD": (f_calls, (2.25,)),
    "CALL_FUNCTION_EX": (f_call_ex, ((3,), {"scale": 4})),
    "MAKE_FUNCTION": (f_make_function, (2,)),
    "RETURN_VALUE": (f_locals, (2,)), "RETURN_CONST": (f_return_const, (1,)),
    "BEFORE_WITH": (f_with, (1, Recorder())),
    "RETURN_GENERATOR": (f_genexpr, (2,)), "YIELD_VALUE": (f_genexpr, (2,)),
    "IMPORT_NAME": (f_import, (3.0,)), "IMPORT_FROM": (f_import, (3.0,)),
    "LOAD_ASSERTION_ERROR": (f_assert, (1,)), "RAISE_VARARGS": (f_assert, (1,)),
    "LOAD_SUPER_ATTR": (Child.value, (Child(), 3)),
    "EXTENDED_ARG": (f_extended_arg, (1,)),
    # new in 3.13
    "LOAD_FAST_LOAD_FAST": (f_stack, (3, 4)), "STORE_FAST_STORE_FAST": (f_unpack, ([1, 2, 3],)),
    "STORE_FAST_LOAD_FAST": (f_comprehension, ([1, 2],)), "TO_BOOL": (f_branches, (2,)),
    "CALL_KW": (f_calls, (2.25,)), "SET_FUNCTION_ATTRIBUTE": (f_make_function, (2,)),
    "FORMAT_SIMPLE": (f_build, (3, 4)), "FORMAT_WITH_SPEC": (f_build, (3, 4)),
    "CONVERT_VALUE": (f_build, (3, 4)),
}


# Reached only through the exception table, when the code raises; tracing never gets there
# (it stops with Unsupported first), so they need no handler.
EXCEPTION_PATH = {"PUSH_EXC_INFO", "WITH_EXCEPT_START", "RERAISE", "POP_EXCEPT",
                  "CHECK_EXC_MATCH", "CLEANUP_THROW"}


def all_instructions(fn) -> set[str]:
    """Opnames as dis prints them, in fn and the code objects nested in it."""
    import dis

    code = getattr(fn, "__code__", fn)
    names = {i.opname for i in dis.get_instructions(code)}
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            names |= all_instructions(const)
    return names


if __name__ == "__main__":  # list what the normaliser makes of the corpus on this Python
    import os
    import re
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from torch_free import load_bytecode_layer_without_torch

    load_bytecode_layer_without_torch()
    from minicompile.dynamo.bytecode import cleaned_instructions

    here = os.path.join(os.path.dirname(__file__), "..", "minicompile", "dynamo")
    handled = set()
    for name in ("handlers_data.py", "handlers_flow.py"):
        src = open(os.path.join(here, name)).read()
        for args in re.findall(r"@handler\(([^)]*)\)", src):
            handled |= set(re.findall(r'"([A-Z_0-9]+)"', args))
    missing = {}
    for op, (fn, _) in CORPUS.items():
        code = getattr(fn, "__code__")
        for inst in cleaned_instructions(code):
            if inst.opname not in handled | EXCEPTION_PATH:
                missing.setdefault(inst.opname, set()).add(fn.__name__)
    print(sys.version.split()[0], "unhandled after normalisation:", missing or "none")
