"""Instruction handlers for data: the stack, loads and stores, operators, containers
(part of torch/_dynamo/symbolic_convert.py in real Dynamo). Each handler names its ``dis`` entry:
https://docs.python.org/3/library/dis.html#opcode-<NAME>.
"""

from __future__ import annotations

import operator
import types

import torch

from .exc import ObservedException, unimplemented
from .side_effects import DELETED
from .symbolic_convert import InstructionTranslatorBase as Tx
from .symbolic_convert import handler
from .bytecode import Instruction as Inst
from .variables.base import DeletedVariable, NullVariable
from .variables.builder import SourcelessBuilder
from .variables.builtin import BuiltinVariable
from .variables.constant import ConstantVariable
from .variables.dicts import ConstDictVariable, UserDefinedDictVariable
from .variables.hashable import dict_key
from .variables.functions import ClosureCell
from .variables.lists import ListVariable, SetVariable, SliceVariable, TupleVariable
from .variables.misc import SuperVariable
from .variables.user_defined import UserDefinedObjectVariable
from .variables.nn_module import NNModuleVariable
from .variables.tensor import TensorVariable

# Objects whose attribute stores are recorded and replayed (side_effects.py).
ATTR_STORE_TYPES = (UserDefinedObjectVariable, NNModuleVariable)


# -- the stack ---------------------------------------------------------------------------------
@handler("NOP")  # also PRECALL, RESUME, COPY_FREE_VARS, EXTENDED_ARG (see bytecode.RENAMES)
def NOP(tx: Tx, inst: Inst) -> None:
    pass


@handler("POP_TOP")  # dis#opcode-POP_TOP
def POP_TOP(tx: Tx, inst: Inst) -> None:
    tx.pop()


@handler("PUSH_NULL")  # dis#opcode-PUSH_NULL: the NULL beside a callable (3.13: above), for CALL
def PUSH_NULL(tx: Tx, inst: Inst) -> None:
    tx.push(NullVariable())


@handler("COPY")  # dis#opcode-COPY: push the i-th item (1 = TOS) again
def COPY(tx: Tx, inst: Inst) -> None:
    tx.push(tx.stack[-inst.arg])


@handler("SWAP")  # dis#opcode-SWAP: swap TOS with the i-th item
def SWAP(tx: Tx, inst: Inst) -> None:
    tx.stack[-1], tx.stack[-inst.arg] = tx.stack[-inst.arg], tx.stack[-1]


# -- constants, locals, globals, closures ------------------------------------------------------
@handler("LOAD_CONST")  # dis#opcode-LOAD_CONST
def LOAD_CONST(tx: Tx, inst: Inst) -> None:
    value = inst.argval
    tx.push(ConstantVariable(value) if isinstance(value, types.CodeType)
            else SourcelessBuilder.wrap(tx, value))


@handler("LOAD_FAST")  # dis#opcode-LOAD_FAST (and 3.12 LOAD_FAST_CHECK)
def LOAD_FAST(tx: Tx, inst: Inst) -> None:
    if inst.argval not in tx.symbolic_locals:
        unimplemented(f"local variable {inst.argval!r} referenced before assignment")
    tx.push(tx.symbolic_locals[inst.argval])


@handler("LOAD_FAST_AND_CLEAR")  # dis#opcode-LOAD_FAST_AND_CLEAR (3.12 inlined comprehensions)
def LOAD_FAST_AND_CLEAR(tx: Tx, inst: Inst) -> None:
    tx.push(tx.symbolic_locals.pop(inst.argval, DeletedVariable()))


@handler("STORE_FAST")  # dis#opcode-STORE_FAST
def STORE_FAST(tx: Tx, inst: Inst) -> None:
    value = tx.pop()
    if isinstance(value, DeletedVariable):  # restoring a local that was unbound before
        tx.symbolic_locals.pop(inst.argval, None)
    else:
        tx.symbolic_locals[inst.argval] = value


@handler("DELETE_FAST")  # dis#opcode-DELETE_FAST
def DELETE_FAST(tx: Tx, inst: Inst) -> None:
    del tx.symbolic_locals[inst.argval]


@handler("LOAD_GLOBAL")  # dis#opcode-LOAD_GLOBAL (the NULL bit became a PUSH_NULL)
def LOAD_GLOBAL(tx: Tx, inst: Inst) -> None:
    tx.push(tx.load_global(inst.argval))


@handler("STORE_GLOBAL")  # dis#opcode-STORE_GLOBAL: replayed after the graph (side_effects.py)
def STORE_GLOBAL(tx: Tx, inst: Inst) -> None:
    tx.output.side_effects.store_global(tx.f_globals, inst.argval, tx.global_source(inst.argval),
                                        tx.pop())


@handler("DELETE_GLOBAL", supported=False)
def DELETE_GLOBAL(tx: Tx, inst: Inst) -> None:
    unimplemented(f"deleting the global {inst.argval!r}")


@handler("MAKE_CELL")  # dis#opcode-MAKE_CELL: a local captured by an inner function
def MAKE_CELL(tx: Tx, inst: Inst) -> None:
    tx.cells[inst.argval] = ClosureCell(value=tx.symbolic_locals.pop(inst.argval, None))


@handler("LOAD_DEREF")  # dis#opcode-LOAD_DEREF
def LOAD_DEREF(tx: Tx, inst: Inst) -> None:
    tx.push(tx.cells[inst.argval].get(tx, inst.argval))


@handler("STORE_DEREF")  # dis#opcode-STORE_DEREF
def STORE_DEREF(tx: Tx, inst: Inst) -> None:
    tx.cells[inst.argval].set(tx, inst.argval, tx.pop())


@handler("LOAD_CLOSURE")  # dis#opcode-LOAD_CLOSURE: the cell itself, for MAKE_FUNCTION
def LOAD_CLOSURE(tx: Tx, inst: Inst) -> None:
    tx.push(CellVariable(tx.cells[inst.argval]))


class CellVariable(ConstantVariable):
    """A closure cell on the stack between LOAD_CLOSURE and MAKE_FUNCTION."""

    def __init__(self, cell: ClosureCell):
        super().__init__(cell)


# -- attributes ----------------------------------------------------------------------------
@handler("LOAD_ATTR")  # dis#opcode-LOAD_ATTR
def LOAD_ATTR(tx: Tx, inst: Inst) -> None:
    obj = tx.pop()
    # (a user object's own lookup reads what the frame stored, after its class's hook)
    stored = tx.output.side_effects.load_attr(obj.identity(), inst.argval) \
        if isinstance(obj, NNModuleVariable) else None
    if stored is DELETED:
        raise ObservedException(AttributeError(inst.argval))
    tx.push(stored if stored is not None else obj.var_getattr(tx, inst.argval))


@handler("LOAD_METHOD")  # dis#opcode-LOAD_METHOD (3.11); 3.12+ LOAD_ATTR with the method bit
def LOAD_METHOD(tx: Tx, inst: Inst) -> None:
    obj = tx.pop()
    method = obj.var_getattr(tx, inst.argval)  # bound: called with a NULL for "no self"
    tx.push_callable(method)


@handler("LOAD_SUPER_ATTR", "LOAD_SUPER_METHOD")  # dis#opcode-LOAD_SUPER_ATTR (3.12)
def LOAD_SUPER_ATTR(tx: Tx, inst: Inst) -> None:
    obj, cls, _super = tx.pop(), tx.pop(), tx.pop()
    attr = SuperVariable(cls.as_python_constant(), obj).var_getattr(tx, inst.argval)
    if inst.opname == "LOAD_SUPER_METHOD":
        tx.push_callable(attr)
    else:
        tx.push(attr)


@handler("STORE_ATTR")  # dis#opcode-STORE_ATTR: TOS.name = TOS1, replayed after the graph
def STORE_ATTR(tx: Tx, inst: Inst) -> None:
    obj, value = tx.pop(), tx.pop()
    if isinstance(obj, (UserDefinedObjectVariable, TensorVariable)) or (
            isinstance(obj, UserDefinedDictVariable) and obj.attrs is not None):
        obj.store_attr(tx, inst.argval, value)  # through the class's __setattr__, if any
        return
    if not isinstance(obj, ATTR_STORE_TYPES) or obj.source is None:
        unimplemented(f"assigning attribute {inst.argval!r} of {obj}")
    if isinstance(value, NNModuleVariable) or isinstance(
            getattr(value, "example_value", None), torch.nn.Parameter):
        unimplemented(f"assigning a module or parameter to .{inst.argval} (changes the module)")
    tx.output.side_effects.store_attr(obj, obj.identity(), inst.argval, value)


@handler("DELETE_ATTR")  # dis#opcode-DELETE_ATTR: del TOS.name, replayed after the graph
def DELETE_ATTR(tx: Tx, inst: Inst) -> None:
    obj = tx.pop()
    if isinstance(obj, UserDefinedObjectVariable):
        obj.delete_attr(tx, inst.argval)
        return
    if not isinstance(obj, ATTR_STORE_TYPES) or obj.source is None:
        unimplemented(f"deleting attribute {inst.argval!r} of {obj}")
    if not tx.output.side_effects.delete_attr(obj, obj.identity(), inst.argval):
        raise ObservedException(AttributeError(inst.argval))


# -- operators ---------------------------------------------------------------------------------
BINARY_OPS = {  # BINARY_OP's argrepr -> the operator function it applies
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
    "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift,
    ">>": operator.rshift,
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
    "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow,
    "@=": operator.imatmul, "&=": operator.iand, "|=": operator.ior, "^=": operator.ixor,
    "<<=": operator.ilshift, ">>=": operator.irshift,
}
COMPARE_OPS = {"<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
               ">": operator.gt, ">=": operator.ge}
UNARY_OPS = {"UNARY_NEGATIVE": operator.neg, "UNARY_POSITIVE": operator.pos,
             "UNARY_INVERT": operator.invert, "UNARY_NOT": operator.not_}


def apply_operator(tx: Tx, fn, *args) -> None:
    tx.push(BuiltinVariable(fn).call_function(tx, list(args), {}))


@handler("BINARY_OP")  # dis#opcode-BINARY_OP
def BINARY_OP(tx: Tx, inst: Inst) -> None:
    b, a = tx.pop(), tx.pop()
    op = inst.argrepr
    if op.endswith("=") and isinstance(a, ConstantVariable) and not hasattr(
            type(a.value), f"__{BINARY_OPS[op].__name__}__"):
        op = op[:-1]  # `c = 0; c += x`: an int has no __iadd__, so Python computes c + x
    apply_operator(tx, BINARY_OPS[op], a, b)


@handler("COMPARE_OP")  # dis#opcode-COMPARE_OP
def COMPARE_OP(tx: Tx, inst: Inst) -> None:
    b, a = tx.pop(), tx.pop()
    apply_operator(tx, COMPARE_OPS[inst.argval], a, b)


@handler("UNARY_NEGATIVE", "UNARY_POSITIVE", "UNARY_INVERT", "UNARY_NOT")
def UNARY(tx: Tx, inst: Inst) -> None:  # dis#opcode-UNARY_NEGATIVE and friends
    apply_operator(tx, UNARY_OPS[inst.opname], tx.pop())


@handler("IS_OP")  # dis#opcode-IS_OP: `is` (arg 0) / `is not` (arg 1)
def IS_OP(tx: Tx, inst: Inst) -> None:
    b, a = tx.pop(), tx.pop()
    tx.push(BuiltinVariable(operator.is_not if inst.arg else operator.is_)
            .call_function(tx, [a, b], {}))


@handler("CONTAINS_OP")  # dis#opcode-CONTAINS_OP: `in` (arg 0) / `not in` (arg 1)
def CONTAINS_OP(tx: Tx, inst: Inst) -> None:
    container, item = tx.pop(), tx.pop()
    result = BuiltinVariable(operator.contains).call_function(tx, [container, item], {})
    tx.push(ConstantVariable(result.truth(tx) != bool(inst.arg)))


@handler("BINARY_SUBSCR")  # dis#opcode-BINARY_SUBSCR (3.12 BINARY_SLICE is BUILD_SLICE + this)
def BINARY_SUBSCR(tx: Tx, inst: Inst) -> None:
    key, obj = tx.pop(), tx.pop()
    if type(obj) is ConstantVariable and key.is_python_constant():
        # a constant indexed by a constant: CPython's own subscript, its exceptions the traced
        # code's (``None[0]`` raises TypeError, as where a library left a mask None because it
        # is being compiled; ``tuple[int]`` goes through ``__class_getitem__``)
        try:
            value = operator.getitem(obj.value, key.as_python_constant())
        except Exception as e:  # noqa: BLE001 -- whatever Python raises there, the code sees
            raise ObservedException(e) from None
        tx.push(SourcelessBuilder.wrap(tx, value))
        return
    tx.push(obj.call_method(tx, "__getitem__", [key], {}))


@handler("STORE_SUBSCR")  # dis#opcode-STORE_SUBSCR: TOS1[TOS] = TOS2
def STORE_SUBSCR(tx: Tx, inst: Inst) -> None:
    key, obj, value = tx.pop(), tx.pop(), tx.pop()
    obj.call_method(tx, "__setitem__", [key, value], {})


@handler("DELETE_SUBSCR")  # dis#opcode-DELETE_SUBSCR
def DELETE_SUBSCR(tx: Tx, inst: Inst) -> None:
    key, obj = tx.pop(), tx.pop()
    obj.call_method(tx, "__delitem__", [key], {})


# -- building containers ------------------------------------------------------------------------
@handler("BUILD_TUPLE")  # dis#opcode-BUILD_TUPLE
def BUILD_TUPLE(tx: Tx, inst: Inst) -> None:
    items = tx.popn(inst.arg)
    # a tuple of closure cells (for MAKE_FUNCTION) stays a plain tuple of cells
    tx.push(TupleVariable(items))


@handler("BUILD_LIST")  # dis#opcode-BUILD_LIST
def BUILD_LIST(tx: Tx, inst: Inst) -> None:
    tx.push(ListVariable(tx.popn(inst.arg)))


@handler("BUILD_SET")  # dis#opcode-BUILD_SET: {a, b, c} (constant items only)
def BUILD_SET(tx: Tx, inst: Inst) -> None:
    tx.push(SetVariable.of(tx.popn(inst.arg)))


@handler("BUILD_MAP")  # dis#opcode-BUILD_MAP: key1, value1, key2, value2, ...
def BUILD_MAP(tx: Tx, inst: Inst) -> None:
    flat = tx.popn(2 * inst.arg)
    tx.push(ConstDictVariable({dict_key(k): v for k, v in zip(flat[::2], flat[1::2])}))


@handler("BUILD_CONST_KEY_MAP")  # dis#opcode-BUILD_CONST_KEY_MAP: values..., keys tuple
def BUILD_CONST_KEY_MAP(tx: Tx, inst: Inst) -> None:
    keys = tx.pop().as_python_constant()
    tx.push(ConstDictVariable(dict(zip(keys, tx.popn(inst.arg)))))


@handler("BUILD_SLICE")  # dis#opcode-BUILD_SLICE
def BUILD_SLICE(tx: Tx, inst: Inst) -> None:
    # ``w[m - t : m + t]`` with a tensor ``t`` is ``u = t.item(); w[m - u : m + u]`` (real
    # Dynamo's SliceVariable): a number read from a tensor, so a break at the .item(). Left
    # in the graph, the slice's bounds would be read while AOT traces it, and the whole graph
    # would run eagerly.
    parts = [p.call_method(tx, "item", [], {}) if isinstance(p, TensorVariable) else p
             for p in tx.popn(inst.argval)]
    tx.push(SliceVariable(*parts, *([ConstantVariable(None)] * (3 - len(parts)))))


@handler("BUILD_STRING")  # dis#opcode-BUILD_STRING (f-strings)
def BUILD_STRING(tx: Tx, inst: Inst) -> None:
    tx.push(ConstantVariable("".join(p.as_python_constant() for p in tx.popn(inst.arg))))


@handler("CONVERT_VALUE")  # dis#opcode-CONVERT_VALUE (3.13): the !s, !r, !a of an f-string
def CONVERT_VALUE(tx: Tx, inst: Inst) -> None:
    value = tx.pop()
    if not value.is_python_constant():
        unimplemented(f"formatting {value} into a string")
    tx.push(ConstantVariable({1: str, 2: repr, 3: ascii}[inst.arg](value.as_python_constant())))


@handler("FORMAT_VALUE")  # dis#opcode-FORMAT_VALUE: flags & 3 = conversion, & 4 = has spec
def FORMAT_VALUE(tx: Tx, inst: Inst) -> None:
    spec = tx.pop().as_python_constant() if inst.arg & 0x04 else ""
    value = tx.pop()
    if not value.is_python_constant():
        unimplemented(f"formatting {value} into a string")
    v = value.as_python_constant()
    v = {0: lambda x: x, 1: str, 2: repr, 3: ascii}[inst.arg & 0x03](v)
    tx.push(ConstantVariable(format(v, spec)))


@handler("LIST_APPEND")  # dis#opcode-LIST_APPEND (comprehensions)
def LIST_APPEND(tx: Tx, inst: Inst) -> None:
    value = tx.pop()
    tx.stack[-inst.arg].call_method(tx, "append", [value], {})


@handler("LIST_EXTEND")  # dis#opcode-LIST_EXTEND ([*a, *b], f(*args))
def LIST_EXTEND(tx: Tx, inst: Inst) -> None:
    seq = tx.pop()
    tx.stack[-inst.arg].items.extend(seq.unpack_var_sequence(tx))


@handler("LIST_TO_TUPLE")  # dis#opcode-LIST_TO_TUPLE (3.12: CALL_INTRINSIC_1 LIST_TO_TUPLE)
def LIST_TO_TUPLE(tx: Tx, inst: Inst) -> None:
    tx.push(TupleVariable(tx.pop().unpack_var_sequence(tx)))


@handler("SET_ADD")  # dis#opcode-SET_ADD (set comprehensions)
def SET_ADD(tx: Tx, inst: Inst) -> None:
    value = tx.pop()
    tx.stack[-inst.arg].call_method(tx, "add", [value], {})


@handler("SET_UPDATE")  # dis#opcode-SET_UPDATE ({*a, *b}, and {1, 2, 3, 4} on 3.11+)
def SET_UPDATE(tx: Tx, inst: Inst) -> None:
    seq = tx.pop()
    tx.stack[-inst.arg].call_method(tx, "update", [seq], {})


@handler("MAP_ADD")  # dis#opcode-MAP_ADD (dict comprehensions)
def MAP_ADD(tx: Tx, inst: Inst) -> None:
    value, key = tx.pop(), tx.pop()
    tx.stack[-inst.arg].items[dict_key(key)] = value


@handler("DICT_UPDATE", "DICT_MERGE")  # dis#opcode-DICT_UPDATE ({**a}, f(**kw))
def DICT_UPDATE(tx: Tx, inst: Inst) -> None:
    other = tx.pop()
    if not isinstance(other, ConstDictVariable):
        unimplemented(f"** of {other}")
    tx.stack[-inst.arg].items.update(other.items)


@handler("UNPACK_SEQUENCE")  # dis#opcode-UNPACK_SEQUENCE: a, b = seq
def UNPACK_SEQUENCE(tx: Tx, inst: Inst) -> None:
    items = tx.pop().unpack_var_sequence(tx)
    if len(items) != inst.arg:
        unimplemented(f"unpacking {len(items)} values into {inst.arg} names")
    for item in reversed(items):
        tx.push(item)


@handler("UNPACK_EX")  # dis#opcode-UNPACK_EX: a, *rest, b = seq
def UNPACK_EX(tx: Tx, inst: Inst) -> None:
    before, after = inst.arg & 0xFF, inst.arg >> 8
    items = tx.pop().unpack_var_sequence(tx)
    if len(items) < before + after:
        unimplemented("not enough values to unpack")
    middle = ListVariable(items[before:len(items) - after])
    for item in reversed([*items[:before], middle, *items[len(items) - after:]]):
        tx.push(item)
