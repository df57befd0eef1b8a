"""ConstantVariable: a Python value known at trace time (mirrors torch/_dynamo/variables/constant.py).

ints, floats, bools, strings, None, dtypes, devices, classes: anything immutable whose value the
trace may depend on. Operations on constants run for real while tracing (constant folding), so
``x.shape[0] * 2 + 1`` never reaches the graph. A constant read from a source is guarded by value.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import inspect
import math
import types
from typing import Any

import torch

from ..exc import ObservedException, unimplemented
from .base import VariableTracker

CONSTANT_TYPES = (int, float, bool, str, bytes, complex, type(None), type(Ellipsis),
                  type(NotImplemented), torch.dtype, torch.device, torch.memory_format,
                  torch.layout, type)

def is_constant(value: Any) -> bool:
    return isinstance(value, CONSTANT_TYPES) or value is Ellipsis


# Classes whose instances are constants: called on constants, they are built while tracing.
FOLDED_CLASSES = {torch.finfo, torch.iinfo, torch.device}


def is_plain_user_class(cls: Any) -> bool:
    """A class written in Python whose instances are plain objects: a metaclass that does not
    change how instances are made (``type``, or ``abc.ABCMeta`` of a ``Sequence`` subclass: no
    ``__call__`` of its own), ``object.__new__``, attribute access that is object's or hooks
    written in Python (``__getattribute__``, ``__setattr__``, ``__delattr__``: the tracer inlines
    them) and no ``__getattr__``. ``Calc(5)`` of such a class is built while tracing (its
    ``__init__`` inlined); anything fancier runs natively."""
    if not isinstance(cls, type) or type(cls).__call__ is not type.__call__ \
            or cls.__module__ == "builtins":
        return False
    if cls.__module__.split(".")[0] == "torch" or issubclass(cls, BaseException):
        return False
    hooks = ("__getattribute__", "__setattr__", "__delattr__")
    plain = (cls.__new__ is object.__new__ and all(_object_or_python(cls, h) for h in hooks)
             and inspect.getattr_static(cls, "__getattr__", None) is None)
    init = inspect.getattr_static(cls, "__init__")
    return plain and (init is object.__init__ or isinstance(init, types.FunctionType))


def _object_or_python(cls: type, hook: str) -> bool:
    """Is ``cls``'s attribute hook ``object``'s own, or a function written in Python?"""
    found = inspect.getattr_static(cls, hook)
    return found is getattr(object, hook) or isinstance(found, types.FunctionType)


def python_class_method(cls: Any, name: str) -> Any:
    """``cls.name`` when it is Python code: a function, staticmethod or classmethod (the
    classmethod comes back bound to ``cls``); None otherwise."""
    if not isinstance(cls, type):
        return None
    static = inspect.getattr_static(cls, name, None)
    func = static.__func__ if isinstance(static, (staticmethod, classmethod)) else static
    return getattr(cls, name) if isinstance(func, types.FunctionType) else None


class ConstantVariable(VariableTracker):
    """A constant. One read from the frame's inputs (an argument, a dict's value) is guarded
    when the trace first reads it (``guard_on_read``: the output graph and the guard), not when
    it is wrapped: an argument, or an item of a dict argument, that the code never reads
    (``{"step": i, "lr": lr}`` of which only ``lr`` is used) is no reason to compile again when
    it changes (Dynamo's lazy trackers, ``LazyVariableTracker``). Every use of the value goes
    through ``value``, so a use the trace makes is a read that installs the guard."""

    def __init__(self, value: Any, source=None, guard_on_read: tuple | None = None):
        super().__init__(source)
        self._value, self._guard_on_read = value, guard_on_read

    @property
    def value(self) -> Any:
        if self._guard_on_read is not None:
            (output, guard), self._guard_on_read = self._guard_on_read, None
            output.add_guard(guard)
        return self._value

    def as_python_constant(self) -> Any:
        return self.value

    def is_python_constant(self) -> bool:
        return True

    def as_proxy(self) -> Any:
        """A numpy scalar (``np.float64`` subclasses float, so it is a constant here) enters
        the graph as the Python number it stands for, as torch reads it: FX writes a constant
        into the graph's code with ``repr``, and numpy's ``np.float64(5.66)`` names a module
        that code does not import (real Dynamo never makes a numpy scalar a literal)."""
        value = self.value
        return value.item() if type(value).__module__ == "numpy" else value

    def python_type(self) -> type:
        return type(self.value)

    def unpack_var_sequence(self, tx) -> list[VariableTracker]:
        """A constant string, bytes, tuple or range iterates into constants (``for c in "abc"``);
        so does a read-only view of a mapping (a Signature's ``parameters``): its keys."""
        if isinstance(self.value, (str, bytes, tuple, frozenset, range, types.MappingProxyType)):
            return [ConstantVariable(v) for v in self.value]
        return super().unpack_var_sequence(tx)

    def truth(self, tx) -> bool:
        return bool(self.value)

    def identity(self) -> Any:
        return self.value

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from .dicts import DICT_CLASS_METHODS, DICT_CLASSES, DictClassMethodVariable

        if self.value in DICT_CLASSES and name in DICT_CLASS_METHODS:  # OrderedDict.fromkeys
            return DictClassMethodVariable(self.value, name)
        # dtype.is_floating_point, device.type, (2.0).real, str.upper (a bound method, called next)
        try:
            attr = getattr(self.value, name)
        except AttributeError as e:
            raise ObservedException(e) from None
        if isinstance(attr, types.BuiltinFunctionType):  # C.__new__ is object.__new__: its
            from .builtin import HANDLERS, BuiltinVariable  # model builds the object, no fold

            if attr in HANDLERS:  # (as BuiltinVariable.var_getattr finds itertools.chain's)
                return BuiltinVariable(attr)
        if isinstance(self.value, type) and isinstance(attr, types.FunctionType):
            # a plain function of a class (``type(self).forward``) is that function: compared
            # with ``is`` (transformers' checkpointing ``forward`` asks ``type(self).forward is
            # forward_with_checkpointing``: as a bound-method stand-in it was never the same
            # object, and the layer silently ran without its wrapper's branch)
            from ..source import AttrSource
            from .builder import VariableBuilder

            source = AttrSource(self.source, name) if self.source is not None else None
            return VariableBuilder(tx, source).wrap(attr, guard=source is not None)
        # (a typing form is callable, ``typing.Union`` of ``Optional[str].__origin__``, but a
        # constant for the trace, as the builder wraps it: a dict key, compared with ``is``)
        if callable(attr) and not isinstance(attr, type) and type(attr).__module__ != "typing":
            from .misc import GetAttrVariable

            return GetAttrVariable(self, name)
        if isinstance(self.value, type) and self.source is not None:
            # a class attribute (``Config.scale``) can be reassigned between calls: read it
            # through its source, so it is guarded like any value reached from the frame
            from ..source import AttrSource
            from .builder import VariableBuilder

            return VariableBuilder(tx, AttrSource(self.source, name)).wrap(attr)
        return ConstantVariable(attr)

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        """Calling a class: namedtuples (``Pair(x, y)``), ``functools.partial`` and instances of
        plain user classes are built while tracing; ``torch.finfo(x.dtype)`` and friends fold."""
        for applies, build in CLASS_CALLS:
            if applies(self.value, args, kwargs):
                return build(tx, self.value, args, kwargs)
        if isinstance(self.value, type):
            unimplemented(f"building a {self.value.__module__}.{self.value.__qualname__} is not "
                          "traced (only plain Python classes, namedtuples, dicts, deques, "
                          "partials and stateless nn.Modules are built while tracing)")
        return super().call_function(tx, args, kwargs)

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        if not all(a.is_python_constant() for a in [*args, *kwargs.values()]):
            method = python_class_method(self.value, name)
            if method is not None:  # Calc.st(x), Calc.cm(x): inlined like any user function
                from ..source import AttrSource
                from .builder import VariableBuilder

                source = AttrSource(self.source, name) if self.source else None
                return VariableBuilder(tx, source).wrap(method).call_function(tx, args, kwargs)
            unimplemented(f"{type(self.value).__name__}.{name} with non-constant arguments")
        method = getattr(self.value, name)
        const_args = [a.as_python_constant() for a in args]
        const_kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
        from .builder import SourcelessBuilder

        return SourcelessBuilder.wrap(tx, method(*const_args, **const_kwargs))

    def reconstruct(self, codegen) -> str:
        if self.source is not None:
            return self.source.expr()
        v = self.value
        if type(v) is float and not math.isfinite(v):
            return f"float({str(v)!r})"
        return codegen.constant(v)

    def _repr_body(self) -> str:
        return repr(self._value)  # (printing a tracker is not a read that guards)


def _user_dict(tx, cls: type, args: list, kwargs: dict) -> VariableTracker:
    """``OrderedDict(...)`` / ``defaultdict(factory, ...)`` built while tracing: a dict tracker
    that remembers its class (and factory), so reading a missing key and reconstructing work."""
    from .builtin import BuiltinVariable
    from .dicts import ConstDictVariable

    factory = None
    if cls is collections.defaultdict:
        factory, args = (args[0], args[1:]) if args else (None, args)
        if isinstance(factory, ConstantVariable) and factory.value is None:
            factory = None
    plain = BuiltinVariable(dict).call_function(tx, list(args), kwargs)
    return ConstDictVariable(plain.items, user_cls=cls, default_factory=factory)


# --- calling a class while tracing ----------------------------------------------------------------

def _all_constant(args: list, kwargs: dict) -> bool:
    return all(a.is_python_constant() for a in [*args, *kwargs.values()])


def _fold_class(tx, cls, args, kwargs) -> VariableTracker:  # torch.finfo(torch.float32).eps
    return ConstantVariable(cls(*(a.as_python_constant() for a in args),
                                **{k: v.as_python_constant() for k, v in kwargs.items()}))


def _user_object(tx, cls, args, kwargs) -> VariableTracker:
    from .user_defined import UserDefinedObjectVariable

    return UserDefinedObjectVariable.construct(tx, cls, args, kwargs)


def _is_user_dict_class(cls: Any) -> bool:
    """A Python subclass of dict or OrderedDict whose instances are made as usual (metaclass
    without ``__call__``, the C base's ``__new__``) and initialised by Python code."""
    from .dicts import DICT_CLASSES

    return (isinstance(cls, type) and issubclass(cls, dict) and cls not in DICT_CLASSES
            and cls.__module__ != "builtins" and type(cls).__call__ is type.__call__
            and any(cls.__new__ is c.__new__ for c in DICT_CLASSES)
            and isinstance(inspect.getattr_static(cls, "__init__"), types.FunctionType))


def _user_dict_object(tx, cls, args, kwargs) -> VariableTracker:
    from .dicts import UserDefinedDictVariable

    return UserDefinedDictVariable.construct(tx, cls, args, kwargs)


def _null_context(tx, cls, args, kwargs) -> VariableTracker:
    from .misc import NullContextVariable

    return NullContextVariable(next(iter([*args, *kwargs.values()]), None))


def _profiler_region(tx, cls, args, kwargs) -> VariableTracker:
    """``torch.profiler.record_function(name)``: a profiler label, no computation. Like real
    Dynamo (unless ``capture_profiler_record_function``), the region is ignored in the graph:
    a ``with`` that changes nothing, so the code inside it (``Optimizer.step``) is traced."""
    from .misc import NullContextVariable

    return NullContextVariable()


# classes whose instances only label a region for the profiler
PROFILER_REGIONS = (torch.autograd.profiler.record_function, torch.profiler.record_function)


def _deque(tx, cls, args, kwargs) -> VariableTracker:
    from .deques import DequeVariable

    return DequeVariable.construct(tx, *args, **kwargs)


def _partial(tx, cls, args, kwargs) -> VariableTracker:
    from .functions import FunctoolsPartialVariable

    return FunctoolsPartialVariable(args[0], args[1:], kwargs)


def _namedtuple(tx, cls, args, kwargs) -> VariableTracker:
    from .lists import NamedTupleVariable

    bound = inspect.signature(cls).bind(*args, **kwargs)
    bound.apply_defaults()
    items = [v if isinstance(v, VariableTracker) else ConstantVariable(v)
             for v in bound.arguments.values()]
    return NamedTupleVariable(items, cls)


def _module_arg(vt: VariableTracker) -> Any:
    """A constructor argument as a real value: a constant, or a module built in this frame."""
    from .lists import BaseListVariable
    from .nn_module import NNModuleVariable

    if isinstance(vt, NNModuleVariable) and vt.source is None:
        return vt.value
    if isinstance(vt, BaseListVariable):  # nn.ModuleList([nn.ReLU(), ...])
        return vt.python_cls(_module_arg(i) for i in vt.items)
    return vt.as_python_constant()


def _new_module(tx, cls, args, kwargs) -> VariableTracker:
    """``torch.nn.ReLU()``, ``nn.Sequential(nn.Tanh(), ...)``, a user's module class with
    torch.nn's ``__init__``: built for real now, when it holds no state. With no parameters and no buffers, the instance behaves
    the same on every call, so the one built at trace time stands for the ones eager would
    build (its ``forward`` is then inlined like any module's). A module with parameters would
    start from fresh random values on every eager call: that frame runs eagerly. The RNG is
    restored afterwards, since an ``__init__`` that draws random numbers must not shift the
    ones the program draws next."""
    from .nn_module import NNModuleVariable

    try:
        real_args = [_module_arg(a) for a in args]
        real_kwargs = {k: _module_arg(v) for k, v in kwargs.items()}
    except Exception:
        unimplemented(f"building {cls.__name__} from non-constant arguments")
    with torch.random.fork_rng(devices=_devices_with_rng_state()):
        module = cls(*real_args, **real_kwargs)
    if any(True for _ in module.parameters()) or any(True for _ in module.buffers()):
        unimplemented(f"{cls.__name__} built inside the compiled function has parameters or "
                      "buffers (fresh values on every call): build it outside and pass it in")
    return NNModuleVariable(module)


def _devices_with_rng_state() -> list[int]:
    """The CUDA devices whose random state ``fork_rng`` must save and restore: the current one,
    when CUDA is in use or is the default device (a module built under
    ``torch.set_default_device("cuda")`` draws its initial values from it)."""
    in_use = torch.cuda.is_initialized() or torch.get_default_device().type == "cuda"
    return [torch.cuda.current_device()] if in_use else []


def _is_module_with_torch_init(cls: Any) -> bool:
    """An nn.Module class whose ``__init__`` is torch.nn's own (``nn.ReLU``, or a user's
    subclass that only adds ``forward``): running it at trace time only sets up the module.
    A user's ``__init__`` could do anything once per call (count instances, log), so it is
    not run early."""
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        return False
    defining = next(k for k in cls.__mro__ if "__init__" in vars(k))  # (not the function's
    return defining.__module__.startswith("torch.nn")  # module: torch._dynamo patches it)


def _is_user_exception_class(cls: Any) -> bool:
    """A Python subclass of a builtin exception whose instances are made by the builtin's C
    ``__new__`` (which stores ``args``), with at most a Python ``__init__`` on top."""
    if not (isinstance(cls, type) and issubclass(cls, BaseException)
            and cls.__module__ != "builtins" and type(cls) is type):
        return False
    def builtin_slot(name: str) -> bool:
        return next(k for k in cls.__mro__ if name in vars(k)).__module__ == "builtins"

    init = inspect.getattr_static(cls, "__init__")
    return builtin_slot("__new__") and (builtin_slot("__init__")
                                        or isinstance(init, types.FunctionType))


def _user_exception(tx, cls, args, kwargs) -> VariableTracker:
    """``MyError(1, "msg")``: the instance ``BaseException.__new__`` makes from the constant
    arguments (its ``args``), with a Python ``__init__`` inlined into its attributes, as a
    plain user object's is."""
    from .functions import UserMethodVariable
    from .user_defined import UserDefinedObjectVariable

    real_args = tuple(a.as_python_constant() for a in args)
    # ``args`` kept with the attributes: the object is rebuilt from them if it escapes the frame
    obj = UserDefinedObjectVariable(cls.__new__(cls, *real_args), None,
                                    attrs={"args": ConstantVariable(real_args)})
    init = inspect.getattr_static(cls, "__init__")
    if isinstance(init, types.FunctionType):
        UserMethodVariable(init, obj).call_function(tx, args, kwargs)
    elif kwargs:
        unimplemented(f"{cls.__name__}() takes no keyword arguments")
    return obj


def _is_namedtuple_class(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")


# (does this row build ``cls(*args, **kwargs)``?, how): the first row that applies builds it;
# any other class call is unsupported (VariableTracker.call_function says why)
CLASS_CALLS = [
    (lambda cls, args, kwargs: cls in FOLDED_CLASSES and _all_constant(args, kwargs), _fold_class),
    (lambda cls, args, kwargs: cls is contextlib.nullcontext and len(args) + len(kwargs) <= 1,
     _null_context),
    (lambda cls, args, kwargs: cls in PROFILER_REGIONS, _profiler_region),
    (lambda cls, args, kwargs: cls in (collections.OrderedDict, collections.defaultdict),
     _user_dict),
    (lambda cls, args, kwargs: cls is functools.partial and bool(args), _partial),
    (lambda cls, args, kwargs: cls is collections.deque, _deque),
    (lambda cls, args, kwargs: _is_namedtuple_class(cls), _namedtuple),
    (lambda cls, args, kwargs: _is_module_with_torch_init(cls), _new_module),
    (lambda cls, args, kwargs: _is_user_dict_class(cls), _user_dict_object),
    (lambda cls, args, kwargs: _is_user_exception_class(cls) and _all_constant(args, kwargs),
     _user_exception),
    # last: the classes above are plain by this test too (nullcontext's metaclass is ABCMeta)
    (lambda cls, args, kwargs: is_plain_user_class(cls), _user_object),
]
