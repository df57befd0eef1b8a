"""Cases ported from pytorch/pytorch ``test/dynamo/test_hooks.py``: ``Tensor.register_hook`` on
inputs and intermediates (lambdas, local, global and ``functools.partial`` hooks, handles
removed), and ``retain_grad``, re-typed and adapted. Every case carries ``grads=True``: the
harness runs the backward, where the hooks act, and compares the gradients with eager's. The
tests' checks of compiled autograd and of Dynamo's counters are left out.

A hook on an input is registered after the graph (side_effects.py); one on an intermediate
is a graph node with the hook's traced body (dynamo/variables/hooks.py); a hook that changes
state breaks the graph there, as in real Dynamo. The cases also run through aot_eager
(``THROUGH_AOT``), where the hook's ops are traced into the backward graph."""

from __future__ import annotations

import functools

import torch

from . import case_registrar

case = case_registrar("test/dynamo/test_hooks.py")


def global_hook_0(grad):
    return grad * 4


def global_hook_1(grad):
    return grad / 2


def global_hook_2(grad):
    return grad * 3


def zeros_leaf():
    return torch.tensor([0.0, 0.0, 0.0], requires_grad=True)


def leaf_and_two():
    return zeros_leaf(), torch.randn([2, 2]), torch.randn([2, 2])


@case(args=lambda: (zeros_leaf(),), grads=True)
def hook_only_lambda(x):
    x.register_hook(lambda grad: grad * 2)
    return x


@case(args=leaf_and_two, grads=True)
def hook_lambda_in_graph(x, y, z):
    x.register_hook(lambda grad: grad * 2)
    return x, y * y, z * z


@case(args=leaf_and_two, grads=True)
def hook_handle_removed_then_other_hook(x, y, z):
    handle = x.register_hook(lambda grad: grad * 2)
    z = z * z
    handle.remove()
    x.register_hook(lambda grad: grad * 3)
    return x, y * y, z


@case(args=leaf_and_two, grads=True)
def hook_handle_returned_twice(x, y, z):
    handle = x.register_hook(lambda grad: grad * 2)
    h2 = handle
    z = z * z
    return x, y * y, z, h2 is handle


@case(args=leaf_and_two, grads=True)
def hook_handle_removed_twice(x, y, z):
    handle = x.register_hook(lambda grad: grad * 2)
    z = z * z
    handle.remove()
    handle.remove()
    return x, y * y, z


class HandleHolder:
    handle = None


@case(args=lambda: (*leaf_and_two(), HandleHolder()), grads=True)
def hook_handle_stored_on_object(x, y, z, holder):
    holder.handle = x.register_hook(lambda grad: grad * 2)
    z = z * z
    return x, y * y, z, holder.handle is not None


def local_hook(grad):
    return grad * 2


@case(args=lambda: (zeros_leaf(),), grads=True)
def hook_module_function(x):
    x.register_hook(local_hook)
    return x


@case(args=lambda: (torch.randn(3, requires_grad=True),), grads=True)
def hook_local_on_input_and_intermediate(x):
    def inner_hook(grad):
        return grad * 2

    z = x * x
    x.register_hook(inner_hook)
    z.register_hook(inner_hook)
    return x, z


@case(args=lambda: (zeros_leaf(),), grads=True)
def hook_global_function(x):
    x.register_hook(global_hook_0)
    return x, x * x


@case(args=lambda: (torch.randn(3, requires_grad=True),), grads=True)
def hooks_multiple_in_order(x):
    x.register_hook(global_hook_0)  # * 4
    x.register_hook(global_hook_1)  # / 2
    x.register_hook(global_hook_2)  # * 3
    return x, x * x


@case(args=lambda: (torch.randn(4, requires_grad=True),), grads=True)
def hook_on_intermediate(x):
    y = x * 2
    y.register_hook(lambda grad: grad + 1)
    return y.sum()


glb_list: list = []
glb_dict: dict = {}


@case(args=lambda: (torch.ones(4, requires_grad=True),), grads=True)
def hook_on_intermediate_in_containers(x):
    glb_list.clear()
    glb_dict.clear()
    y = x * 2
    glb_list.append(y)
    glb_dict["tensor"] = y
    a = glb_list[0] * 3  # the hooked y
    b = glb_dict["tensor"]
    y.register_hook(lambda grad: grad + 1)
    return (a + b).sum()


@case(args=lambda: (torch.randn(2, requires_grad=True),), grads=True)
def hook_on_intermediate_used_before_and_after(x):
    y = x * 2
    z = y + 1  # y read before the hook is registered
    y.register_hook(lambda g: g * 2)
    w = y * 3  # and after
    return (z + w).sum()


@case(args=lambda: (torch.randn(4, requires_grad=True),), grads=True)
def hook_on_intermediate_returns_none(x):
    y = x * 2
    y.register_hook(lambda g: None)
    return y.sum()


seen_grads: list = []


@case(args=lambda: (torch.ones(3, requires_grad=True),), grads=True)
def hook_with_side_effect_on_intermediate(x):
    seen_grads.clear()
    y = x * 2

    def _hook(grad):
        seen_grads.append(grad)
        return grad * 2

    y.register_hook(_hook)
    z = y + x
    return z.sum()


def simple_hook(g):
    return g * 2


@case(args=lambda: (torch.randn(1, requires_grad=True),), grads=True)
def intermediary_hook(x):
    y = x + 1
    y.register_hook(simple_hook)
    return y + 1


def hook_plus(grad, *, k=0):
    return grad + k


@case(args=lambda: (torch.ones(4, requires_grad=True),), grads=True)
def intermediary_partial_hooks(x):
    y = x.mul(2)
    y.register_hook(functools.partial(hook_plus, k=3))
    y.register_hook(functools.partial(hook_plus, k=4))
    return (y.mul(3),)


@case(args=lambda: (torch.ones(4, requires_grad=True),), grads=True)
def input_partial_hook(x):
    x.register_hook(functools.partial(hook_plus, k=3))
    y = x.mul(2)
    return (y.mul(3),)


class ClassWithVal:
    def __init__(self, val):
        self.val = val


@case(args=lambda: (torch.ones(4, requires_grad=True), ClassWithVal(torch.tensor(88.0))),
      grads=True)
def hook_with_closure_over_object(x, obj):
    y = x.sin()
    x.register_hook(lambda grad: grad + obj.val)
    return y.sin()


@case(args=lambda: (torch.ones(4, requires_grad=True),), grads=True)
def hook_with_nested_closure(x):
    def run():
        y = x.sin()
        x.register_hook(lambda grad: grad + y)
        return y.sin()

    return run()


@case(args=lambda: (torch.ones(4, requires_grad=True), ClassWithVal(torch.tensor(99.0))),
      grads=True)
def intermediate_hook_with_closure(x, obj):
    y = x.sin()
    y.register_hook(lambda grad: grad + obj.val)
    return y.sin()


class CountsCalls:
    count = 0

    def do_stuff(self, grad):
        r = grad * grad if self.count % 2 == 0 else grad + grad
        self.count += 1
        return r


def state_touching_hook(grad, *, obj):
    return obj.do_stuff(grad)


@case(args=lambda: (torch.ones(4, requires_grad=True), CountsCalls()), grads=True)
def intermediary_hooks_mutating_state(x, obj):
    y = x.mul(2)
    y.register_hook(functools.partial(state_touching_hook, obj=obj))
    y.register_hook(functools.partial(state_touching_hook, obj=obj))
    return (y.mul(3),)


@case(args=lambda: (torch.randn(3, requires_grad=True),), grads=True)
def retain_grad_intermediate(x):
    y = x * 2
    y.retain_grad()
    return y.sin(), y


@case(args=lambda: (torch.randn(3, requires_grad=True),), grads=True)
def retain_grad_and_hook(x):
    y = x.cos()
    y.retain_grad()
    y.register_hook(lambda g: g * 3)
    return y * y, y
