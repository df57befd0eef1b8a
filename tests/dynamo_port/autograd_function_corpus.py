"""Cases ported from pytorch/pytorch ``test/dynamo/test_autograd_function.py``: user-defined
``torch.autograd.Function``s (``ctx.save_for_backward``, attributes on ``ctx``,
``mark_non_differentiable``, ``mark_dirty``, ``needs_input_grad``, ``once_differentiable``, the
``setup_context`` split, non-tensor inputs and outputs, Functions inside modules and under
``torch.vmap``), re-typed and adapted. Most cases carry ``grads=True``: the harness also runs the
backward and compares the arguments' gradients with eager's, which the tests check by hand. The
checks of Dynamo's own graphs, counters and ``fullgraph`` errors are left out."""

from __future__ import annotations

import contextlib
import enum
import functools
import math
from dataclasses import dataclass

import torch
from torch.autograd.function import once_differentiable

from . import case_registrar

case = case_registrar("test/dynamo/test_autograd_function.py")


def leaf(*shape, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype, requires_grad=True)


def one_leaf(*shape, dtype=torch.float32):
    return lambda: (leaf(*shape, dtype=dtype),)


# --- the module-level Functions and modules of the test file -------------------------------------

class CustomFunc1(torch.autograd.Function):
    @staticmethod
    def forward(ctx, foo):
        return foo + foo

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class CustomFunc3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, foo):  # a graph break in forward
        result = foo + foo
        torch._dynamo.graph_break()
        result = result + foo
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * math.sqrt(result.numel())


class InstanceApply(torch.nn.Module):  # Module1 / Module3
    def forward(self, foo):
        return CustomFunc1().apply(foo)


class StoredApply(torch.nn.Module):  # Module2 / Module4
    def __init__(self):
        super().__init__()
        self.fn = CustomFunc1.apply

    def forward(self, foo):
        return self.fn(foo)


class BreakInstanceApply(torch.nn.Module):  # Module5
    def forward(self, foo):
        return CustomFunc3().apply(foo)


class BreakStoredApply(torch.nn.Module):  # Module6
    def __init__(self):
        super().__init__()
        self.fn = CustomFunc3.apply

    def forward(self, foo):
        return self.fn(foo)


class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(input, weight, bias):
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def setup_context(ctx, inputs, output):
        input, weight, bias = inputs
        ctx.save_for_backward(input, weight, bias)

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class ModuleLinear(torch.nn.Module):
    def forward(self, input, weight, bias=None):
        return LinearFunction.apply(input, weight, bias)


class MaterializingGradFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x.clone(), x.clone()

    @staticmethod
    def backward(ctx, grad_out1, grad_out2):
        return grad_out1, grad_out2


class CustomFuncBwdPrint(torch.autograd.Function):
    @staticmethod
    def forward(ctx, foo):
        return torch.add(foo, foo)

    @staticmethod
    def backward(ctx, grad_output):
        print("backward of CustomFuncBwdPrint")
        return grad_output


class CustomFuncStrideBwd(torch.autograd.Function):
    @staticmethod
    def forward(ctx, foo):
        return torch.add(foo, foo)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * grad_output.stride()[-1]


class CustomFuncSaveForBwd(torch.autograd.Function):
    @staticmethod
    def forward(ctx, foo):
        result = foo + foo
        result = result + foo
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * math.sqrt(result.numel())


class ContextSaveAndMark(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        with torch.no_grad():
            ctx.save_for_backward(x)
            ctx.mark_non_differentiable(x)
            return x

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class ContextMarkAndSave(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        with torch.no_grad():
            ctx.mark_non_differentiable(x)
            ctx.save_for_backward(x)
            return x

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class ModuleWithGradFunc(torch.nn.Module):
    def __init__(self, func):
        super().__init__()
        self.f = func.apply

    def forward(self, x):
        return self.f(x)


# --- Functions inside modules ----------------------------------------------------------------------

@case(args=lambda: (torch.ones(2, 3, requires_grad=True),), grads=True)
def module_instance_apply(x):
    return InstanceApply()(x)


@case(args=lambda: (torch.ones(2, 3),))
def module_instance_apply_no_grad(x):
    return InstanceApply()(x)


@case(args=lambda: (torch.ones(2, 3, requires_grad=True),), grads=True)
def module_stored_apply(x):
    return StoredApply()(x)


@case(args=lambda: (torch.ones(2, 3),))
def module_stored_apply_no_grad(x):
    return StoredApply()(x)


@case(args=one_leaf(10), grads=True)
def graph_break_in_forward_instance(x):
    return BreakInstanceApply()(x)


@case(args=lambda: (torch.randn(10),))
def graph_break_in_forward_no_grad(x):
    return BreakInstanceApply()(x)


@case(args=one_leaf(10), grads=True)
def graph_break_in_forward_stored(x):
    return BreakStoredApply()(x)


@case(args=lambda: (leaf(2, 2, dtype=torch.double), leaf(3, 2, dtype=torch.double)),
      grads=True)
def linear_setup_context(input, weight):
    return ModuleLinear()(input, weight)


@case(args=lambda: (leaf(2, 2), leaf(3, 2), leaf(3)), grads=True)
def linear_setup_context_bias(input, weight, bias):
    return ModuleLinear()(input, weight, bias)


@case(args=lambda: (leaf(2, 2), torch.randn(3, 2), leaf(3)), grads=True)
def linear_needs_input_grad_partial(input, weight, bias):
    return ModuleLinear()(input, weight, bias)


@case(args=lambda: (leaf(2, 2, dtype=torch.double),))
def materialize_grad(x):
    return MaterializingGradFunction.apply(x)


@case(args=lambda: (leaf(2, 2, dtype=torch.double),), grads=True)
def materialize_grad_one_output_used(x):
    return MaterializingGradFunction.apply(x)[0] * 2


@case(args=lambda: (leaf(2, 2, dtype=torch.double),), grads=True)
def print_in_backward(x):
    return CustomFuncBwdPrint.apply(x)


@case(args=lambda: (leaf(2, 2, dtype=torch.double),), grads=True)
def stride_in_backward(x):
    return CustomFuncStrideBwd.apply(x)


@case(args=lambda: (leaf(2, 2, dtype=torch.double),), grads=True)
def save_for_backward_module(x):
    return ModuleWithGradFunc(CustomFuncSaveForBwd)(x)


@case(args=lambda: (torch.rand([1]),))
def context_save_and_mark(x):
    return ModuleWithGradFunc(ContextSaveAndMark)(x)


@case(args=lambda: (torch.rand([1]),))
def context_mark_and_save(x):
    return ModuleWithGradFunc(ContextMarkAndSave)(x)


@case(args=lambda: (torch.rand([3], requires_grad=True) * 1,))
def context_save_and_mark_requires_grad(x):
    return ModuleWithGradFunc(ContextSaveAndMark)(x) + 1


# --- AutogradFunctionTests ----------------------------------------------------------------------

class CtxScale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.scale = 3
        return x.sin()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.scale


@case(args=one_leaf(3), grads=True)
def function_ctx_attribute(x):
    return CtxScale.apply(x)


class SomeEnum(enum.Enum):
    A = 0
    B = 1


class EnumArg(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, e):
        if e is SomeEnum.A:
            return x.sin()
        return x.cos()

    @staticmethod
    def backward(ctx, g):
        return g, None


@case(args=lambda: (torch.tensor([[1.0, 2, 3], [4, 5, 6]], requires_grad=True), SomeEnum.A),
      grads=True)
def enum_arg(x, e):
    return EnumArg.apply(x, e)


@case(args=lambda: (torch.tensor([[1.0, 2, 3], [4, 5, 6]], requires_grad=True), SomeEnum.B),
      grads=True)
def enum_arg_other_member(x, e):
    return EnumArg.apply(x, e)


@torch._dynamo.allow_in_graph
class AllowInGraphFunc(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        torch._dynamo.graph_break()
        ctx.x0 = x.size(0)
        return x * 2

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out * ctx.x0


@case(args=lambda: (torch.rand(2, 3, requires_grad=True),), grads=True)
def allow_in_graph_function(x):
    return AllowInGraphFunc.apply(x)


class ScaleGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        return grad * 0.5


@case(args=one_leaf(3), grads=True)
def once_differentiable_backward(x):
    return ScaleGradient.apply(x)


@case(args=one_leaf(3), grads=True)
def once_differentiable_then_ops(x):
    return ScaleGradient.apply(x * 2).cos()


class Shake(torch.autograd.Function):
    @classmethod
    def forward(cls, ctx, foo):
        return foo + foo

    @classmethod
    def backward(cls, ctx, grad_output):
        return grad_output


@case(args=one_leaf(4, 4, 4, 4), grads=True)
def classmethod_forward_backward(x):
    return Shake.apply(x)


class TimesThreeInplace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(3)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 3


@case(args=lambda: (torch.eye(2, requires_grad=True),), grads=True)
def mark_dirty_discarded_output(w):
    y = torch.ones(2, 2) @ w
    TimesThreeInplace.apply(y)
    return y.sum()


@case(args=one_leaf(2, 2), grads=True)
def mark_dirty_returned(w):
    y = w * 2
    z = TimesThreeInplace.apply(y)
    return z + y


class InplaceAddOne(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


@case(args=one_leaf(2))
def mark_dirty_on_view_of_leaf(x):
    try:
        return InplaceAddOne.apply(x.view_as(x))
    except RuntimeError as e:
        return "a view of a leaf Variable that requires grad" in str(e)


class TwoClones(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone(), x.clone()

    @staticmethod
    def backward(ctx, grad1, grad2):
        return grad1 + grad2


@case(args=one_leaf(3), grads=True)
def multi_output(x):
    return TwoClones.apply(x)


@case(args=one_leaf(3), grads=True)
def multi_output_second_used(x):
    a, b = TwoClones.apply(x)
    return b * 3


class DataInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_tensor):
        ctx.save_for_backward(input_tensor)
        return input_tensor * 3

    @staticmethod
    def backward(ctx, grad_output):
        (input_tensor,) = ctx.saved_tensors
        modified_grad = grad_output.clone()
        modified_grad.data[input_tensor.data < 0] = 0
        return modified_grad * 3


@case(args=lambda: (torch.tensor([-2.0, 1.0, 3.0], requires_grad=True),), grads=True)
def data_in_backward(x):
    return DataInBackward.apply(x)


class RequiresGradInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x + 1)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        if grad_output.requires_grad:  # false in a first backward: the wrong branch
            return grad_output * torch.sin(x + 1)
        return grad_output * torch.cos(x + 1)


@case(args=lambda: (torch.tensor([1.0, 3.0], requires_grad=True),), grads=True)
def requires_grad_in_backward(x):
    return RequiresGradInBackward.apply(x)


class MyMM(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cpu")
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a.mm(b)

    @staticmethod
    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad.mm(b.t()), a.t().mm(grad)


@case(args=lambda: (leaf(8, 8), leaf(8, 8)), grads=True)
def amp_custom_fwd_bwd(a, b):
    return MyMM.apply(a, b)


class MulY(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(True)
        return x * 3

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out * 3


@case(args=lambda: (torch.tensor(2.0, requires_grad=True),), grads=True)
def set_materialize_grads_true(x):
    return MulY.apply(x)


@dataclass
class Weird:
    x: int
    b: torch.Tensor
    c: torch.Tensor


class DataclassInput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weird, z):
        ctx.save_for_backward(weird.b, weird.c)
        return weird.b * weird.c * x.clone()

    @staticmethod
    def backward(ctx, grad):
        b, c = ctx.saved_tensors
        return grad * b * c, None, grad * 2


@case(args=lambda: (torch.tensor(2.0, requires_grad=True),
                    Weird(1.2, torch.tensor(2.5, requires_grad=True), torch.tensor(3.5)),
                    torch.tensor(3.0, requires_grad=True)), grads=True)
def user_defined_object_as_input(x, weird, z):
    return DataclassInput.apply(x, weird, z)


class TensorListInput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, tl):
        ctx.save_for_backward(tl[0], tl[1])
        return x.clone() * (tl[0] + tl[1])

    @staticmethod
    def backward(ctx, grad):
        tl0, tl1 = ctx.saved_tensors
        return grad * (tl0 + tl1), None


@case(args=lambda: (torch.tensor(2.0, requires_grad=True),
                    [torch.tensor(3.0, requires_grad=True),
                     torch.tensor(4.0, requires_grad=True)]), grads=True)
def tensor_list_as_input(x, tl):
    return TensorListInput.apply(x, tl)


class ManyNonTensorInputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weird, z, tl):
        ctx.save_for_backward(weird.b, weird.c, tl[0], tl[1])
        return x.clone() * weird.b * weird.c * tl[0]

    @staticmethod
    def backward(ctx, grad):
        b, c, tl0, _ = ctx.saved_tensors
        return grad * b * c * tl0, None, grad * 2, None


@case(args=lambda: (torch.tensor(2.0, requires_grad=True),
                    Weird(1.2, torch.tensor(2.5, requires_grad=True),
                          torch.tensor(3.5, requires_grad=True)),
                    torch.tensor(3.0, requires_grad=True),
                    [torch.tensor(0.5, requires_grad=True),
                     torch.tensor(0.6, requires_grad=True)]), grads=True)
def multiple_different_non_tensor_inputs(x, weird, z, tl):
    return ManyNonTensorInputs.apply(x, weird, z, tl)


class NoneForTensorInput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(y)
        return x.clone() * y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y, None


@case(args=lambda: (torch.tensor(2.0, requires_grad=True),
                    torch.tensor(3.0, requires_grad=True)), grads=True)
def backward_returns_none_for_tensor_input(x, y):
    return NoneForTensorInput.apply(x, y)


class LowerBound(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inputs, bound):
        ctx.save_for_backward(inputs, inputs.new_ones(1) * bound)
        return inputs.clamp(min=bound)

    @staticmethod
    def backward(ctx, grad_output):
        inputs, bound = ctx.saved_tensors
        return (inputs >= bound) * grad_output, None


class LowerBoundModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gamma = torch.nn.Parameter(torch.rand([4, 8, 3, 3]) * 2)

    def forward(self, x):
        gamma = LowerBound.apply(self.gamma, 1)
        return x + gamma


@case(args=lambda: (LowerBoundModule(), torch.rand([4, 8, 3, 3])), grads=True)
def function_with_bound_free_variable(mod, x):
    return mod(x)


class ReturnsConstant(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x, [1, 2, 3]

    @staticmethod
    def backward(ctx, grad_output1, grad_output2):
        return grad_output1


@case(args=lambda: (torch.tensor(2.0, requires_grad=True),), grads=True)
def forward_returns_constant(x):
    return ReturnsConstant.apply(x)


# test_smoke_from_test_autograd, one case per Function

def mult1(x):
    return x.prod(dim=-1).prod(dim=-1)


class Mult(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = mult1(x)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return (grad_output * y)[:, None, None] / x


@case(args=lambda: (torch.rand(2, 4, 4).add(0.5).requires_grad_(),), grads=True)
def smoke_mult(x):
    return Mult.apply(x)


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x**2
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        x, _ = ctx.saved_tensors
        return grad_output * 2 * x


class Double2(Double):  # uses the forward's output in backward
    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return grad_output * 2 * y / x


@case(args=lambda: (torch.tensor(2).double().requires_grad_(),), grads=True)
def smoke_double(x):
    return Double.apply(x), Double2.apply(x)


class Identity(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a, a + b

    @staticmethod
    def backward(ctx, grad_a, grad_b):
        return grad_a + grad_b, grad_b


@case(args=lambda: (leaf(5, 5), leaf(5, 5)), grads=True)
def smoke_identity(x, y):
    return Identity.apply(x, y)


class NanBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp):
        return inp.clone()

    @staticmethod
    def backward(ctx, gO):
        return torch.tensor(float("nan")).expand(10, 10)


@case(args=one_leaf(10, 10), grads=True)
def smoke_expanded_nan_gradient(a):
    return NanBackward.apply(a).sum()


class ViewAs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp):
        return inp.view_as(inp)

    @staticmethod
    def backward(ctx, grad):
        return grad


@case(args=lambda: (torch.rand(1, 2),))
def smoke_view_as_no_grad(a):
    return ViewAs.apply(a)


@case(args=one_leaf(3, 2), grads=True)
def smoke_view_as(a):
    return ViewAs.apply(a) * 2


class MyAdder(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        a.add_(b)
        ctx.mark_dirty(a)
        return a

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


@case(args=lambda: (leaf(2), leaf(2)), grads=True)
def smoke_mark_dirty_adder(a, b):
    return MyAdder.apply(a.clone(), b)


class InplaceMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = x.mul_(2)
        ctx.mark_dirty(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        pass


@case(args=lambda: (torch.tensor(1.0, requires_grad=True),))
def smoke_inplace_mul(z):
    x = z.clone()
    return InplaceMul.apply(x)


class VjpFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        return x + y, x

    @staticmethod
    def vjp(ctx, gO1, gO2):
        return gO1 + gO2, gO1


@case(args=lambda: (torch.tensor(1.0, dtype=torch.double, requires_grad=True),
                    torch.tensor(2.0, dtype=torch.double, requires_grad=True)), grads=True)
def smoke_vjp(a, b):
    return VjpFunction.apply(a, b)


@case(args=lambda: (torch.tensor(1.0, dtype=torch.double),
                    torch.tensor(2.0, dtype=torch.double)))
def smoke_vjp_no_grad(a, b):
    return VjpFunction.apply(a, b)


class CloneSlice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp, inplace):
        view = inp.clone()[:3]
        if inplace:
            view += 2
        return view

    @staticmethod
    def backward(ctx, grad):
        return grad, None


@case(args=one_leaf(10))  # its backward's gradient has the slice's shape: eager's backward raises
def smoke_clone_slice(base):
    return CloneSlice.apply(base, False)


@case(args=one_leaf(10))
def smoke_clone_slice_inplace(base):
    return CloneSlice.apply(base, True)


class MatmulFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return x.matmul(weight.t())

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        grad_x = grad_output.matmul(weight)
        assert grad_x.is_contiguous()
        grad_weight = grad_output.transpose(0, 1).matmul(x)
        return grad_x, grad_weight


@case(args=lambda: (leaf(5, 3), leaf(4, 3)), grads=True)
def assert_is_contiguous_after_matmul(x, weight):
    return MatmulFunction.apply(x, weight)


class ContiguousGradOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return x.matmul(weight.t())

    @staticmethod
    def backward(ctx, grad_output):
        assert grad_output.is_contiguous()
        x, weight = ctx.saved_tensors
        return grad_output.matmul(weight), grad_output.transpose(0, 1).matmul(x)


@case(args=lambda: (leaf(5, 3), leaf(4, 3)), grads=True)
def assert_is_contiguous_on_grad_output(x, weight):
    return ContiguousGradOutput.apply(x, weight)


class SmuggleSize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x0 = x.size(0)
        return x * 2

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out * ctx.x0


@case(args=one_leaf(2), grads=True)
def smuggle_symint(x):
    return SmuggleSize.apply(x)


class NeedsInputGradFunc(torch.autograd.Function):
    @staticmethod
    def forward(ctx, foo):
        result = foo + foo
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            return grad_output * result.sin()
        return None


@case(args=one_leaf(10), grads=True)
def needs_input_grad(x):
    return NeedsInputGradFunc.apply(x)


class RepeatedSave(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x)
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return grad_out * x, grad_out * y


@case(args=lambda: (leaf(2), leaf(2)), grads=True)
def repeated_save_for_backward_calls(x, y):
    return RepeatedSave.apply(x, y)


class SmuggleStructures(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x0 = x
        ctx.x1 = [1, 2, 3]
        return x * 2

    @staticmethod
    def backward(ctx, grad_out):
        x0mul = grad_out * ctx.x0
        for i in ctx.x1:
            x0mul = (x0mul * i) + x0mul
        return x0mul


@case(args=one_leaf(2), grads=True)
def smuggle_tensor_and_complex_structures(x):
    return SmuggleStructures.apply(x)


class IntOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        out1 = x.sin()
        out2 = out1.to(dtype=torch.int)
        return out1, out2

    @staticmethod
    def backward(ctx, grad1, grad2):
        return grad1.cos(), grad1 * 0.0


@case(args=lambda: (torch.tensor(10.0, requires_grad=True),
                    torch.tensor(20.0, requires_grad=True)), grads=True)
def int_output(x, y):
    return IntOutput.apply(x, y)


class MarkNonDifferentiable(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        out1 = x.sin()
        out2 = y * 2
        ctx.mark_non_differentiable(out2)
        return out1, out2

    @staticmethod
    def backward(ctx, grad1, grad2):
        return grad1.cos(), grad2 * 0.0


@case(args=lambda: (torch.tensor(10.0, requires_grad=True),
                    torch.tensor(20.0, requires_grad=True)), grads=True)
def mark_non_differentiable(x, y):
    return MarkNonDifferentiable.apply(x, y)


@case(args=lambda: (torch.tensor(10.0, requires_grad=True),
                    torch.tensor(20.0, requires_grad=True)), grads=True)
def mark_non_differentiable_output_reused(x, y):
    a, b = MarkNonDifferentiable.apply(x, y)
    return a * b, b.requires_grad


class MarkThreeOutputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y, z):
        out1 = x.sin()
        out2 = y * 2
        out3 = z + 3
        ctx.mark_non_differentiable(out2, out3)
        return out1, out2, out3

    @staticmethod
    def backward(ctx, grad1, grad2, grad3):
        return grad1.cos(), grad2, grad3


@case(args=lambda: (torch.tensor(10.0, requires_grad=True),
                    torch.tensor(20.0, requires_grad=True),
                    torch.tensor(30.0, requires_grad=True)), grads=True)
def mark_multi_output_non_differentiable(x, y, z):
    return MarkThreeOutputs.apply(x, y, z)


class DefaultAlpha(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha=0.99):
        return x * alpha

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out


@case(args=lambda: (torch.randn(2),))
def default_values(x):
    return DefaultAlpha.apply(x)


@case(args=one_leaf(2), grads=True)
def default_values_requires_grad(x):
    return DefaultAlpha.apply(x)


class ExpOut(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inputs):  # out= is refused under grad mode: forward runs without it
        torch.exp(inputs, out=inputs)
        return inputs

    @staticmethod
    def backward(ctx, grad_output):
        return None


@case(args=one_leaf(2, 3))
def forward_runs_without_grad(x):
    return ExpOut.apply(x)


class MyCube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = x**3
        dx = 3 * x**2
        ctx.save_for_backward(x, dx)
        return result, dx

    @staticmethod
    def backward(ctx, grad_output, grad_dx):
        x, dx = ctx.saved_tensors
        result = grad_output * dx + grad_dx * 6 * x
        return result * 0.5  # wrong on purpose: each of the two applications must run it


@case(args=lambda: (torch.ones(2, requires_grad=True),), grads=True)
def forward_propagation_correctness(x):
    x, _ = MyCube.apply(x)
    x, _ = MyCube.apply(x)
    return x


class TupleArg(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, shape):
        ctx.save_for_backward(torch.ones(shape))
        return x + 1

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return result, None


SHAPE = (10, 10)


@case(args=lambda: (leaf(*SHAPE),), grads=True)
def tuple_arg(x):
    return TupleArg.apply(x, SHAPE)


class AppendsToList(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, z):
        o = torch.matmul(x, x) @ x
        out = x.sin()
        z.append(out)
        return torch.cos(torch.sin(o)), torch.sin(x)

    @staticmethod
    def backward(ctx, grad_output1, grad_output2):
        return grad_output1 + grad_output2, None


@case(args=one_leaf(4, 4), grads=True)
def nonlocal_list_mutation_in_forward(x):
    z = []
    outs = AppendsToList.apply(x, z)
    return outs[0] + outs[-1], z[0]


class RewiredAdd(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        a = torch.sin(x)
        b = torch.cos(y)
        result = a * b
        ctx.save_for_backward(a, x, result)  # an intermediate, an input and an output
        return result, a + b

    @staticmethod
    def backward(ctx, grad_a, grad_b):
        (a, x, result) = ctx.saved_tensors
        return a * grad_b * 2 + x, result + grad_a * 3


@case(args=lambda: (leaf(8, 8), leaf(8, 8)), grads=True)
def rewired_backward_output(x, y):
    z = RewiredAdd.apply(torch.cos(x), torch.cos(y))
    return z[0] + z[1]


class DuplicateInput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b + a + b

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        return grad_output * (b + 1), grad_output * (a + 1)


@case(args=lambda: (torch.tensor([0.7, -1.3, 2.1, 0.05, -0.5], requires_grad=True),),
      grads=True)
def duplicate_input_accumulates_grad(x):
    return DuplicateInput.apply(x, x).sum()


class Pair:
    def __init__(self, a, b):
        self.a = a
        self.b = b


class UserObjectOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        a = torch.sin(x)
        b = torch.cos(y)
        ctx.save_for_backward(a)
        return Pair(a, b), x * y

    @staticmethod
    def backward(ctx, grad_a, grad_b):
        (a,) = ctx.saved_tensors
        return grad_b * 2, a * grad_b * 3


@case(args=lambda: (leaf(8, 8), leaf(8, 8)), grads=True)
def user_object_output(x, y):
    z = UserObjectOutput.apply(x, y)
    return z[0].a + z[0].b + z[1]


class ReturnsInput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out


@case(args=one_leaf(8, 8), grads=True)
def aliasing_output(x):
    y = ReturnsInput.apply(x)
    if y is x:
        return torch.cos(y)
    return torch.sin(y)


@dataclass
class InputData:
    count: int
    values: torch.Tensor


@dataclass
class OutputData:
    result1: torch.Tensor
    result2: torch.Tensor


class PlainModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = 4
        self.b = torch.randn(4, 4)


class ModuleAndDataclassInputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, module, input_data, x):
        count = input_data.count
        values = input_data.values
        output_tensor = module.a + module.b * count * values
        return output_tensor + x, values + x

    @staticmethod
    def backward(ctx, grad_output, output_data):  # a gradient for the module: eager's raises
        return grad_output * 4, None, grad_output * 2


@case(args=lambda: (PlainModule(), InputData(5, torch.randn(4, 4)), leaf(4, 4)))
def nn_module_dataclasses_as_inputs(module, input_data, x):
    y, y_data = ModuleAndDataclassInputs.apply(module, input_data, x)
    return x + y + y_data + y_data


class DataclassOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, module, input_data, x):
        count = input_data.count
        output_tensor = module.a + module.b * count * input_data.values
        output_data = OutputData(result1=output_tensor + count,
                                 result2=output_tensor * (count + 1))
        return output_tensor + x, output_data

    @staticmethod
    def backward(ctx, grad_output, output_data):
        return grad_output * 4, None, grad_output * 2


@case(args=lambda: (PlainModule(), InputData(5, torch.randn(4, 4)), leaf(4, 4)))
def nn_module_dataclasses_as_io(module, input_data, x):
    y, y_data = DataclassOutput.apply(module, input_data, x)
    return x + y + y_data.result1 + y_data.result2


captured: list = []


class InplaceWithSideEffect(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        intermediate = torch.sin(x)
        captured.append(intermediate)
        loss = torch.tensor(0.0, device=x.device)
        loss += x.sum()
        return loss

    @staticmethod
    def backward(ctx, grad):
        return grad.expand(8)


@case(args=one_leaf(8), grads=True)
def inplace_op_with_side_effect(x):
    captured.clear()
    return InplaceWithSideEffect.apply(x)


class CapturesView(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        view = x.view(-1)
        captured.append(view)
        return x.sum()

    @staticmethod
    def backward(ctx, grad):
        return grad.expand(8)


@case(args=one_leaf(8), grads=True)
def aliased_intermediate_captured_by_side_effect(x):
    captured.clear()
    out = CapturesView.apply(x)
    return out + captured[0].sum()


class State:
    def __init__(self):
        self.enabled = False
        self.mode = "default"
        self.depth = 0
        self.options = {"mode": "fast", "level": 3}


state = State()


@contextlib.contextmanager
def toggle_flag():
    old = state.enabled
    state.enabled = True
    try:
        yield
    finally:
        state.enabled = old


class ToggleInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        with toggle_flag():
            return grad.clone() * (2.0 if state.enabled else 1.0)


@case(args=one_leaf(8), grads=True)
def nullified_ctx_manager_side_effect_in_backward(x):
    return ToggleInBackward.apply(x).sum()


class MutatesInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        state.depth += 1  # a side effect of each backward
        return grad.clone() * state.depth


@case(args=one_leaf(8), grads=True)
def non_nullified_side_effect_in_backward(x):
    state.depth = 0
    return MutatesInBackward.apply(x) * 2


class SwapsDictInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        old = state.options
        state.options = {"mode": "slow", "level": 1}
        level = state.options["level"]
        state.options = old
        return grad.clone() * (level + state.options["level"])


@case(args=one_leaf(8), grads=True)
def nullified_dict_attr_side_effect_in_backward(x):
    return SwapsDictInBackward.apply(x).sum()


@contextlib.contextmanager
def set_mode(mode):
    old = state.mode
    state.mode = mode
    try:
        yield
    finally:
        state.mode = old


class ReadsModeInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        with set_mode("special"):
            if state.mode == "special":
                return grad * 2.0
            return grad


@case(args=one_leaf(8), grads=True)
def read_after_mutate_in_backward(x):
    return ReadsModeInBackward.apply(x).sum()


class MySinFactor(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, factor=1):
        ctx.save_for_backward(input)
        ctx.factor = factor
        return factor * torch.sin(input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * ctx.factor * torch.cos(input), None


@case(args=lambda: (torch.tensor([0.812], requires_grad=True),), grads=True)
def apply_kwargs_old_style(x):
    return MySinFactor.apply(x, factor=6)


@case(args=lambda: (torch.tensor([0.812]),))
def apply_kwargs_inference(x):
    return MySinFactor.apply(x, factor=6)


class MyScale(torch.autograd.Function):
    @staticmethod
    def forward(x, factor=1):
        return factor * x

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, factor = inputs
        ctx.save_for_backward(x)
        ctx.factor = factor

    @staticmethod
    def backward(ctx, gO):
        return gO * ctx.factor, None


@case(args=lambda: (torch.tensor([2.0], requires_grad=True),), grads=True)
def apply_kwargs_setup_context(x):
    return MyScale.apply(x, factor=3)


class AddSetupContext(torch.autograd.Function):
    @staticmethod
    def forward(x, y):
        return x + y

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, grad_output * 2


@case(args=lambda: (torch.tensor([2.0], requires_grad=True),
                    torch.tensor([3.0], requires_grad=True)), grads=True)
def apply_kwargs_all_kwargs(x, y):
    return AddSetupContext.apply(y=y, x=x)


def scale_by_factor(f):
    @functools.wraps(f)
    def wrapper(ctx, input, factor=1):
        return f(ctx, input, factor)

    return wrapper


class WrappedForward(torch.autograd.Function):
    @staticmethod
    @scale_by_factor
    def forward(ctx, input, multiplier=1):
        ctx.save_for_backward(input)
        ctx.factor = multiplier
        return multiplier * torch.sin(input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * ctx.factor * torch.cos(input), None


@case(args=lambda: (torch.tensor([0.812], requires_grad=True),), grads=True)
def apply_kwargs_with_wrapped(x):
    return WrappedForward.apply(x, factor=6)  # the wrapper's parameter name, not the wrapped's


class ScaleDefault(torch.autograd.Function):
    @staticmethod
    def forward(x, scale=2, bias=1):
        return x * scale + bias

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2, None, None


@case(args=one_leaf(4, 3), grads=True)
def setup_context_binds_default_args(x):
    return ScaleDefault.apply(x, bias=4)


class VarArgs(torch.autograd.Function):
    @staticmethod
    def forward(x, *ys):
        return x + sum(ys)

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad_output):
        return (grad_output,) * 3


@case(args=lambda: (leaf(4, 3), leaf(4, 3), leaf(4, 3)), grads=True)
def setup_context_preserves_varargs(x, y, z):
    return VarArgs.apply(x, y, z)


class NeedsTwo(torch.autograd.Function):
    @staticmethod
    def forward(x, y):
        return x + y

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, grad_output


@case(args=lambda: (torch.randn(3),))
def setup_context_missing_argument_is_catchable(x):
    try:
        return NeedsTwo.apply(x)
    except TypeError:
        return x + 10


@case(args=lambda: (torch.randn(3),))
def setup_context_duplicate_argument_is_catchable(x):
    try:
        return NeedsTwo.apply(x, x, y=x)
    except TypeError:
        return x + 20


# --- AutogradFunctionFunctorchTests: under torch.vmap and torch.func.grad -------------------------

class DoubleVmap(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


@case(args=one_leaf(2, 3), grads=True)
def vmap_generate_rule(x):
    return torch.vmap(DoubleVmap.apply)(x)


class TimesThreeVmapTimesTwo(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x * 3

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 3

    @staticmethod
    def vmap(info, in_dims, x):
        return x * 2, in_dims[0]


@case(args=one_leaf(4, 3), grads=True)
def vmap_uses_custom_rule(x):
    return torch.vmap(lambda y: TimesThreeVmapTimesTwo.apply(y))(x)


class NewStyleOp(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2


@case(args=lambda: (torch.tensor([1.0, 2.0], requires_grad=True),))
def new_style_function_under_func_grad(x):
    return torch.func.grad(lambda y: NewStyleOp.apply(y).sum())(x)


@case(args=lambda: (torch.tensor([1.0, 2.0], requires_grad=True),), grads=True)
def new_style_function(x):
    return NewStyleOp.apply(x).sum()
