"""User generators and ``@contextlib.contextmanager`` (mirrors ``LocalGeneratorObjectVariable``
and ``ContextlibContextManagerLocalGeneratorObjectVariable`` in torch/_dynamo/variables/
functions.py).

Calling a user generator function while tracing makes a :class:`LocalGeneratorVariable`: the
generator's frame is an inlining translator that has not run yet. It runs only when the consumer
asks, up to its next ``yield`` (``YIELD_VALUE`` pauses it), so its side effects happen when
CPython's do. The generator protocol acts on that paused frame as CPython acts on a real one:

- ``next(gen)`` / ``gen.send(v)``: ``v`` replaces the ``None`` the paused ``yield`` left on the
  frame's stack (the value of the ``yield`` expression), and the frame runs on;
- ``gen.throw(exc)``: the exception is raised *at* the paused ``yield``: the frame's exception
  table picks the handler (an ``except`` or ``finally`` around the ``yield``), and the frame runs
  on from there; with no handler the generator is finished and ``exc`` goes on to the caller;
- ``gen.close()``: ``throw(GeneratorExit())``, which the generator must let through.

When the frame finishes, the caller sees ``StopIteration`` carrying the ``return`` value; a
``StopIteration`` raised inside the generator leaves it as ``RuntimeError`` (PEP 479).

``@contextlib.contextmanager`` is built on that protocol (CPython's ``_GeneratorContextManager``):
``__enter__`` is ``next(gen)``, the value bound by ``as``; ``__exit__`` runs the generator's code
after the ``yield`` -- with ``next`` on a normal exit, with ``throw`` when the block raised (a
generator that catches the exception and returns swallows it).

In ``yield from`` these pass on as CPython passes them: a value sent goes to the inner
generator (the ``SEND`` the outer one goes back to), ``close()`` closes the inner one before
the outer one sees ``GeneratorExit``, and another exception thrown in reaches the inner one
first: what it yields the outer one yields, its return value ends the ``yield from``, and
what it lets through is raised at the outer one's ``yield``.

A generator paused inside a ``try``/``with`` of its own is closed by CPython when its last
reference goes, and its handler (a ``finally``) runs then: after each instruction, one that
nothing the trace holds reaches any more is closed right there (:func:`close_dead_generators`:
a ``for`` loop left by ``break``, ``next(gen())``, ``del g``, a helper returning), and when the
root frame returns, those its locals held are closed in the order of the locals
(:func:`close_at_frame_exit`).

A generator still paused when the graph breaks (its frame exists only in the tracer) is
carried on as a *real* generator that continues it: a resume function of its code
(resume_execution.py), called with its frame's stack and live locals and run to its own first
``yield``, which stands for the one the traced frame is paused at. The code after the break then
runs it natively. Not carried on (the frame runs eagerly, with the reason): a generator paused
inside a ``try``/``with`` of its own or in ``yield from``, or one with closure variables other
than real cells of a function from outside the trace.
"""

from __future__ import annotations

import contextlib
import sys
import types
from typing import Any

from ..bytecode import PY312
from ..exc import ObservedException, unimplemented
from ..resume_execution import ITERATOR, NULL, VALUE, ContinueExecutionCache, ResumeSpec, live_locals
from .base import NullVariable, VariableTracker
from .constant import ConstantVariable
from .lists import ListIteratorVariable, TupleVariable, hand_over
from .functions import ClosureCell, NestedUserFunctionVariable
from .hashable import HashableTracker
from .misc import ContextManagerVariable
from .user_defined import UserDefinedObjectVariable

# the code of the function every ``@contextmanager`` returns (contextlib's ``helper``)
CONTEXTMANAGER_CODE = contextlib.contextmanager(lambda: None).__code__


def _is_none(vt: VariableTracker) -> bool:
    return vt.is_python_constant() and vt.as_python_constant() is None


def exception_type(e: ObservedException) -> type:
    """The class of the exception an ObservedException carries (a tracker or a real one)."""
    return e.value.python_type() if isinstance(e.value, VariableTracker) else type(e.value)


def _raise(exc: Any) -> None:
    name = exc.python_type().__name__ if isinstance(exc, VariableTracker) else None
    raise ObservedException(exc, name)


class LocalGeneratorVariable(ListIteratorVariable):
    """A generator made by calling a user generator function: ``items`` are what its frame has
    yielded so far, handed out one by one (``next_item``)."""

    def __init__(self, frame):
        super().__init__(frame.generated_items, generator=frame.code.co_name)
        self.frame = frame
        self.death_uncertain = False  # once held only by a handler's loop (generators.py)

    def python_type(self) -> type:
        return types.GeneratorType

    @property
    def started(self) -> bool:
        return self.frame.index > 0

    def next_item(self) -> VariableTracker | None:
        if self.index >= len(self.items) and not self.frame.done:
            self.frame.resume()
        return hand_over(self.frame.output, super().next_item())

    def unpack_var_sequence(self, tx) -> list[VariableTracker]:
        while not self.frame.done:
            self.frame.resume()
        return hand_over(self.frame.output, super().unpack_var_sequence(tx))

    def remaining(self, codegen) -> str:
        if not self.frame.done:
            return self.resumed(codegen)  # a generator's iter() is itself
        return super().remaining(codegen)

    def reconstruct(self, codegen) -> str:
        if not self.frame.done:
            return self.resumed(codegen)
        replay = codegen.install_global("finished_generator", finished_generator)
        return f"{replay}({super().remaining(codegen)})"  # still a generator, as in eager

    def is_built_container(self) -> bool:
        return True  # each reconstruct makes a new generator: one reached twice is made once

    def children(self) -> list[VariableTracker]:
        if self.frame.done:
            return super().children()
        return [*self.frame.stack, *self.frame.symbolic_locals.values()]

    def referents(self) -> list:
        """What a real generator holds: the items not read yet and, until it finishes, its
        frame (a finished generator's frame is cleared)."""
        unread = self.items[self.index:]
        if self.frame.done:
            return unread
        frame = self.frame
        return [*unread, *frame.stack, *frame.symbolic_locals.values(), *frame.cells.values(),
                *frame.exc_info, *frame.block_stack]

    # -- carried across a graph break -------------------------------------------------------------
    def resumed(self, codegen) -> str:
        """A real generator that continues this one (see the module docstring)."""
        frame, name = self.frame, self.generator
        blocker = self._resume_blocker()
        if blocker:
            unimplemented(f"the generator {name}() is paused at a graph break {blocker}: its "
                          "frame exists only in the tracer, so it cannot be passed on to the "
                          "code after the break")
        code = frame.code
        if self.started:  # on after the paused yield (and the RESUME that follows it)
            after = frame.index + (frame.instructions[frame.index].original == "RESUME")
            stack, kind, yield_arg = frame.stack[:-1], "yield", frame.current_instruction.arg
        else:  # on after the prologue (RETURN_GENERATOR, POP_TOP, RESUME 0)
            after = 1 + next(i for i, inst in enumerate(frame.instructions)
                             if inst.original == "RESUME")
            stack, kind, yield_arg = [], "start", None
        offset = frame.instructions[after].offset
        names = tuple(n for n in live_locals(code, offset) if n in frame.symbolic_locals)
        kinds, exprs = _stack_kinds(codegen, stack)
        resume = ContinueExecutionCache.lookup(ResumeSpec(code, offset, kinds, names, kind,
                                                          yield_arg))
        # its free variables' cells (real ones: the same cells) become the resume function's
        # closure, as for any resume function (resume_execution.py)
        cells = [NestedUserFunctionVariable._cell_expr(codegen, frame.cells[n])
                 for n in code.co_freevars]
        args = [codegen.install_global(resume.co_name, resume),
                codegen.install_global("globals", frame.f_globals),
                f"({''.join(c + ', ' for c in cells)})",
                *exprs, *(codegen(frame.symbolic_locals[n]) for n in names)]
        call = f"{codegen.install_global('resumed_generator', resumed_generator)}({', '.join(args)})"
        if kind == "start":
            return call
        return f"{codegen.install_global('paused_at_first_yield', paused_at_first_yield)}({call})"

    def _resume_blocker(self) -> str | None:
        frame = self.frame
        if self.index < len(self.items):
            return "with items it has made and nobody has read yet"
        if frame.code.co_cellvars:  # cells shared with closures it made: one cell each, twice
            return "and has variables captured by closures"
        if any(frame.cells[n].real is None for n in frame.code.co_freevars):
            return "and reads closure variables of a function that ran while tracing"
        if self.cleanup_pending():
            return "inside a try/with block of its own"
        if self.started and self._delegating():
            return "in `yield from`"
        return None

    # -- the generator protocol -----------------------------------------------------------------
    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        protocol = {"__next__": self.next_, "send": self.send, "throw": self.throw,
                    "close": self.close}
        if name in protocol and not kwargs:
            if name != "throw" and len(args) != (name == "send"):
                unimplemented(f"generator.{name}() with {len(args)} arguments")
            return protocol[name](tx, *args)
        return super().call_method(tx, name, args, kwargs)

    def next_(self, tx) -> VariableTracker:
        return self.send(tx, ConstantVariable(None))

    def send(self, tx, value: VariableTracker) -> VariableTracker:
        if not self.started and not _is_none(value):
            raise ObservedException(TypeError("can't send non-None value to a just-started "
                                              "generator"))
        if self.frame.done:
            raise ObservedException(StopIteration())
        if self.started:  # in `yield from`, the SEND it goes back to passes it on (SEND)
            self.frame.stack[-1] = value  # what the paused `yield` evaluates to
        return self._item_or_stop(self.next_item())

    def send_or_none(self, tx, value: VariableTracker) -> VariableTracker | None:
        """``send`` for ``yield from`` (SEND): None when the generator returns."""
        try:
            return self.send(tx, value)
        except ObservedException as e:
            if self.frame.done and issubclass(exception_type(e), StopIteration):
                return None
            raise

    def throw(self, tx, exc: VariableTracker, *rest: VariableTracker) -> VariableTracker:
        if rest:
            unimplemented("generator.throw(type, value, traceback) (the deprecated form)")
        if exc.is_python_constant() and isinstance(exc.as_python_constant(), type):
            exc = exc.call_function(tx, [], {})  # throw(KeyError) throws KeyError()
        return self._item_or_stop(self._throw(tx, exc))

    def close(self, tx) -> VariableTracker:
        """``GeneratorExit`` at the paused ``yield``; the generator must let it through or
        return (3.13: ``close()`` then returns what it returned)."""
        if self.frame.done or not self.started:
            self.frame.done = True
            return ConstantVariable(None)
        try:
            item = self._throw(tx, UserDefinedObjectVariable(GeneratorExit()))
        except ObservedException as e:
            if issubclass(exception_type(e), GeneratorExit):
                return ConstantVariable(None)
            raise
        if item is not None:
            raise ObservedException(RuntimeError("generator ignored GeneratorExit"))
        returned = self.frame.return_value or ConstantVariable(None)
        return returned if sys.version_info >= (3, 13) else ConstantVariable(None)

    def _throw(self, tx, exc: VariableTracker) -> VariableTracker | None:
        """Raise ``exc`` at the paused ``yield`` and run on: the next item, or None when the
        frame returned. In ``yield from``, as CPython: ``GeneratorExit`` closes the inner
        generator first; anything else is thrown into it."""
        frame = self.frame
        if frame.done or not self.started:  # raised before its first line: finished
            frame.done = True
            _raise(exc)
        error = ObservedException(exc, exc.python_type().__name__)
        if self._delegating():
            inner = frame.stack[-2]
            if not isinstance(inner, LocalGeneratorVariable):
                unimplemented(f"generator.throw() into {self.generator}(), which is paused in "
                              f"`yield from` over {inner} (not a generator the trace runs)")
            if issubclass(exc.python_type(), GeneratorExit):
                inner.close(tx)
            else:
                try:
                    item = inner._throw(tx, exc)
                except ObservedException as raised:  # the inner one let it through, or raised
                    error = raised
                else:
                    return self._after_inner_throw(item, inner)
        if not frame.handle_exception(error, frame.current_instruction):
            frame.done = True  # no handler around the `yield`: on up to the caller
            raise error
        return self.next_item()

    def _after_inner_throw(self, item: VariableTracker | None,
                           inner: LocalGeneratorVariable) -> VariableTracker | None:
        """The inner generator of ``yield from`` handled a throw(): an item it yields is this
        one's too (still paused in ``yield from``); if it returned, ``yield from`` evaluates to
        its return value and this frame runs on from there, as CPython's ``gen_throw`` does
        (the ``SEND`` that finds its iterator exhausted)."""
        frame = self.frame
        if item is not None:
            frame.generated_items.append(item)
            return self.next_item()
        send = next(i for i in reversed(frame.instructions[:frame.index])
                    if i.opname == "SEND")
        finish_send(frame, send, inner.frame.return_value or ConstantVariable(None))
        return self.next_item()

    def _item_or_stop(self, item: VariableTracker | None) -> VariableTracker:
        """What send/throw give back: the item, or StopIteration carrying the return value."""
        if item is not None:
            return item
        result = self.frame.return_value
        if result is None or _is_none(result):
            raise ObservedException(StopIteration())
        if result.is_python_constant():
            raise ObservedException(StopIteration(result.as_python_constant()))
        stop = UserDefinedObjectVariable(StopIteration(), None, attrs={
            "args": TupleVariable([result]), "value": result})  # e.value: the tracker
        raise ObservedException(stop, "StopIteration")

    def cleanup_pending(self) -> bool:
        """Paused inside a ``try``/``with`` of its own: CPython's ``close()`` -- when the
        generator is garbage collected -- would run its handler (3.12's handler of the whole
        body, which only turns StopIteration into RuntimeError, runs nothing)."""
        frame = self.frame
        if frame.done or not self.started:
            return False
        offset = frame.current_instruction.offset
        for start, end, target, _, _ in frame.exception_table:
            handler = frame.instructions[frame.first_index[target]]
            if start <= offset < end and handler.opname != "STOPITERATION_ERROR":
                return True
        return False

    def _delegating(self) -> bool:
        """Paused in ``yield from`` (the ``RESUME 2`` after its ``yield``)."""
        after = self.frame.instructions[self.frame.index]
        return after.original == "RESUME" and (after.arg or 0) & 3 == 2


def _stack_kinds(codegen, stack: list[VariableTracker]) -> tuple[tuple[str, ...], list[str]]:
    """How a resume function's prologue rebuilds each slot of a generator frame's stack."""
    kinds, exprs = [], []
    for vt in stack:
        if isinstance(vt, NullVariable):
            kinds.append(NULL)
        elif isinstance(vt, ListIteratorVariable):  # a for loop in progress
            kinds.append(ITERATOR)
            exprs.append(vt.remaining(codegen))
        else:
            kinds.append(VALUE)
            exprs.append(codegen(vt))
    return tuple(kinds), exprs


def finish_send(tx, send, value: VariableTracker) -> None:
    """The iterator of ``yield from`` is exhausted: ``value`` (its return value) is what
    ``yield from`` evaluates to, on at the SEND's target."""
    if PY312:
        tx.stack[-1] = value  # END_SEND drops the iterator
    else:
        del tx.stack[-2:]
        tx.push(value)
    tx.jump(send)


def resumed_generator(code: types.CodeType, f_globals: dict, closure: tuple,
                      *args: Any) -> types.GeneratorType:
    """Call a generator's resume function (its closure: the paused frame's cells)."""
    return types.FunctionType(code, f_globals, code.co_name, None, closure or None)(*args)


def finished_generator(items: tuple) -> types.GeneratorType:
    """A generator whose frame has returned, with the items it made that nobody read yet."""
    yield from items


def paused_at_first_yield(gen: types.GeneratorType) -> types.GeneratorType:
    """Run a resumed generator to the ``yield`` its prologue pauses at (no user code runs
    before it), so that it is started, as the generator it continues was: ``send(v)`` then
    delivers ``v`` as the value of the paused ``yield``."""
    next(gen)
    return gen


def close_at_frame_exit(tx) -> None:
    """The root frame returns: a generator it made that is paused inside a ``try``/``with`` of
    its own and that only its locals hold dies with them, and CPython's ``close()`` runs its
    handler then -- after the return value is computed, in the order of the locals. That
    ``close()`` is traced now, at the same point of the program. One that the return value
    reaches (it lives on) is left to :func:`check_paused_generators`."""
    pending = [g for g in tx.output.local_generators if g.cleanup_pending()]
    if not pending:
        return
    escaping = reachable([tx.return_value, *_outside_roots(tx.output)])
    for name in tx.code.co_varnames:
        held = reachable([tx.symbolic_locals[name]]) if name in tx.symbolic_locals else set()
        for gen in pending:
            if id(gen) in held and id(gen) not in escaping and gen.cleanup_pending():
                _close_dying(tx, gen)


def close_dead_generators(tx) -> None:
    """After each instruction: a generator paused inside a ``try``/``with`` of its own that
    nothing holds any more -- the ``for`` loop left by ``break`` popped it, ``next(gen())``
    returned, ``del g``, the helper that made it returned -- is closed now, as CPython's
    reference counting closes it at that point, and its ``finally`` runs before the next
    instruction. Held means reachable from what the running frames hold (stack, locals,
    cells, the values a handler is using), from the locals of frames an exception left (its
    traceback keeps them), or from objects outside the frame the trace stored it into."""
    output = tx.output
    if getattr(output, "closing_generators", False):
        return  # a close() in progress runs the generator's own code
    output.local_generators[:] = [g for g in output.local_generators if not g.frame.done]
    while True:
        running = {id(frame) for frame in output.running}
        pending = [g for g in output.local_generators
                   if id(g.frame) not in running and g.cleanup_pending()]
        if not pending:
            return
        precise, handed = _live_roots(output)
        wanted = {id(g) for g in pending}
        held = reachable(precise + handed, stop_when_seen=wanted)
        if handed:  # held only by what a handler got while running: it dies some time later
            surely_held = reachable(precise, stop_when_seen=wanted)
            for gen in pending:
                gen.death_uncertain |= id(gen) in held and id(gen) not in surely_held
        dead = [g for g in pending if id(g) not in held]
        if not dead:
            return
        output.closing_generators = True
        try:
            for gen in dead:
                _close_dying(tx, gen)
        finally:
            output.closing_generators = False


def _close_dying(tx, gen: LocalGeneratorVariable) -> None:
    if gen.death_uncertain:
        unimplemented(f"the generator {gen.generator}() paused inside a try/with block dies "
                      "inside a builtin's loop over the items it was handed: the trace cannot "
                      "tell at which point CPython runs its cleanup")
    try:
        gen.close(tx)
    except ObservedException as e:  # CPython would only print it (unraisable)
        unimplemented(f"closing the generator {gen.generator}() when it is garbage collected "
                      f"raises {exception_type(e).__name__}")


def _live_roots(output) -> tuple[list, list]:
    """What the running frames hold for sure, and what their handlers got while running. The
    stacks first: a generator that is alive is most often found there (the ``with`` block of
    a ``@contextmanager`` keeps it on the stack), and the walk stops once it is found."""
    stacks, rest, handed = [], [], []
    for frame in output.running:
        stacks += [*frame.stack, *frame.in_flight, *frame.block_stack]
        rest += [*frame.symbolic_locals.values(), *frame.cells.values(), *frame.exc_info,
                 frame.return_value]
        handed += frame.handed
    return [*stacks, *rest, *_outside_roots(output)], handed


def _outside_roots(output) -> list:
    """What objects from outside the frame hold: the values the trace stored into them."""
    mutations = output.side_effects.mutations
    return [*output.held_by_tracebacks, *(m.target for m in mutations),
            *(v for m in mutations for v in [*m.args, *m.kwargs.values()])]


def reachable(roots: list, stop_when_seen: set[int] | None = None) -> set[int]:
    """id() of everything reachable from ``roots`` through what trackers hold
    (:meth:`VariableTracker.referents`), closure cells and dict keys. With ``stop_when_seen``,
    stops as soon as all of those are seen."""
    seen: set[int] = set()
    todo = [r for r in reversed(roots) if r is not None]  # depth first, from the first root
    wanted = set(stop_when_seen or ())
    while todo:
        value = todo.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        wanted.discard(id(value))
        if stop_when_seen and not wanted:
            break
        todo += _referents(value)
    return seen


def _referents(value: Any) -> Any:
    if isinstance(value, VariableTracker):
        return value.referents()
    if isinstance(value, (list, tuple, set, frozenset)):
        return value
    if isinstance(value, dict):
        return [*value, *value.values()]
    if isinstance(value, (ClosureCell, HashableTracker)):
        return vars(value).values()
    return ()


def check_paused_generators(generators: list[LocalGeneratorVariable]) -> None:
    """When the trace ends (a return, or the instruction a graph break runs natively), a
    generator it made and left paused inside a ``try``/``with`` is left for the garbage
    collector, whose ``close()`` runs the handler: the graph cannot say when that happens."""
    for gen in generators:
        if gen.cleanup_pending():
            unimplemented(f"the generator {gen.generator}() is left paused inside a try/with "
                          "block: CPython runs its cleanup when the generator is garbage "
                          "collected, which the trace does not model")


class ContextlibDecoratedVariable(VariableTracker):
    """A generator function decorated by ``@contextlib.contextmanager`` (decorated outside the
    frame, or inside it): calling it makes the generator and wraps it."""

    def __init__(self, fn: VariableTracker, source=None):
        super().__init__(source)
        self.fn = fn

    def python_type(self) -> type:
        return types.FunctionType

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        gen = self.fn.call_function(tx, args, kwargs)
        if not isinstance(gen, LocalGeneratorVariable):
            unimplemented(f"@contextmanager on {self.fn}, which is not a generator function")
        return GeneratorContextManagerVariable(gen)

    def children(self) -> list[VariableTracker]:
        return [self.fn]

    def is_built_container(self) -> bool:
        return self.source is None  # decorated while tracing: made again for real

    def reconstruct(self, codegen) -> str:
        if self.source is not None:
            return self.source.expr()
        decorate = codegen.install_global("contextmanager", contextlib.contextmanager)
        return f"{decorate}({codegen(self.fn)})"

    def _repr_body(self) -> str:
        return repr(self.fn)


class GeneratorContextManagerVariable(ContextManagerVariable):
    """What a ``@contextmanager`` function returns: ``__enter__`` and ``__exit__`` as
    CPython's ``contextlib._GeneratorContextManager`` writes them, on the traced generator."""

    resumable = False  # its generator is paused at the yield: see the module docstring

    def __init__(self, gen: LocalGeneratorVariable):
        super().__init__()
        self.gen = gen

    def python_type(self) -> type:
        return contextlib._GeneratorContextManager

    def enter(self, tx) -> VariableTracker:
        item = self.gen.next_item()
        if item is None:
            raise ObservedException(RuntimeError("generator didn't yield"))
        return item

    def exit(self, tx, kind=None, value=None, traceback=None) -> VariableTracker:
        if kind is None or _is_none(kind):  # the block ended normally: on to the end
            if self.gen.next_item() is None:
                return ConstantVariable(False)
            raise ObservedException(RuntimeError("generator didn't stop"))
        if _is_none(value):
            value = kind.call_function(tx, [], {})
        try:
            self.gen.throw(tx, value)
        except ObservedException as e:
            if e.value is value:  # let through: not swallowed
                return ConstantVariable(False)
            if issubclass(exception_type(e), StopIteration):  # caught, and the generator ended
                return ConstantVariable(True)
            raise  # another exception, raised while handling this one
        raise ObservedException(RuntimeError("generator didn't stop after throw()"))

    def children(self) -> list[VariableTracker]:
        return [self.gen]

    def _repr_body(self) -> str:
        return f"{self.gen.generator}()"
