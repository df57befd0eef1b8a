"""Cases ported from pytorch/pytorch ``test/dynamo/test_unspec.py`` (``UnspecTests``): Python
scalars passed as arguments (ints, floats, numpy scalars) next to tensors, used in arithmetic,
shapes and control flow, re-typed and adapted (the random-module cases, whose values real
Dynamo replays through its own mechanism, are left out)."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from . import case_registrar

case = case_registrar("test/dynamo/test_unspec.py")


@case(args=lambda: (torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64), 7))
def int_scalar_arithmetic(x, y):
    return {"a": x + 1, "b": y / 2, "c": x * y}


@case(args=lambda: (list(range(50)), 48))
def builtin_getitem_int(x, idx):
    return torch.zeros(idx), x[idx], x[idx:]


@case(args=lambda: (torch.tensor([5]), 2))
def use_and_specialize(x, y):
    x = x + y
    if y == 2:
        return x - 1
    return x + 1


@case(args=lambda: (torch.randn(3, 6), 0.23))
def float_scalar_scale(x, scaler):
    return torch.nn.ReLU()(x) * scaler


@case(args=lambda: (torch.rand(3, 27, 40), 1.873536229133606))
def float_scale_factor_interpolate(image, scale_factor):
    out = F.interpolate(image[None], scale_factor=scale_factor, mode="bilinear",
                        recompute_scale_factor=True, align_corners=False)[0]
    return out.shape


@case(args=lambda: (torch.randn(2, 3),))
def sym_int_conversion(x):
    y = x.size(0)
    return x * int(y == 0)


@case(args=lambda: (torch.randn(8, 5, 4, 4), (-1, 1, 0, 2)))
def sum_dimlist(inputs, dim):
    return torch.sum(inputs, dim)


@case(args=lambda: (torch.randn(4, 4, 4), 2))
def amin_int_dim(x, dim):
    return torch.amin(x, dim=dim, keepdim=True)


@case(args=lambda: (torch.randn(1, 1, 175),))
def conv1d_shape_padding(x):
    kernel = torch.ones(1, 1, 4)
    padding = math.ceil((kernel.shape[-1] + x.shape[-1] % 2) / 2) - 1
    return F.conv1d(x, kernel, padding=padding, stride=2)


@case(args=lambda: (torch.tensor([4, 4, 16, 32], dtype=torch.uint8),))
def rshift(tensor):
    return (tensor >> 2).to(torch.long)


@case(args=lambda: (torch.randn(4), np.int64(3)))
def numpy_int_scalar(x, n):
    return x * int(n) + 1


@case(args=lambda: (torch.randn(4), 2.5, 3))
def mixed_scalars_math(x, a, b):
    return x * math.sqrt(a) + math.floor(a) * b, a * b


@case(args=lambda: (torch.randn(6), -1))
def negative_int_dim(x, d):
    return x.unsqueeze(d).sum(d)


@case(args=lambda: (torch.randn(5), True))
def bool_scalar_branch(x, flag):
    return x.relu() if flag else x.sigmoid()


# -- more of UnspecTests -----------------------------------------------------------------------
@case(args=lambda: (torch.rand([3, 42, 64]), 1.873536229133606))
def unspec_float_precision(image, scale_factor):
    image = F.interpolate(image[None], size=None, scale_factor=scale_factor, mode="bilinear",
                          recompute_scale_factor=True, align_corners=False)[0]
    return image.shape


@case(args=lambda: (torch.randn(20),))
def isinstance_symint(x):
    assert isinstance(x.size(0), int)
    return x * 2


@case(args=lambda: ())
def to_tensor():
    a = torch.tensor([[[123]]])
    b = torch.tensor(123)
    return torch.tensor([a, a]), torch.tensor([b, b]), torch.tensor([b, a])


@case(args=lambda: (torch.tensor([1000]),))
def item_max(x):
    return torch.ones(max(x.item(), 1024))


def _times_default(x, i=8):
    return x * i


@case(args=lambda: (torch.randn(2, 3, 4),))
def defaults(x):
    return _times_default(x)


@case(args=lambda: (torch.randn(3), 5.0))
def unspec_float_input(x, y):
    if y == 5.0:
        return x + 2
    return x + y


@case(args=lambda: (torch.randn(3), 4.0))
def unspec_float_output(x, y):
    return x + 1, y * 2


def _greater_than_two(y):
    return y > 2


@case(args=lambda: (torch.tensor([3.0]),))
def data_dependent_evaluate_expr_graph_break(x):
    x = x + 1
    y = x.item()
    if _greater_than_two(y):
        return x * 2
    return x * 3


@case(args=lambda: (torch.empty(13),))
def bool_tensor_ctor(x):
    y = torch.empty((x.size(0) // 13) * 13)
    return torch.tensor(y.numel() == 0)
