"""VariableTracker: the symbolic value the interpreter keeps on its stack and in its locals
(mirrors torch/_dynamo/variables/base.py).

Each subclass models one kind of Python value (a tensor, a constant, a list, a function, an
nn.Module, ...) and answers the questions the bytecode asks of it: ``var_getattr`` (LOAD_ATTR),
``call_function`` (CALL), ``call_method`` (LOAD_METHOD + CALL), ``unpack_var_sequence``
(GET_ITER, UNPACK_SEQUENCE, ``*args``), ``as_python_constant`` (branching, folding). Anything
a subclass does not answer raises ``Unsupported``, which sends the frame to eager.

``source`` says where the value came from, so the transformed code can fetch it again and the
guards can check it. Values made while tracing (results of ops, new lists) have no source.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from ..exc import unimplemented
from ..source import Source

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..symbolic_convert import InstructionTranslatorBase as Tx


class VariableTracker:
    def __init__(self, source: Source | None = None):
        self.source = source

    # -- what kind of Python value this is ------------------------------------------------------
    def python_type(self) -> type:
        unimplemented(f"python_type of {self}")

    def is_python_constant(self) -> bool:
        try:
            self.as_python_constant()
            return True
        except Exception:  # Unsupported or anything a partial constant raises
            return False

    def as_python_constant(self) -> Any:
        unimplemented(f"{self} is not a Python constant")

    def as_proxy(self) -> Any:
        """The value as an argument of an FX node: a Proxy, or a constant structure."""
        if self.is_python_constant():
            return self.as_python_constant()
        unimplemented(f"{self} cannot be an argument of a graph node")

    def as_fake(self) -> Any:
        """The value as an argument when computing example values with fake tensors."""
        return self.as_proxy()

    # -- what the bytecode can do with it -------------------------------------------------------
    def var_getattr(self, tx: Tx, name: str) -> VariableTracker:
        """Default: a method of the value's type (``xs.append``), answered by call_method."""
        try:
            method = callable(getattr(self.python_type(), name, None))
        except Exception:
            method = False
        if method:
            from .misc import GetAttrVariable

            return GetAttrVariable(self, name)
        unimplemented(f"attribute {name!r} of {self}")

    def call_function(self, tx: Tx, args: list[VariableTracker],
                      kwargs: dict[str, VariableTracker]) -> VariableTracker:
        unimplemented(f"calling {self}")

    def call_method(self, tx: Tx, name: str, args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker]) -> VariableTracker:
        from .misc import GetAttrVariable

        method = self.var_getattr(tx, name)
        if type(method) is GetAttrVariable and method.obj is self:
            # the default var_getattr's answer, which calls back here: nothing models it
            unimplemented(f"calling {name} of {self}: a method the tracer has no model for")
        return method.call_function(tx, args, kwargs)

    def unpack_var_sequence(self, tx: Tx) -> list[VariableTracker]:
        unimplemented(f"iterating over {self}")

    def truth(self, tx: Tx) -> bool:
        """``bool(value)`` at trace time (POP_JUMP_IF_TRUE/FALSE); tensors refuse."""
        return bool(self.as_python_constant())

    def identity(self) -> Any:
        """The object ``is`` compares (IS_OP); None when the value has no fixed identity."""
        return self.as_python_constant() if self.is_python_constant() else self

    def pin_identity(self) -> None:
        """The trace is about to depend on which object this is (``is``, ``in``, a dict key):
        a value guarded by less than its identity is guarded by it from here on
        (``NNModuleVariable``: an unspecialized module)."""

    # -- rebuilding the value in the transformed function ---------------------------------------
    def reconstruct(self, codegen: PyCodegen) -> str:
        if self.source is not None:
            return self.source.expr()
        unimplemented(f"returning {self} from a compiled frame")

    def children(self) -> list[VariableTracker]:
        """The trackers this one is rebuilt from (``PyCodegen.share_repeated`` walks them)."""
        return []

    def referents(self) -> list:
        """What the real object would hold, for the lifetimes of generators
        (``generators.reachable``): by default everything this tracker holds, which may keep
        a generator alive longer than CPython would but never shorter (an iterator that hands
        its items out and forgets them says so by overriding this)."""
        return list(vars(self).values())

    def is_built_container(self) -> bool:
        """A list, dict or object made while tracing: each ``reconstruct`` makes a new one, so
        one reached twice is built once into a temporary (``PyCodegen.share_repeated``)."""
        return False

    def __repr__(self) -> str:
        src = f", source={self.source.name()}" if self.source else ""
        return f"{type(self).__name__}({self._repr_body()}{src})"

    def _repr_body(self) -> str:
        return ""


class KnownCallableVariable(VariableTracker):
    """A callable whose identity is known at trace time (a builtin, a torch function): it is a
    constant of the trace, and calling it is what its subclass decides."""

    def __init__(self, fn: Any, source: Source | None = None):
        super().__init__(source)
        self.fn = fn

    def python_type(self) -> type:
        return type(self.fn)

    def as_python_constant(self) -> Any:
        return self.fn

    def identity(self) -> Any:
        return self.fn

    def reconstruct(self, codegen: PyCodegen) -> str:
        """A builtin by its own name (``print``: readable, and the same object); anything else
        (torch.*, a module's function) as an installed name."""
        if self.source is not None:
            return self.source.expr()
        name = getattr(self.fn, "__name__", "")
        if getattr(builtins, name, None) is self.fn and name not in codegen.f_globals:
            return name
        return codegen.install_global(name or "fn", self.fn)


class NullVariable(VariableTracker):
    """The NULL that PUSH_NULL / LOAD_GLOBAL / LOAD_METHOD put beside a callable for CALL: below
    it up to 3.12, above it on 3.13."""

    def _repr_body(self) -> str:
        return "NULL"


def callable_and_args(first, second, args: list) -> tuple:
    """The callable and its positional arguments from the two stack slots under the arguments:
    ``NULL, callable`` (3.11, 3.12), ``callable, NULL`` (3.13), or ``method, self`` (all)."""
    if isinstance(first, NullVariable):
        return second, args
    if isinstance(second, NullVariable):
        return first, args
    return first, [second, *args]


class DeletedVariable(VariableTracker):
    """What LOAD_FAST_AND_CLEAR pushes for a local that was unbound (3.12 comprehensions)."""
