"""Cases ported from pytorch/pytorch ``test/dynamo/test_repros.py`` (``ReproTests``): small
reproductions of bugs found in real models (detectron2 boxes, reformer chunking, longformer
views, dataclass outputs, generators over modules), re-typed and adapted."""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
import typing

import numpy as np
import torch
import torch.nn.functional as F

from . import case_registrar

case = case_registrar("test/dynamo/test_repros.py")


class Boxes:
    def __init__(self, tensor):
        self.tensor = tensor

    def __len__(self):
        return self.tensor.shape[0]

    def area(self):
        box = self.tensor
        return (box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1])


@dataclasses.dataclass
class ModelOutput:
    logits: torch.Tensor
    hidden: torch.Tensor = None


def _chunked(fn, chunk_size, dim, x):
    chunks = x.chunk(x.shape[dim] // chunk_size, dim=dim)
    return torch.cat([fn(c) for c in chunks], dim=dim)


@case(args=lambda: (torch.rand(8, 4),))
def boxes_len_area(boxes):
    b = Boxes(boxes)
    return len(b), b.area()


@case(args=lambda: (torch.randn(2, 8, 4),))
def reformer_chunked_ff(x):
    return _chunked(lambda c: F.gelu(c) * 2, 2, 1, x)


@case(args=lambda: (torch.randn(2, 16, 4),))
def longformer_chunk_view(hidden):
    hidden = hidden.view(hidden.size(0), hidden.size(1) // 4, 4, hidden.size(2))
    size = list(hidden.size())
    size[1] = size[1] * 2 - 1
    stride = list(hidden.stride())
    stride[1] = stride[1] // 2
    return hidden.as_strided(size=size, stride=stride)


@case(args=lambda: (torch.randn(3, 5),))
def dataclass_output(x):
    out = ModelOutput(logits=x * 2)
    out.hidden = x + 1
    return out.logits + out.hidden, dataclasses.fields(out)[0].name


@case(args=lambda: (torch.randn(4, 6),))
def split_with_sizes_list(x):
    a, b, c = torch.split(x, [1, 2, 3], dim=1)
    return a.sum() + b.sum() + c.sum()


@case(args=lambda: (torch.randn(2, 3),))
def namedtuple_result_fields(x):
    Result = collections.namedtuple("Result", ["values", "indices"])
    r = Result(*torch.max(x, dim=1))
    return r.values + r.indices, r._fields


@case(args=lambda: (torch.randn(4, 4),))
def math_constants_in_graph(x):
    return x * math.pi + math.sqrt(2.0) * x.size(0)


@case(args=lambda: (torch.randn(4, 4),))
def inplace_on_view(x):
    y = x.clone()
    y[:, 0].add_(1)
    y.narrow(1, 1, 2).mul_(2)
    return y


@case(args=lambda: (torch.randn(3, 4), torch.randn(3, 4)))
def tuple_of_tensors_loop(a, b):
    outs = []
    for t in (a, b, a * b):
        outs.append(t.softmax(-1))
    return torch.stack(outs)


@case(args=lambda: (torch.randn(5),))
def list_pop_reversed(x):
    items = [x, x + 1, x + 2]
    last = items.pop()
    items.reverse()
    return last + items[0], len(items)


@case(args=lambda: (torch.randn(4, 3),))
def size_tuple_arithmetic(x):
    n, d = x.shape
    return x.new_zeros(n * 2, d + 1).shape, x.reshape(-1).size(0)


@case(args=lambda: (torch.randn(2, 3),))
def string_format_key(x):
    d = {}
    for i in range(2):
        d[f"layer_{i}"] = x * i
    return d["layer_1"] - d["layer_0"], sorted(d)


@case(args=lambda: (torch.randn(6),))
def where_scalar_other(x):
    return torch.where(x > 0, x, 0.0), (x > 0).sum().item() >= 0


@case(args=lambda: (torch.randn(3, 3),))
def module_in_generator(x):
    layers = torch.nn.ModuleList([torch.nn.Identity(), torch.nn.ReLU()])
    return sum(layer(x) for layer in layers)


# -- _repros_part2.py (ReproTestsMixin2) ---------------------------------------------------------
class BatchNormConv(torch.nn.Module):  # test_batchnorm_e2e's Repro (8 channels, not 64)
    def __init__(self) -> None:
        super().__init__()
        self.bn = torch.nn.BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True,
                                       track_running_stats=True)
        self.conv1 = torch.nn.Conv2d(8, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1),
                                     bias=False)

    def forward(self, x):
        x1 = self.bn(x)
        x2 = self.conv1(x1)
        return (F.relu(x2),)


@case(args=lambda: (BatchNormConv(), torch.randn(2, 8, 6, 6)))
def batchnorm_e2e(m, x):
    out = [m(x) for _ in range(3)]  # running_mean/var change what the next call computes
    return out, m.bn.running_mean, m.bn.running_var, m.bn.num_batches_tracked


def _forward_with_cond_scale(x, t, cond_scale, self_cond, other1, other2):
    return x.sin() + t + cond_scale + self_cond + other1 + other2


@case(args=lambda: (torch.ones(4),))
def build_map_unpack_with_call(x):
    d1 = dict(other1=5)
    d2 = dict(other2=4)
    text_cond = {**d1, **d2}
    return _forward_with_cond_scale(x, 1, cond_scale=2, self_cond=3, **text_cond)


class MyObj:
    def __init__(self, a, b):
        self.a = a
        self.b = b


@case(args=lambda: (torch.zeros([]), MyObj(torch.zeros([]), torch.zeros([]))))
def delattr(x, obj):
    del obj.a
    obj.c = x + 1
    del obj.c
    tmp = MyObj(x + 2, x + 3)
    del tmp.b
    if hasattr(obj, "a"):
        return x + 1
    return tmp.a, hasattr(tmp, "b"), hasattr(obj, "a"), hasattr(obj, "c"), obj.b


class GuardedDelete:
    def __init__(self, val):
        self.val = val
        self.deletion_attempted = False

    def __delattr__(self, attr):
        if attr == "val":
            self.deletion_attempted = True
        else:
            super().__delattr__(attr)


@case(args=lambda: (torch.ones(1),))
def delattr_return(input_tensor):
    instance_a = GuardedDelete(1)
    instance_b = GuardedDelete(2)
    del instance_a.val
    del instance_b.val
    return (input_tensor + 1, hasattr(instance_a, "val"), hasattr(instance_b, "val"),
            instance_a.deletion_attempted, instance_b.deletion_attempted)


@case(args=lambda: (torch.zeros([]), MyObj(torch.zeros([]), torch.zeros([]))))
def delattr_raises(x, obj):
    del obj.a
    x = x + 1
    try:  # (the test asserts the call raises AttributeError)
        obj.a
    except AttributeError:
        return x - 1, hasattr(obj, "a")
    return x


@case(args=lambda: ({"a": torch.tensor([1]), "b": torch.tensor([1])},))
def delsubscr(x):
    del x["a"]
    y = x["b"] + 1
    return y, list(x)


@case(args=lambda: ({"a": torch.tensor([1]), "b": torch.tensor([1])},))
def delsubscr_raises(x):
    del x["a"]
    try:  # (the test asserts the call raises KeyError)
        return x["a"] + 1
    except KeyError:
        return x["b"] - 1


@case(args=lambda: (torch.randn(3, 1, 1, 1, 1),))
def dynamic_shapes_implicit_guard(x):
    y = x * x.size(x.shape[0])
    torch.sum(y, [y.shape[0]])
    return y


def _exists(val):
    return val is not None


def _maybe(fn):
    @functools.wraps(fn)
    def inner(x, *args, **kwargs):
        if not _exists(x):
            return x
        return fn(x, *args, **kwargs)

    return inner


def _normalize(x):
    return x.cos()


@case(args=lambda: (torch.ones([]), _normalize))
def dalle2_maybe(x, normalize_img):
    lowres_cond_img = x.sin()
    lowres_cond_img = _maybe(normalize_img)(lowres_cond_img)
    return lowres_cond_img


def _cool_name(x):
    return x.sin()


@case(args=lambda: (torch.ones([]),))
def functools_wraps_repro(x):  # test_functools_wraps (test_misc has one of that name)
    y = x.cos()

    @functools.wraps(_cool_name)
    def uncool_name():
        return _cool_name(y)

    return uncool_name.__name__, uncool_name()


@dataclasses.dataclass
class DClass:
    sharding_contexts: typing.Any = dataclasses.field(default_factory=list)
    a: int = 1


@case(args=lambda: (torch.randn(4), [1, 2, 3]))
def dataclass_init_with_default_factory_with_inputs(x, inp_list):
    d = DClass(inp_list)
    d.sharding_contexts.append(x.sin() + d.a)
    return d.sharding_contexts, inp_list


FourElems = collections.namedtuple("FourElems", "one two three four", defaults=[0, 0, 0, 0])


@case(args=lambda: (torch.zeros(1),))
def list_index_repro(t):  # test_list_index (test_misc has one of that name)
    res = []
    for list_type in (list, tuple, torch.Size, collections.deque):
        xs = list_type([1, 2, 3, 4])
        res += [xs.index(3, *index) for index in ([], [2], [0, 3])]
    xs = FourElems(1, 2, 3, 4)
    res += [xs.index(3, *index) for index in ([], [2], [0, 3])]
    return t + sum(res), res


@case(args=lambda: (torch.zeros(1),))
def list_index_not_found(t):
    xs = ["bar", "foo", "baz", "buzz"]
    try:  # (the test asserts fullgraph raises Unsupported; eager raises ValueError)
        res = xs.index("non-existent")
    except ValueError:
        res = -1
    return t + res


class XSoftmax(torch.autograd.Function):  # transformers' DeBERTa masked softmax
    @staticmethod
    def forward(ctx, input, mask, dim):
        ctx.dim = dim
        rmask = ~(mask.to(torch.bool))
        output = input.masked_fill(rmask, torch.tensor(torch.finfo(input.dtype).min))
        output = torch.softmax(output, ctx.dim)
        output.masked_fill_(rmask, 0)
        ctx.save_for_backward(output, rmask)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        (output, rmask) = ctx.saved_tensors
        input_grad = torch._softmax_backward_data(grad_output, output, ctx.dim, output.dtype)
        return input_grad, None, None


@case(args=lambda: (torch.randn(4, 10), torch.randn(4, 10) < 0))
def hf_xsoftmax_inference(input, mask):
    return XSoftmax.apply(input + 1, mask, 1) + 2


@case(args=lambda: (torch.randn(4, 10, requires_grad=True), torch.randn(4, 10) < 0))
def hf_xsoftmax_training(input, mask):
    out = XSoftmax.apply(input, mask, 1)
    (grad,) = torch.autograd.grad(out.sum() * 2, [input])
    return out, grad


class MySinBreaking(torch.autograd.Function):  # test_autograd_function_graph_break
    @staticmethod
    def forward(ctx, x):
        torch._dynamo.graph_break()
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, gx):
        (x,) = ctx.saved_tensors
        return gx * x.cos()


@case(args=lambda: (torch.randn([], requires_grad=True),))
def autograd_function_graph_break(x):
    return MySinBreaking.apply(x)


@case(args=lambda: (torch.randn(4),))
def iadd_graph_break(x):
    a = ()
    x = torch.sin(x)
    a += (x,)
    return a


_DTYPES = {float: torch.float32, np.float16: torch.float16}


@case(args=lambda: (torch.zeros(4), float, np.float16))
def odict_get_item_index_name(x, y1, y2):
    return torch.zeros(5, dtype=_DTYPES[y1]), torch.zeros(5, dtype=_DTYPES[y2])


_GLOBAL_CPU_TENSOR = torch.randn(3)


@case(args=lambda: ())
def dedup_global():
    return _GLOBAL_CPU_TENSOR + _GLOBAL_CPU_TENSOR


@case(args=lambda: (17, (10,), torch.empty(10, dtype=torch.int32)))
def randint_out_dynamic(high, size, out):
    torch.manual_seed(0)
    return torch.randint(high, size, out=out), out


def _torch_bmm_nd(inp_1, inp_2, ndim=None):
    torch._dynamo.graph_break()
    return torch.bmm(inp_1, inp_2)


@case(args=lambda: (torch.rand(1, 8, 12), torch.rand(1, 12, 8), torch.rand(1, 8, 12),
                    torch.rand(1, 12, 8), torch.rand(1, 8, 1, 8)))
def hf_bigbird_unsqueeze(inp1, inp2, inp3, inp4, c):
    a = _torch_bmm_nd(inp1, inp2, 4)
    a.unsqueeze_(2)
    a = a * 2
    b = _torch_bmm_nd(inp3, inp4, 4)
    b.unsqueeze_(2)
    l = a + b  # noqa: E741
    out = torch.cat([a, b, c], dim=2)
    return out, l


def _check_type(obj, types_or_checks):
    for type_or_check in types_or_checks:
        if (isinstance(obj, type_or_check) if isinstance(type_or_check, type)
                else type_or_check(obj)):
            return True
    return False


@case(args=lambda: (torch.randn(4), [torch.Tensor]))
def torch_variable_type(obj, types_or_checks):
    return _check_type(obj, types_or_checks)


@case(args=lambda: ({"input": torch.tensor([[0.0, 1, 2, 4]]),
                     "out": [torch.empty(0, dtype=torch.float32),
                             torch.empty(0, dtype=torch.int32)]},))
def kwargs_out_list_variable(param):
    return torch.frexp(**param)


class UserModuleFn(torch.nn.Module):  # test_unspecialized_nn_module_with_torch_variable_attribute
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, **inp):
        return self.fn(**inp)


@case(args=lambda: (UserModuleFn(F.binary_cross_entropy), torch.rand(2, 9), torch.rand(2, 9)))
def unspecialized_nn_module_with_torch_variable_attribute(mod, x, y):
    return mod(input=x, target=y, reduction="mean")


_FORMAT = "temp{i}"


@case(args=lambda: (torch.randn(4),))
def string_format_global(x):  # test_string_format (test_misc has one of that name)
    if _FORMAT.format(i=4) == "temp4":
        return torch.sin(x)
    return torch.cos(x)


@case(args=lambda: (torch.randn([2, 2]), []))
def empty_list_contains_with_jump(x, l):  # noqa: E741
    if x in l:
        return x.cos()
    return x.sin()


class _Hinted:
    pass


@case(args=lambda: (torch.randn(4),))
def get_type_hints(x):
    typing.get_type_hints(_Hinted, include_extras=True)
    return torch.sin(x)


@case(args=lambda: (torch.rand(4),))
def graph_break_on_jit_isinstance(x):
    if torch.jit.isinstance(x, typing.List[str]):  # noqa: UP006
        return x * 2
    return x


@case(args=lambda: (torch.randn(2, 3, 4), torch.zeros(2, 3, 4)))
def add_sub_alpha_out(inp, out):
    torch.add(inp, 1, alpha=2, out=out)
    added = out.clone()
    torch.sub(inp, 1, alpha=2, out=out)
    return added, out


@case(args=lambda: (torch.ones(5, 1, 3, 4),))
def negative_shape_guard(x):
    if x.size() != (5, 1, 2, 3):
        return x.cos()
    return x.sin()


@case(args=lambda: (torch.randn(2, 3), torch.randn(2), torch.randn(3), torch.zeros(2, 3)))
def addr_alpha_beta_out(inp, vec1, vec2, out):
    return torch.addr(inp, vec1, vec2, alpha=2, beta=5, out=out), out


@case(args=lambda: (torch.zeros(5),))
def setattr_requires_grad_graph_breaks(x):
    z = x + 4
    x.requires_grad = True
    y = x * z
    return y, x.requires_grad
