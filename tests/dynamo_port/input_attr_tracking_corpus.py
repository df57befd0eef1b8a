"""Cases ported from pytorch/pytorch ``test/dynamo/test_input_attr_tracking.py``
(``TestInputAttrTracking``): Python attributes read from and stored on input tensors, a tensor
attribute of an input tensor, ``x.data = ...`` on an input and on a tensor made in the frame,
and attributes set on a user object, with and without graph breaks, re-typed and adapted.

Where the test checks the placeholders or op counts of the graph, the case keeps the function
and its result (eager's); the attributes the frame stores are returned too, read after the
store, so a store the compiled code fails to replay shows."""

from __future__ import annotations

import torch

from . import case_registrar

case = case_registrar("test/dynamo/test_input_attr_tracking.py")


def _tensor_with_attr(value_fn):
    def make_args():
        x = torch.randn(2, 2)
        x.y = value_fn()
        return (x,)

    return make_args


@case(args=_tensor_with_attr(lambda: torch.randn(2, 2)))
def tensor_property_on_tensor(x):
    return x * x.y


@case(args=lambda: (torch.randn(2, 2), torch.randn(2, 2)))
def tensor_property_assigned_on_tensor(x, y):
    x.y = y
    return x * x.y, x.y


@case(args=_tensor_with_attr(lambda: 4))
def const_property_on_tensor(x):
    return x * x.y


@case(args=lambda: (torch.randn(2, 2), 4))
def const_property_assigned_on_tensor(x, y):
    x.y = y
    return x * x.y, x.y


@case(args=lambda: (torch.randn(2, 2), torch.randn(2, 2)))
def property_assigned_on_tensor_then_read_in_resume(x, y):
    x.y = y
    torch._dynamo.graph_break()
    return x * x.y


@case(args=_tensor_with_attr(lambda: 3))
def property_on_tensor_updated(x):
    x.y = x.y + 1
    return x * x.y, x.y


@case(args=lambda: ([torch.randn(2, 2) for _ in range(3)], torch.randn(2, 2), 5))
def complex_attr_access_without_graph_breaks(x, y, z):
    for t in x:
        t.y = y
        t.z = y * z

    new_y = 1
    new_z = 1
    for t in x:
        new_y = t.y * new_y
        new_z = t.z * new_z

    return new_y, new_z


@case(args=lambda: ([torch.randn(2, 2) for _ in range(3)], torch.randn(2, 2), 5))
def complex_attr_access_with_graph_breaks(x, y, z):
    for t in x:
        t.y = y
        t.z = y * z

    torch._dynamo.graph_break()  # the test's print("Break!")

    new_y = 1
    new_z = 1
    for t in x:
        new_y = t.y * new_y
        new_z = t.z * new_z

    return new_y, new_z


def _inline_test_fn(x, y, z):
    torch._dynamo.graph_break()  # the test's print("f")
    return x.a + y.a + z.a


@case(args=lambda: (torch.randn(2, 2), torch.randn(2, 2), torch.randn(2, 2)))
def complex_attr_access_with_inline_reconstruct(x, y, z):
    x.a = 1
    y.a = 2
    z.a = 3

    mult = _inline_test_fn(x, y, z)
    y = y * mult
    x = x * mult
    return x, y


@case(args=lambda: (torch.randn(5, 5), torch.randn(2, 2)))
def set_data_on_input_tensor(x, y):
    x.data = y.data
    if x.size() == y.size():
        return x * y
    else:
        return y * y


@case(args=lambda: (torch.randn(5, 5),))
def set_data_on_scoped_tensor(x):
    z = torch.zeros([4, 4])
    z.data = x.data
    if x.size() == z.size():
        return z * x
    else:
        return x


class MyUserDefinedClass:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def do_some_setattr_stuff(self):
        self.z = self.x * self.y
        self.a = self.x + self.x
        return self.z * self.a


@case(args=lambda: (MyUserDefinedClass(torch.randn(5, 5), torch.randn(5, 5)),))
def set_data_on_user_defined_class_input_tensor(obj):
    return obj.do_some_setattr_stuff(), obj.z, obj.a
