"""Cases ported from pytorch/pytorch ``test/dynamo/test_repros.py`` (``ReproTests``): small
reproductions of bugs found in real models (detectron2 boxes, reformer chunking, longformer
views, dataclass outputs, generators over modules), re-typed and adapted."""

from __future__ import annotations

import collections
import dataclasses
import math

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
