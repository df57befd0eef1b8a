"""Cases ported from pytorch/pytorch ``test/dynamo/test_subclasses.py`` (``SubclassTests``, the
``__torch_function__`` part): tensor subclasses as inputs, made inside the function, and
overriding ops, methods and attributes, and the ``torch._C`` switches that turn
``__torch_function__`` off. Real Dynamo traces a subclass's ``__torch_function__``; minicompile
runs the code that touches one natively, so these cases check it still gives eager's result.
The subclasses a test defines locally are module-level here: eager and the compiled call must
return instances of one class."""

from __future__ import annotations

import torch
import torch.utils._pytree as pytree

from . import case_registrar

case = case_registrar("test/dynamo/test_subclasses.py")
# a tensor subclass with its own __torch_function__ or methods (tensor.py: plain_tensor_class)
subclass_case = case_registrar(
    "test/dynamo/test_subclasses.py",
    runs_natively="a __torch_function__ override (of a tensor subclass or an object) is not "
    "traced: the code that reaches it runs natively")


class BaseTorchFunction(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs)


class MockSubclass(BaseTorchFunction):  # (the test's has the same body)
    pass


class AttrSubclass(torch.Tensor):
    x: int = 10
    size: int = 10

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs)


class DummyNDim(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func == torch.Tensor.ndim.__get__:
            return 10
        return super().__torch_function__(func, types, args, kwargs)


class WrapperSubclass:
    def __init__(self, tensor):
        self.tensor = tensor

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        args = pytree.tree_map_only(WrapperSubclass, lambda x: x.tensor, args)
        kwargs = pytree.tree_map_only(WrapperSubclass, lambda x: x.tensor, kwargs)
        return func(*args, **kwargs)


class SigmoidToExpSubclass(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func == torch.Tensor.sigmoid:
            return super().__torch_function__(torch.Tensor.exp, types, args, kwargs)
        return super().__torch_function__(func, types, args, kwargs)


class BadNewTorchFunction(torch.Tensor):
    def __new__(cls, *args, **kwargs):
        raise RuntimeError("Oops!")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        return super().__torch_function__(func, types, args, kwargs)


class AddDoubling(torch.Tensor):  # test_torch_function_reentrant_dispatch's ScaledTensor
    @staticmethod
    def __new__(cls, data):
        return torch.Tensor._make_subclass(cls, data)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        raw = super().__torch_function__(func, types, args, kwargs)
        if isinstance(raw, torch.Tensor) and func is torch.add:
            return raw * 2.0
        return raw


class AddToSub(torch.Tensor):  # test_torch_function_call_on_method_arg's LocalSubclass
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func == torch._C.TensorBase.add_:
            func = torch._C.TensorBase.sub_
        if kwargs is None:
            kwargs = {}
        return super().__torch_function__(func, types, args, kwargs)

    def sigmoid(self):
        return None


class NDimProperty(torch.Tensor):  # test_user_overridden_property_unsupported's LocalSubclass
    def __init__(self, *args, **kwargs) -> None:
        self._ndim = 10

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs)

    @property
    def ndim(self):
        return self._ndim


class CloneDoubling(torch.Tensor):  # test_no_torch_function_on_size_bytecode's TestTensor
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **kwargs)
            if func == torch.clone:
                return out * 2
            return out


class NonClassmethodTorchFunction(torch.Tensor):
    def __torch_function__(self, func, types, args, kwargs=None):
        if kwargs is None:
            kwargs = {}
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)


class PlainSubclass(torch.Tensor):  # test_make_subclass's MySubclass
    pass


class ToTimesLen(torch.Tensor):  # test_subclass_dont_invoke_torch_function_on_overridden_method
    def to(self, device):
        return self * len(device)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs)


class NDimMethod(torch.Tensor):  # test_subclass_dont_invoke_torch_function_on_overridden_attr
    def ndim(self):
        return 42

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs)


class ParameterSubclass(torch.nn.Parameter):  # test_parameter_subclass_with_old_torch_function
    pass


class DisabledSubclass(torch.Tensor):  # test_subclass_with_disabled_torch_function
    __torch_function__ = torch._C._disabled_torch_function_impl


class SimpleTFTensor(torch.Tensor):  # test_redispatch_function_with_dynamo
    @classmethod
    def __torch_function__(cls, func, types, args, kwargs=None):
        if kwargs is None:
            kwargs = {}
        return torch.overrides.redispatch_function(func, types, args, kwargs)


def ones_as(cls):
    return lambda: (torch.ones(2, 2).as_subclass(cls),)


@subclass_case(args=ones_as(BadNewTorchFunction))
def no_call_to_new(x):
    return torch.add(x, 1)


@subclass_case(args=ones_as(BaseTorchFunction))
def base_torch_function_tracing(x):
    return torch.add(x, 1)


@subclass_case(args=lambda: (AddDoubling(torch.tensor([1.0, 2.0])), AddDoubling(torch.tensor([3.0, 4.0]))))
def torch_function_reentrant_dispatch(a, b):
    return torch.add(a, b)


@case(args=lambda: (torch.ones(2, 2),))
def torch_function_state_tracing(x):
    with torch._C.DisableTorchFunctionSubclass():
        return torch.add(x, 1.0)


@case(args=lambda: (torch.ones(2, 2),))
def torch_function_state_nested(x):
    with torch._C.DisableTorchFunctionSubclass():
        with torch._C.DisableTorchFunctionSubclass():
            x = x + 1
        return torch._C._is_torch_function_enabled(), torch.add(x, 1.0)


@case(args=lambda: (torch.ones(2, 2),))
def disable_all_torch_function_restore_values(x):
    with torch._C.DisableTorchFunction():
        x = torch._C._is_torch_function_all_disabled()
    return x, torch._C._is_torch_function_all_disabled(), torch.add(x, 1.0)


@subclass_case(args=lambda: (torch.ones(2, 2),))
def return_subclass(x):
    return MockSubclass(torch.add(x, 1.0)) * 2


@subclass_case(args=lambda: (torch.ones(2, 2),))
def return_as_subclass(x):
    return torch.add(x, 1.0).as_subclass(MockSubclass) * 2


def _type_check(comparison):
    def fn(x):
        if comparison(x, DummyNDim):
            return torch.ones(1, 1)
        return torch.zeros(2, 2)
    return fn


@case(args=ones_as(torch.Tensor))
def type_check_isinstance_tensor(x):
    return _type_check(isinstance)(x)


@subclass_case(args=ones_as(DummyNDim))
def type_check_isinstance_subclass(x):
    return _type_check(isinstance)(x)


@case(args=ones_as(torch.Tensor))
def type_check_identity_tensor(x):
    return _type_check(lambda i, t: type(i) is t)(x)


@subclass_case(args=ones_as(DummyNDim))
def type_check_identity_subclass(x):
    return _type_check(lambda i, t: type(i) is t)(x)


@subclass_case(args=ones_as(SigmoidToExpSubclass))
def torch_function_call_on_method(w):
    return w.exp(), w.sigmoid()


@subclass_case(args=lambda: (torch.ones(2, 2), torch.ones(2, 2).as_subclass(AddToSub)))
def torch_function_call_on_method_arg(a, w):
    a.add_(w)
    return a


@subclass_case(args=ones_as(AddToSub))
def user_overridden_method_unsupported(x):
    return x.sigmoid()


@subclass_case(args=lambda: (NDimProperty(torch.ones(2, 2)),))
def user_overridden_property_unsupported(x):
    return x + x.ndim


@subclass_case(args=ones_as(DummyNDim))
def torch_function_call_on_attr(w):
    return w.ndim + torch.ones(2)


@subclass_case(args=lambda: (WrapperSubclass(torch.ones(2, 2)),))
def torch_function_wrapper_class(w):
    return torch.add(w, 1.0)


@subclass_case(args=lambda: (WrapperSubclass(torch.ones(2, 2)),))
def torch_function_wrapper_class_with_kwargs(w):
    return torch.add(w, 1.0, alpha=2.0)


@subclass_case(args=lambda: (torch.ones(4, 4).as_subclass(CloneDoubling),))
def no_torch_function_on_size_bytecode(x):
    return torch.clone(x)


@subclass_case(args=lambda: (torch.randn(2, 2).as_subclass(NonClassmethodTorchFunction),))
def tensor_subclass_with_non_classmethod_torch_function(x):
    return x + 1


@subclass_case(args=ones_as(AttrSubclass))
def tensor_subclass_custom_attr(x):
    return x.x + torch.ones(2, 2)


@subclass_case(args=lambda: (torch.randn(2, 2),))
def make_subclass(x):
    y = torch.Tensor._make_subclass(PlainSubclass, x)
    z = torch.Tensor._make_subclass(torch.Tensor, x)
    x += 1
    y += 2
    z += 3
    return x * y + z, x


@subclass_case(args=lambda: (torch.nn.Parameter(torch.randn(2, 2).as_subclass(ToTimesLen)),))
def subclass_dont_invoke_torch_function_on_overridden_method(x):
    return x.to("cpu")


@subclass_case(args=lambda: (torch.nn.Parameter(torch.randn(2, 2).as_subclass(NDimMethod)),))
def subclass_dont_invoke_torch_function_on_overridden_attr(x):
    return x + x.ndim()


@case(args=lambda: (torch.randn(2, 2).as_subclass(ParameterSubclass),))
def parameter_subclass_with_old_torch_function(x):
    x = x.t()
    x = x.T
    return x + 1


@case(args=lambda: (torch.randn(2, 2).as_subclass(DisabledSubclass),))
def subclass_with_disabled_torch_function(x):
    x = x.t()
    x = x.T
    return x + 1


def _my_func(a, b):
    if torch.overrides.has_torch_function((a, b)):
        return torch.overrides.handle_torch_function(_my_func, (a, b), a, b)
    return a + b


@subclass_case(args=lambda: (torch.tensor([1.0]).as_subclass(SimpleTFTensor),
                    torch.tensor([2.0]).as_subclass(SimpleTFTensor)))
def redispatch_function_with_dynamo(x, y):
    return _my_func(x, y)


@subclass_case(args=lambda: (torch.ones(3).as_subclass(PlainSubclass),))
def tensor_subclass_unpack(x):
    return list(x)


@subclass_case(args=lambda: (torch.randn(3).as_subclass(MockSubclass), torch.randn(3)))
def subclass_mixed_with_plain(x, y):
    return (x + y).sum(), type(y * 2).__name__
