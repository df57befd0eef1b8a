"""Instruction handlers for control flow: jumps, loops, calls, making functions, ``with``,
return (part of torch/_dynamo/symbolic_convert.py in real Dynamo). Branches are decided at trace time from
constants; ``for`` loops unroll because FOR_ITER's iterator holds every item already.
"""

from __future__ import annotations

import sys
from typing import Callable

from .bytecode import PY312, PY313
from .bytecode import Instruction as Inst
from .exc import ObservedException, unimplemented
from .symbolic_convert import InstructionTranslatorBase as Tx
from .symbolic_convert import handler
from .variables.base import NullVariable, callable_and_args
from .variables.builder import SourcelessBuilder
from .variables.builtin import BuiltinVariable
from .variables.constant import ConstantVariable
from .variables.dicts import ConstDictVariable
from .variables.functions import NestedUserFunctionVariable
from .variables.generators import LocalGeneratorVariable, finish_send
from .variables.lists import ListIteratorVariable
from .variables.misc import TracebackVariable, WithExitFunctionVariable
from .variables.torch import TorchVariable


# -- jumps --------------------------------------------------------------------------------------
@handler("JUMP_FORWARD", "JUMP_BACKWARD")  # dis#opcode-JUMP_FORWARD, dis#opcode-JUMP_BACKWARD
def JUMP(tx: Tx, inst: Inst) -> None:
    tx.jump(inst)


JUMPS_ON_TRUTH = {"POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE"}


@handler("TO_BOOL")  # dis#opcode-TO_BOOL (3.13): bool(TOS), before a jump or UNARY_NOT
def TO_BOOL(tx: Tx, inst: Inst) -> None:
    if tx.instructions[tx.index].opname in JUMPS_ON_TRUTH:
        return  # the jump asks for the truth itself, and a break there resumes past it
    # Anything else (UNARY_NOT) needs a real bool: a break here resumes *at* TO_BOOL
    tx.push(ConstantVariable(tx.pop().truth(tx)))


@handler("POP_JUMP_IF_FALSE")  # dis#opcode-POP_JUMP_IF_FALSE (3.11: ..._FORWARD/BACKWARD_...)
def POP_JUMP_IF_FALSE(tx: Tx, inst: Inst) -> None:
    if not tx.pop().truth(tx):
        tx.jump(inst)


@handler("POP_JUMP_IF_TRUE")  # dis#opcode-POP_JUMP_IF_TRUE
def POP_JUMP_IF_TRUE(tx: Tx, inst: Inst) -> None:
    if tx.pop().truth(tx):
        tx.jump(inst)


@handler("POP_JUMP_IF_NONE")  # dis#opcode-POP_JUMP_IF_NONE
def POP_JUMP_IF_NONE(tx: Tx, inst: Inst) -> None:
    if tx.pop().identity() is None:
        tx.jump(inst)


@handler("POP_JUMP_IF_NOT_NONE")  # dis#opcode-POP_JUMP_IF_NOT_NONE
def POP_JUMP_IF_NOT_NONE(tx: Tx, inst: Inst) -> None:
    if tx.pop().identity() is not None:
        tx.jump(inst)


@handler("JUMP_IF_FALSE_OR_POP")  # dis#opcode-JUMP_IF_FALSE_OR_POP (3.11 only: `a and b`)
def JUMP_IF_FALSE_OR_POP(tx: Tx, inst: Inst) -> None:
    if not tx.stack[-1].truth(tx):
        tx.jump(inst)
    else:
        tx.pop()


@handler("JUMP_IF_TRUE_OR_POP")  # dis#opcode-JUMP_IF_TRUE_OR_POP (3.11 only: `a or b`)
def JUMP_IF_TRUE_OR_POP(tx: Tx, inst: Inst) -> None:
    if tx.stack[-1].truth(tx):
        tx.jump(inst)
    else:
        tx.pop()


# -- loops: unrolled ------------------------------------------------------------------------------
@handler("GET_ITER")  # dis#opcode-GET_ITER
def GET_ITER(tx: Tx, inst: Inst) -> None:
    obj = tx.pop()
    tx.push(ListIteratorVariable.of(tx, obj))


@handler("FOR_ITER")  # dis#opcode-FOR_ITER: next item, or pop the iterator and leave the loop
def FOR_ITER(tx: Tx, inst: Inst) -> None:
    item = tx.stack[-1].next_item()
    if item is None:
        tx.pop()
        tx.jump(inst)  # 3.12: the target is already past END_FOR (see bytecode.py)
    else:
        tx.push(item)


@handler("END_FOR")  # dis#opcode-END_FOR (3.12): only reached by a jump, never by FOR_ITER
def END_FOR(tx: Tx, inst: Inst) -> None:
    tx.popn(1 if PY313 else 2)  # 3.13: a POP_TOP follows for the iterator


# -- calls ------------------------------------------------------------------------------------
@handler("KW_NAMES")  # dis#opcode-KW_NAMES: names of the keyword arguments of the next CALL
def KW_NAMES(tx: Tx, inst: Inst) -> None:
    tx.kw_names = tuple(inst.argval)


@handler("CALL")  # dis#opcode-CALL: [NULL, callable, args...] or [callable, self, args...]
def CALL(tx: Tx, inst: Inst) -> None:
    args = tx.popn(inst.arg)
    kw_names, tx.kw_names = tx.kw_names or (), None
    kwargs = dict(zip(kw_names, args[len(args) - len(kw_names):]))
    args = args[:len(args) - len(kw_names)]
    second, first = tx.pop(), tx.pop()
    fn, args = callable_and_args(first, second, args)
    tx.push(fn.call_function(tx, args, kwargs))


@handler("CALL_KW")  # dis#opcode-CALL_KW (3.13): CALL whose keyword names are on top
def CALL_KW(tx: Tx, inst: Inst) -> None:
    tx.kw_names = tuple(tx.pop().as_python_constant())
    CALL(tx, inst)


@handler("CALL_FUNCTION_EX")  # dis#opcode-CALL_FUNCTION_EX: f(*args) / f(*args, **kwargs)
def CALL_FUNCTION_EX(tx: Tx, inst: Inst) -> None:
    kwargs = tx.pop() if inst.arg & 1 else ConstDictVariable({})
    args, fn = tx.pop(), tx.pop()
    if isinstance(fn, NullVariable):  # 3.13: the NULL is above the callable
        fn = tx.pop()
    elif tx.stack and isinstance(tx.stack[-1], NullVariable):
        tx.pop()
    if not isinstance(kwargs, ConstDictVariable):
        unimplemented(f"**{kwargs}")
    tx.push(fn.call_function(tx, args.unpack_var_sequence(tx), dict(kwargs.items)))


# MAKE_FUNCTION's flag bits (3.11, 3.12) and SET_FUNCTION_ATTRIBUTE's argument (3.13), in the
# order MAKE_FUNCTION pops them: the field of NestedUserFunctionVariable each sets, and how its
# value is read off the tracked stack value (annotations are not needed to run the function).
FUNCTION_ATTRIBUTES: dict[int, tuple[str, Callable | None]] = {
    0x08: ("closure", lambda cells: tuple(cell.value for cell in cells.items)),
    0x04: ("annotations", None),
    0x02: ("kwdefaults", lambda kwdefaults: kwdefaults.items),
    0x01: ("defaults", lambda defaults: tuple(defaults.items)),
}


def set_function_attribute(fn: NestedUserFunctionVariable, flag: int, value) -> None:
    name, read = FUNCTION_ATTRIBUTES[flag]
    if read is not None:
        setattr(fn, name, read(value))


@handler("MAKE_FUNCTION")  # dis#opcode-MAKE_FUNCTION: code on top; up to 3.12 the attributes
def MAKE_FUNCTION(tx: Tx, inst: Inst) -> None:  # its flag bits name are below it
    code = tx.pop().as_python_constant()
    fn = NestedUserFunctionVariable(code, tx.f_globals, defaults=(), kwdefaults={}, closure=())
    for flag in FUNCTION_ATTRIBUTES:  # always 0 on 3.13 (SET_FUNCTION_ATTRIBUTE follows)
        if (inst.arg or 0) & flag:
            set_function_attribute(fn, flag, tx.pop())
    tx.push(fn)


@handler("SET_FUNCTION_ATTRIBUTE")  # dis#opcode-SET_FUNCTION_ATTRIBUTE (3.13): function on
def SET_FUNCTION_ATTRIBUTE(tx: Tx, inst: Inst) -> None:  # top, the attribute's value below
    fn = tx.pop()
    set_function_attribute(fn, inst.arg, tx.pop())
    tx.push(fn)


@handler("RETURN_VALUE")  # dis#opcode-RETURN_VALUE (3.12 RETURN_CONST is LOAD_CONST + this)
def RETURN_VALUE(tx: Tx, inst: Inst) -> None:
    tx.return_value = tx.pop()
    tx.done = True


# -- generators (inlined ones only: `any(x > 0 for x in sizes)`) -----------------------------
@handler("RETURN_GENERATOR")  # dis#opcode-RETURN_GENERATOR: the first send() resumes with None
def RETURN_GENERATOR(tx: Tx, inst: Inst) -> None:
    if tx.parent is None:
        unimplemented("compiling a generator function itself")
    tx.push(ConstantVariable(None))


@handler("YIELD_VALUE")  # dis#opcode-YIELD_VALUE: hand the item over and pause; the consumer
def YIELD_VALUE(tx: Tx, inst: Inst) -> None:  # resumes with None sent back (next(), for)
    if tx.parent is None:
        unimplemented("yield in a compiled frame")
    tx.generated_items.append(tx.pop())
    tx.push(ConstantVariable(None))
    tx.suspended = True


@handler("GET_YIELD_FROM_ITER")  # dis#opcode-GET_YIELD_FROM_ITER: `yield from it` (no coroutines)
def GET_YIELD_FROM_ITER(tx: Tx, inst: Inst) -> None:
    GET_ITER(tx, inst)


@handler("SEND")  # dis#opcode-SEND: the next item of the iterator below; once it is exhausted,
def SEND(tx: Tx, inst: Inst) -> None:  # its return value, and on to the jump target
    sent, receiver = tx.stack[-1], tx.stack[-2]
    if sent.is_python_constant() and sent.as_python_constant() is None:
        item = receiver.next_item()
    elif isinstance(receiver, LocalGeneratorVariable):  # a value sent on into `yield from`
        item = receiver.send_or_none(tx, sent)
    else:
        unimplemented(f"send() of a value into {receiver}")
    if item is not None:
        tx.stack[-1] = item  # YIELD_VALUE hands it on
        return
    frame = getattr(receiver, "frame", None)  # a user generator's `return value`
    finish_send(tx, inst, getattr(frame, "return_value", None) or ConstantVariable(None))



@handler("STOPITERATION_ERROR")  # 3.12+ CALL_INTRINSIC_1 INTRINSIC_STOPITERATION_ERROR: the
def STOPITERATION_ERROR(tx: Tx, inst: Inst) -> None:  # exception on top, as PEP 479 wants it
    exc = tx.pop()
    if issubclass(exc.python_type(), StopIteration):
        exc = SourcelessBuilder.wrap(tx, RuntimeError("generator raised StopIteration"))
    tx.push(exc)


@handler("CLEANUP_THROW")  # dis#opcode-CLEANUP_THROW (3.12): an exception thrown into a generator
def CLEANUP_THROW(tx: Tx, inst: Inst) -> None:  # paused in `yield from` reached its `yield`
    exc = tx.popn(3)[-1]  # below it: the iterator and the last value sent
    if not issubclass(exc.python_type(), StopIteration):
        raise ObservedException(exc, exc.python_type().__name__)
    tx.push(ConstantVariable(None))  # END_SEND drops it
    tx.push(exc.var_getattr(tx, "value"))  # what `yield from` evaluates to


@handler("END_SEND")  # dis#opcode-END_SEND (3.12): drop the exhausted iterator below the value
def END_SEND(tx: Tx, inst: Inst) -> None:
    del tx.stack[-2]


# -- with blocks ------------------------------------------------------------------------------
@handler("BEFORE_WITH")  # dis#opcode-BEFORE_WITH: push __exit__, then the result of __enter__
def BEFORE_WITH(tx: Tx, inst: Inst) -> None:
    ctx = tx.pop()
    if isinstance(ctx, (TorchVariable, ConstantVariable)):  # inference_mode(), profiler, ...
        unimplemented(f"the context manager {ctx} changes torch state minicompile does not "
                      "model (no_grad, enable_grad, set_grad_enabled and autocast are traced)")
    entered = ctx.call_method(tx, "__enter__", [], {})
    tx.push(WithExitFunctionVariable(ctx))
    tx.push(entered)
    # The normal exit calls the exit function with (None, None, None); an exception raised in
    # the block reaches WITH_EXCEPT_START through the exception table.


# -- raising ----------------------------------------------------------------------------------
@handler("LOAD_ASSERTION_ERROR")  # dis#opcode-LOAD_ASSERTION_ERROR: a failing `assert`
def LOAD_ASSERTION_ERROR(tx: Tx, inst: Inst) -> None:
    tx.push(BuiltinVariable(AssertionError))


def exception_instance(tx: Tx, exc):
    """What ``raise exc`` raises: an exception's tracker, or an instance of an exception class
    (``raise KeyError``)."""
    if exc.is_python_constant() and isinstance(exc.as_python_constant(), type):
        exc = exc.call_function(tx, [], {})
    cls = exc.python_type()
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        unimplemented(f"raising {exc}, which is not an exception")
    return exc


def raise_observed(tx: Tx, exc) -> None:
    """``raise exc`` in the traced code: linked to the exception being handled, if any
    (``__context__``), as CPython links it."""
    exc = exception_instance(tx, exc)
    exc.chain_context(tx, tx.handled_exception())
    # (a StopIteration that leaves a generator becomes RuntimeError there, PEP 479:
    # InliningInstructionTranslator.resume)
    raise ObservedException(exc, exc.python_type().__name__)


@handler("RAISE_VARARGS")  # dis#opcode-RAISE_VARARGS: raise / raise exc / raise exc from cause
def RAISE_VARARGS(tx: Tx, inst: Inst) -> None:
    if inst.arg == 0:  # a bare `raise` in a handler: the exception being handled, as it is
        if not tx.exc_info:
            unimplemented("a bare raise with no exception being handled")
        exc = tx.exc_info[-1]
        raise ObservedException(exc, exc.python_type().__name__)
    cause = tx.pop() if inst.arg == 2 else None
    exc = tx.pop()
    if cause is not None:  # `raise exc from cause`: its __cause__ (None: no context shown)
        exc = exception_instance(tx, exc)
        if not (cause.is_python_constant() and cause.as_python_constant() is None):
            cause = exception_instance(tx, cause)
        exc.store_attr(tx, "__cause__", cause)
    raise_observed(tx, exc)


@handler("PUSH_EXC_INFO")  # dis#opcode-PUSH_EXC_INFO: a handler starts (the exception table)
def PUSH_EXC_INFO(tx: Tx, inst: Inst) -> None:
    exc = tx.pop()
    tx.push(tx.exc_info[-1] if tx.exc_info else ConstantVariable(None))  # restored by POP_EXCEPT
    tx.exc_info.append(exc)
    tx.push(exc)


@handler("CHECK_EXC_MATCH")  # dis#opcode-CHECK_EXC_MATCH: `except KeyError:`
def CHECK_EXC_MATCH(tx: Tx, inst: Inst) -> None:
    expected = tx.pop().as_python_constant()  # a class, or a tuple of classes
    tx.push(ConstantVariable(issubclass(tx.stack[-1].python_type(), expected)))


@handler("POP_EXCEPT")  # dis#opcode-POP_EXCEPT: a handler ends
def POP_EXCEPT(tx: Tx, inst: Inst) -> None:
    tx.pop()
    tx.exc_info.pop()


@handler("RERAISE")  # dis#opcode-RERAISE: no handler matched (or a `finally` ran): on up
def RERAISE(tx: Tx, inst: Inst) -> None:
    exc = tx.pop()
    if inst.arg:
        tx.pop()  # the offset the frame's f_lasti is restored to
    raise ObservedException(exc, exc.python_type().__name__)


@handler("WITH_EXCEPT_START")  # dis#opcode-WITH_EXCEPT_START: the exit function 4th from the
def WITH_EXCEPT_START(tx: Tx, inst: Inst) -> None:  # top, called for the exception on top
    exit_fn, exc = tx.stack[-4], tx.stack[-1]
    # __exit__(type, value, traceback): a user's class inlined (a true result swallows the
    # exception: the POP_JUMP_IF_TRUE after this decides), a @contextmanager's throws it into
    # its generator (generators.py); torch's own restore their state and never swallow it
    tx.push(exit_fn.call_function(tx, [SourcelessBuilder.wrap(tx, exc.python_type()), exc,
                                       TracebackVariable()], {}))


@handler("IMPORT_NAME")  # dis#opcode-IMPORT_NAME: only modules that are already imported
def IMPORT_NAME(tx: Tx, inst: Inst) -> None:
    fromlist, level = tx.pop(), tx.pop()
    name = inst.argval
    if level.as_python_constant() != 0 or name not in sys.modules:
        unimplemented(f"import {name} (not imported before tracing)")
    module = sys.modules[name] if fromlist.as_python_constant() else sys.modules[name.split(".")[0]]
    tx.push(SourcelessBuilder.wrap(tx, module))


@handler("IMPORT_FROM")  # dis#opcode-IMPORT_FROM
def IMPORT_FROM(tx: Tx, inst: Inst) -> None:
    tx.push(tx.stack[-1].var_getattr(tx, inst.argval))


