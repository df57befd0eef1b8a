"""TensorVariable: a tensor inside the graph (mirrors torch/_dynamo/variables/tensor.py).

It holds an FX proxy (the node that computes it) and an example value: a FakeTensor with the
right shape, dtype, device and requires_grad but no data, computed by running every op on fake
tensors as it is traced. Metadata questions (``x.shape``, ``x.dtype``, ``x.dim()``) are answered
from the example value at trace time and become constants; everything else becomes a node.
Questions about the *data* (``x.item()``, ``if x.sum() > 0``) cannot be answered: Unsupported.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor

from ..exc import Unsupported, unimplemented
from ..side_effects import TensorHook
from ..source import AttrSource, CallMethodSource
from .base import VariableTracker
from .constant import ConstantVariable
from .hooks import RemovableHandleVariable, register_hook_in_graph
from .symnode import wrap_tensor_metadata

# Attributes answered from the example value (the value is baked into the graph, and guarded
# through the input's TENSOR_MATCH guard: dtype, device, shape, requires_grad).
METADATA_ATTRS = {"dtype", "device", "ndim", "is_cuda", "requires_grad", "layout", "is_sparse",
                  "is_quantized", "is_meta", "is_leaf", "is_nested", "itemsize"}
METADATA_METHODS = {"dim", "ndimension", "numel", "nelement", "stride", "is_contiguous",
                    "element_size", "is_floating_point", "is_complex", "get_device", "size",
                    "is_signed"}
# Attributes that are really ops: they become ``getattr(x, "T")`` nodes.
VIEW_ATTRS = {"T", "mT", "H", "mH", "real", "imag"}
# Methods that need the data or leave the graph world: graph breaks, each with its reason.
_NEEDS_DATA = "needs the tensor's data, which tracing does not have"
_NEEDS_AUTOGRAD = ("attaches to the real tensor's autograd node, which a graph's tensor does "
                   "not have (real Dynamo wraps such a hook in a traced autograd.Function)")
DATA_METHODS: dict[str, str] = {
    **{name: _NEEDS_DATA for name in (
        "item", "tolist", "numpy", "data_ptr", "backward", "__bool__", "__int__", "__float__",
        "__index__", "storage", "untyped_storage", "__array__")},
    "retain_grad": _NEEDS_AUTOGRAD,
}
# Hooks registered on the tensor (see TensorVariable.method_register_hook)
HOOK_METHODS = ("register_hook", "register_post_accumulate_grad_hook")


# What a class may hold and still behave as torch.Tensor: the names every class has.
_PLAIN_CLASS_NAMES = {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__",
                      "__firstlineno__", "__static_attributes__", "__annotations__",
                      "__torch_function__"}


def plain_tensor_class(cls: type) -> bool:
    """Whether a tensor of class ``cls`` can be traced as a plain tensor (real Dynamo's
    ``TensorVariable``, with its class kept for ``type(x)`` and checked by TENSOR_MATCH):
    torch.Tensor, and a subclass that switches ``__torch_function__`` off
    (``torch._C._disabled_torch_function_impl``, as ``nn.Parameter`` does: an op on it is the
    plain op and returns a plain tensor) and adds nothing else (no method, no
    ``__torch_dispatch__``). Any other subclass runs Python code on every op (its
    ``__torch_function__``), or returns tensors of its own class: traced as a plain tensor,
    it would give a plain op's result."""
    if cls in (torch.Tensor, torch.nn.Parameter, FakeTensor):  # (FakeTensor: as real Dynamo)
        return True
    base = torch.nn.Parameter if issubclass(cls, torch.nn.Parameter) else torch.Tensor
    return cls.__torch_function__ is torch._C._disabled_torch_function_impl and \
        _adds_nothing(cls, base)


def _adds_nothing(cls: type, base: type) -> bool:
    return all(set(vars(k)) <= _PLAIN_CLASS_NAMES
               for k in cls.__mro__[:cls.__mro__.index(base)])


def check_plain_tensor(value: torch.Tensor) -> None:
    """Unsupported for a tensor of a class that is not traced as torch.Tensor (above)."""
    cls = type(value)
    if not plain_tensor_class(cls):
        unimplemented(f"a tensor subclass ({cls.__qualname__}): its ops run its own Python "
                      f"code (__torch_function__, or methods of its class) and return "
                      f"{cls.__qualname__} tensors, which a graph of plain tensor ops does not "
                      f"capture, so this code runs natively")


class TensorVariable(VariableTracker):
    def __init__(self, proxy: torch.fx.Proxy, example_value: torch.Tensor, source=None,
                 class_type: type = torch.Tensor):
        super().__init__(source)
        self.proxy, self.example_value, self.class_type = proxy, example_value, class_type
        # a module's parameter or buffer (a ``get_attr`` node, no source as a frame input):
        # the real tensor and where it was read from, for what tracing asks of the real one
        self.attribute: tuple[torch.Tensor, Any] | None = None

    def python_type(self) -> type:
        return self.class_type

    def as_proxy(self) -> torch.fx.Proxy:
        return self.proxy

    def as_fake(self) -> torch.Tensor:
        return self.example_value

    def is_python_constant(self) -> bool:
        return False

    def identity(self) -> Any:
        """The fake tensor stands for the real one object for object: the same input under
        two names is one fake, and an op that returns its input (``x.add_(1)``,
        ``x.contiguous()`` of a contiguous ``x``) returns its fake, as eager returns ``x``."""
        return self.example_value

    def truth(self, tx) -> bool:
        unimplemented("data-dependent branching: the truth value of a tensor depends on its data "
                      "(use torch.where, or branch on shape/dtype instead)")

    @property
    def size(self) -> tuple:
        return tuple(self.example_value.shape)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from .builder import SourcelessBuilder
        from .misc import GetAttrVariable

        if name == "shape":
            return (wrap_tensor_metadata(tx, self, "size", [], self.example_value.shape)
                    or SourcelessBuilder.wrap(tx, self.example_value.shape))
        if name in METADATA_ATTRS:
            if name == "is_leaf" and self.source is not None:  # not part of TENSOR_MATCH
                self._guard_answer(tx, AttrSource(self.source, name), self.example_value.is_leaf)
            return SourcelessBuilder.wrap(tx, getattr(self.example_value, name))
        if name in VIEW_ATTRS:
            return call_op(tx, "call_function", getattr, [self, ConstantVariable(name)], {})
        if name == "__class__":  # x.__class__.__name__; the type is part of TENSOR_MATCH
            return ConstantVariable(self.python_type())
        if name == "grad":
            return self._grad(tx)
        if name in ("data", "_version", "grad_fn", "__dict__"):
            unimplemented(f"tensor attribute .{name} is not captured")
        if callable(getattr(torch.Tensor, name, None)):
            return GetAttrVariable(self, name)
        stored = tx.output.side_effects.load_attr(self.identity(), name)
        if stored is not None:  # x.y = y earlier in the trace (store_attr)
            return stored
        real = self._input_value(tx)
        if real is not None and name in vars(real):  # a Python attribute the tensor holds
            from .builder import VariableBuilder

            return VariableBuilder(tx, AttrSource(self.source, name)).wrap(vars(real)[name])
        unimplemented(f"tensor attribute .{name}")

    def _input_value(self, tx) -> torch.Tensor | None:
        """The real tensor this input stands for (None: one the graph makes)."""
        if self.source is None:
            return None
        return next((gi.example for gi in tx.output.graph_inputs
                     if gi.proxy.node.meta.get("example_value") is self.example_value), None)

    def store_attr(self, tx, name: str, value: VariableTracker) -> None:
        """``x.name = value`` where torch.Tensor has no such attribute (``t.y = y``: a Python
        attribute, kept in the tensor's ``__dict__``), on a tensor from outside the frame: a
        side effect, replayed after the graph, that later reads in the trace see (as real
        Dynamo tracks it). Tensor attributes of torch's (``.data``, ``.grad``) and tensors the
        graph makes are not modelled."""
        if hasattr(torch.Tensor, name) or self.source is None:
            unimplemented(f"assigning attribute {name!r} of {self}")
        tx.output.side_effects.store_attr(self, self.identity(), name, value)

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        from .builder import SourcelessBuilder

        if name == "numpy":
            unimplemented("Tensor.numpy(): numpy code on tensors is not traced (real Dynamo "
                          "traces it through torch._numpy)")
        if name in DATA_METHODS:
            self._break(f"Tensor.{name}() {DATA_METHODS[name]}", DATA_METHODS[name])
        if name in HOOK_METHODS and len(args) + len(kwargs) == 1 and set(kwargs) <= {"hook"}:
            return self.method_register_hook(tx, name, args[0] if args else kwargs["hook"])
        if name == "requires_grad_" and not self.example_value.requires_grad and \
                _turns_grad_on(args, kwargs):
            # A graph's outputs carry autograd history only from inputs that already required
            # grad, so a tensor made a leaf inside it would reach .backward() without a
            # grad_fn: the call runs natively between two graphs (real Dynamo breaks too).
            unimplemented("Tensor.requires_grad_() turning gradients on inside the graph")
        if name in METADATA_METHODS:
            cargs = [a.as_python_constant() for a in args]
            ckwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
            value = getattr(self.example_value, name)(*cargs, **ckwargs)
            return (wrap_tensor_metadata(tx, self, name, cargs, value)  # symbolic sizes
                    or SourcelessBuilder.wrap(tx, value))
        if name == "storage_offset" and not args and not kwargs:
            # The answer follows the inputs' offsets (a view of a view...): guard them all.
            for gi in tx.output.graph_inputs:
                if isinstance(gi.example, torch.Tensor):
                    self._guard_answer(tx, CallMethodSource(gi.source, name),
                                       gi.example.storage_offset())
            return ConstantVariable(self.example_value.storage_offset())
        if name == "type" and not args and not kwargs:  # x.type() -> 'torch.FloatTensor'
            return ConstantVariable(self.example_value.type())
        if name == "__getitem__":
            return call_op(tx, "call_function", operator.getitem, [self, *args], {})
        if name == "__setitem__":  # in place: the node is kept although nothing uses its value
            call_op(tx, "call_function", operator.setitem, [self, *args], {})
            return ConstantVariable(None)
        if name == "__len__" and self.example_value.dim() > 0:  # len(x) is x.size(0): symbolic
            return self.call_method(tx, "size", [ConstantVariable(0)], {})  # where that is
        if name == "__len__":  # of a 0-d tensor: eager's TypeError
            return ConstantVariable(len(self.example_value))
        if name in SCALED_UPDATES and isinstance(kwargs.get("value"), TensorVariable):
            return scaled_update(tx, SCALED_UPDATES[name], self, *args, **kwargs)
        if name in SCALED_OPERANDS and isinstance(kwargs.get("alpha"), TensorVariable):
            scaled = call_op(tx, "call_function", operator.mul, [args[0], kwargs["alpha"]], {})
            return call_op(tx, "call_method", name, [self, scaled], {})
        refuse_tensor_numbers(f"Tensor.{name}", kwargs)
        return call_op(tx, "call_method", name, [self, *args], kwargs)

    def _break(self, reason: str, kind: str) -> None:
        error = Unsupported(reason)
        if kind is _NEEDS_AUTOGRAD and self.proxy.node.op != "placeholder" \
                and self.proxy.node.users:
            # the graph before a break would have used the tensor already: its gradient
            # from those uses flows inside the compiled graph's backward, past the hook (or
            # the retained .grad) attached to the graph's output
            error.whole_frame = "a hook on a tensor the graph has used already"
        raise error

    def method_register_hook(self, tx, name: str, hook: VariableTracker) -> VariableTracker:
        """``x.register_hook(fn)`` (real Dynamo's ``_method_register_hook``). On a tensor from
        outside the frame (an input, a parameter), the caller's real tensor gets the hook: the
        registration is a side effect, replayed after the graph. A tensor the graph makes has
        no autograd node outside it: a graph node registers the traced hook on it when the
        graph runs (hooks.py). (``register_post_accumulate_grad_hook``: a leaf's, so from
        outside the frame.)"""
        if not self.example_value.requires_grad:  # eager raises: it runs natively, and does
            unimplemented(f"Tensor.{name}() on a tensor that does not require grad")
        source = self.source or (self.attribute and self.attribute[1])
        if source is None and name != "register_hook":
            self._break(f"Tensor.{name}() {_NEEDS_AUTOGRAD}", _NEEDS_AUTOGRAD)
        if source is None:  # traced into the graph
            try:
                return register_hook_in_graph(tx, self, hook)
            except Unsupported as e:  # registered natively, at a break (after the graph)
                where = f" (at {e.user_line})" if e.user_line else ""
                self._break(f"Tensor.register_hook(): {e.reason}{where}", _NEEDS_AUTOGRAD)
        handle = RemovableHandleVariable()
        handle.idx = tx.output.side_effects.register_hook(TensorHook(source, name, hook, handle))
        return handle

    def _grad(self, tx) -> VariableTracker:
        """``x.grad`` of an input or of a module's parameter: its gradient, itself an input of
        the graph read from the same place (real Dynamo's ``GradSource``: an optimizer step
        reads ``p.grad``), or None when it has none yet (guarded: a backward pass in between
        fills it and recompiles); of a tensor the graph computes (not a leaf of the user's
        autograd graph), None."""
        if self.attribute is not None:
            real, source = self.attribute
            if source is None:
                unimplemented("tensor attribute .grad of a module tensor with no source")
        elif self.source is None:
            return ConstantVariable(None)
        else:
            real, source = next((gi.example for gi in tx.output.graph_inputs
                                 if gi.source == self.source), None), self.source
            if real is None:
                unimplemented("tensor attribute .grad of a tensor that is not a graph input")
        if real.grad is not None:
            from .builder import VariableBuilder

            return VariableBuilder(tx, AttrSource(source, "grad")).wrap(real.grad)
        self._guard_answer(tx, AttrSource(source, "grad"), None)
        return ConstantVariable(None)

    @staticmethod
    def _guard_answer(tx, source, value) -> None:
        """A metadata answer TENSOR_MATCH does not cover is baked in: guard it by value."""
        from ..guards import Guard, GuardKind

        tx.output.add_guard(Guard(source, GuardKind.EQUALS_MATCH, value, tx.user_line()))

    def unpack_var_sequence(self, tx) -> list[VariableTracker]:
        if self.example_value.dim() == 0:
            unimplemented("iterating over a 0-d tensor")
        return [call_op(tx, "call_function", operator.getitem, [self, ConstantVariable(i)], {})
                for i in range(self.size[0])]

    def reconstruct(self, codegen) -> str:
        if self.source is not None:  # an input returned as it is keeps its identity
            return self.source.expr()
        return codegen.graph_output(self)

    def _repr_body(self) -> str:
        v = self.example_value
        return f"{self.proxy.node.name}: {str(v.dtype).replace('torch.', '')}{list(v.shape)}"


# ``x.addcdiv_(a, b, value=v)`` takes a number; the traced Adam passes a 0-d tensor (its step
# size, computed from the step counter in the graph: eager reads it with ``.item()``). Real
# Dynamo rewrites the call into tensor ops (tensor.py's ``method_addcdiv_``), and so does this:
# ``x.copy_(x + (a / b) * v)``. in-place method -> the op combining its two tensors
SCALED_UPDATES = {"addcdiv_": operator.truediv, "addcmul_": operator.mul}
# ``x.add_(y, alpha=lr)`` with a tensor lr (SGD given ``lr=torch.tensor(0.1)``): ``x.add_(y * lr)``
SCALED_OPERANDS = {"add", "add_", "sub", "sub_"}


def refuse_tensor_numbers(fn: Any, kwargs: dict[str, VariableTracker]) -> None:
    """A tensor where an op takes a number (``alpha=``, ``value=``) is read with ``.item()``
    by eager: data the graph does not have (unless rewritten above), so the call breaks."""
    if any(isinstance(kwargs.get(k), TensorVariable) for k in ("alpha", "value")):
        unimplemented(f"{getattr(fn, '__name__', fn)} with a tensor where it takes a number "
                      "(alpha=/value=): the number is the tensor's data")


def scaled_update(tx, combine: Any, x: TensorVariable, a: VariableTracker, b: VariableTracker,
                  value: VariableTracker) -> VariableTracker:
    term = call_op(tx, "call_function", combine, [a, b], {})
    scaled = call_op(tx, "call_function", operator.mul, [term, value], {})
    updated = call_op(tx, "call_function", operator.add, [x, scaled], {})
    return call_op(tx, "call_method", "copy_", [x, updated], {})


def call_op(tx, kind: str, target: Any, args: list[VariableTracker],
            kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """Add one node to the graph: compute its example value on fake tensors, then wrap it.

    The single place where traced ops enter the graph (real Dynamo: ``wrap_fx_proxy``)."""
    from .builder import wrap_fx_proxy

    output = tx.output
    out = kwargs.get("out")
    before = out.size if isinstance(out, TensorVariable) else None
    example = output.run_fake(kind, target, [a.as_fake() for a in args],
                              {k: v.as_fake() for k, v in kwargs.items()})
    if before is not None and out.size != before:  # (the fake is resized: this trace is over)
        unimplemented(f"{getattr(target, '__name__', target)}(..., out=) resizes its out tensor "
                      f"({list(before)} -> {list(out.size)}): the call runs natively")
    proxy = output.create_proxy(kind, target, tuple(a.as_proxy() for a in args),
                                {k: v.as_proxy() for k, v in kwargs.items()})
    return wrap_fx_proxy(tx, proxy, example)


def _turns_grad_on(args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> bool:
    """``requires_grad_()`` / ``requires_grad_(True)``: its flag, unless it is not a constant."""
    flag = args[0] if args else kwargs.get("requires_grad")
    if flag is None:
        return True
    return not flag.is_python_constant() or bool(flag.as_python_constant())
