"""Cases ported from pytorch/pytorch ``test/dynamo/test_functions.py`` (``FunctionTests``): each
function is the body of the ``make_test`` test of the same name (``test_`` dropped), re-typed
and adapted to run as a plain function on ``torch.randn(10, 10)`` arguments."""

# ruff: noqa: E711, E731, C408, UP018
from __future__ import annotations

import builtins
import collections
import functools
import itertools
import math
import operator
from typing import Any, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import sub

from . import case_registrar

case = case_registrar("test/dynamo/test_functions.py")

d = torch.ones(10, 10)
e = torch.nn.Linear(10, 10)
flag = True
clip01 = functools.partial(torch.clip, min=0.0, max=1.0)


class MyCls:
    a = 1


class CustomDictSubclass(collections.OrderedDict):
    pass


class MyNamedTuple(NamedTuple):
    first: torch.Tensor
    second: torch.Tensor

    def add(self) -> torch.Tensor:
        return self.first + self.second

    @staticmethod
    def static_method() -> int:
        return 1

    @classmethod
    def class_method(cls) -> str:
        return cls.__name__


class SmallNN(torch.nn.Module):
    def forward(self, x, y):
        combined = torch.cat((x, y), dim=1)
        out = torch.nn.ReLU()(combined)
        out = torch.nn.ReLU()(out)
        return out


def constant3(a, b):
    return a - b + (1.0 + 2)


def func_with_default(a, b, some_default_arg=True):
    if some_default_arg:
        return a - b


def udf_mul(x, y):
    return x * y


def udf_module(mod, x, y):
    return mod(x, y)


@functools.lru_cache
def lru_cached_sin(x, y, _=None):
    return torch.sin(x * y)


# -- arithmetic and constants -------------------------------------------------------------------
@case
def add(a, b):
    return a + b


@case
def add_(a, b):
    a_copy = a.clone()
    return a_copy.add_(b, alpha=5.0)


@case
def addcdiv(a, b, c):
    return torch.addcdiv(a, b, c, value=5.0)


@case
def addcdiv_(a, b, c):
    a_copy = a.clone()
    return a_copy.addcdiv_(b, c, value=5.0)


@case
def is_not_null(a, b):
    if a is not None and b is not None:
        return a + b


@case
def functools_partial(a, b):
    return clip01(a + b)


@case
def itertools_product(a, b):
    v = a
    for x, i in itertools.product([a, b], [1, 2]):
        v = v + x * i
    return v


@case
def itertools_chain(a, b):
    v = a
    for x in itertools.chain([a, b], [1, 2]):
        v = v + x
    return v


@case
def itertools_chain_from_iterable(a, b):
    v = a
    for x in itertools.chain.from_iterable([[a, b], [1, 2]]):
        v = v + x
    return v


@case
def obj_eq(a, b):
    v = a + b
    if MyCls() == None:
        return -1
    if MyCls() != None:
        v = v.sin()
    if MyCls() == MyCls():
        return -2
    if MyCls() != MyCls():
        return v + 1
    return -3


@case
def cls_eq(a, b):
    v = a + b
    if MyCls == None:
        return -1
    if MyCls != None:
        v = v.sin()
    if MyCls != MyCls:
        return -2
    if MyCls == MyCls:
        return v + 1
    return -3


@case
def obj_is(a, b):
    v = a + b
    if MyCls() is None:
        return -1
    if MyCls() is not None:
        v = v.sin()
    if MyCls() is MyCls():
        return -2
    if MyCls() is not MyCls():
        return v + 1
    return -3


@case
def cls_is(a, b):
    v = a + b
    if MyCls is None:
        return -1
    if MyCls is not None:
        v = v.sin()
    if MyCls is not MyCls:
        return -2
    if MyCls is MyCls:
        return v + 1
    return -3


@case
def itertools_combinations(a, b):
    combs = []
    for size in itertools.combinations((1, 2, 3, 4), 2):
        combs.append(torch.ones(size))
    return combs


@case
def np_iinfo(a):
    max_dim = np.iinfo(np.int16).max
    return a + max_dim


@case
def np_finfo(a):
    min_dim = np.finfo(np.float32).min
    return a + min_dim


@case
def constant1(a, b, c):
    return a - b * c + 1.0


@case
def constant2(a, b, c):
    return a - b * c + 1


@case
def constant3_(a):
    b = 1
    c = 2
    d = 3
    return b + c - d + a


@case
def constant4(a, b):
    c = 2
    d = 3
    if c > d:
        return a - b
    return b - a


@case
def cls_hasattr(x):
    if hasattr(MyCls, "a"):
        x = x + 1
    if hasattr(MyCls, "b"):
        x = x + 2
    return x


@case
def finfo(a, b):
    if torch.iinfo(torch.int32).bits == 32:
        return torch.finfo(a.dtype).min * b


@case
def globalfn(a, b):
    return sub(a, b)


@case
def viatorch(a, b):
    return torch.sub(a, b)


@case
def viamethod(a, b):
    return a.sub(b)


@case
def indirect1(a, b):
    t = a.sub
    return t(b)


@case
def indirect2(a, b):
    t = a.sub
    args = (b,)
    return t(*args)


@case
def indirect3(a, b):
    t = a.sub
    args = (b,)
    kwargs = {}
    return t(*args, **kwargs)


@case
def methodcall1(a, b, c):
    return constant3(a, b) * c


@case
def methodcall2(a, b):
    return constant3(a=b, b=a) + 1


@case
def methodcall3(a, b):
    return constant3(a, b=1.0) + b


@case(args=lambda: (torch.tensor([1]), 1.0))
def is_integer(t, m):
    return 2 * t if m.is_integer() else t


@case
def device_constant(a):
    return a + torch.ones(1, device=torch.device("cpu"))


@case
def tuple1(a, b):
    args = (a, b)
    return sub(*args)


@case
def tuple2(a, b):
    args = [a, b]
    return sub(*args)


@case
def is_in_onnx_export(x, y):
    if torch.onnx.is_in_onnx_export():
        return x - 1
    else:
        return y + 1


@case
def is_fx_tracing(x, y):
    if torch.fx._symbolic_trace.is_fx_tracing():
        return x - 1
    else:
        return y + 1


@case
def listarg1(a, b):
    return torch.cat([a, b])


@case
def listarg2(a, b):
    return torch.cat((a, b), dim=0)


@case
def listarg3(a, b):
    kwargs = {"tensors": (a, b), "dim": 0}
    return torch.cat(**kwargs)


@case
def listarg4(a, b):
    return torch.cat(tensors=[a, b], dim=0)


@case
def listarg5(a, b):
    args = [(a, b)]
    kwargs = {"dim": 0}
    return torch.cat(*args, **kwargs)


@case
def deque(a, b):
    d = collections.deque([a, b])
    d.append(a + 1)
    d.extend([a, b])
    d.insert(0, "foo")
    tmp = d.pop()
    another_deque = collections.deque([tmp])
    d.extendleft(another_deque)
    another_deque.clear()
    d.extend(another_deque)
    d[2] = "setitem"
    d = d.copy()
    d.append(d.popleft())
    empty = collections.deque()
    d.extend(empty)
    return list(d)


@case
def slice1(a):
    return a[5]


@case
def slice2(a):
    return a[:5]


@case
def slice3(a):
    return a[5:]


@case
def slice4(a):
    return a[2:5]


@case
def slice5(a):
    return a[::2]


@case
def slice6(a):
    return torch.unsqueeze(a, 0)[:, 2:]


@case
def range1(a):
    return torch.tensor(range(a.size(0)))


@case
def range2(x, y):
    r = x + y
    for i in range(x.size(0) + 2):
        r = r / y
    return r


@case
def unpack1(a):
    a, b = a[:5], a[5:]
    return a - b


@case
def unpack2(a):
    packed = [a[:5], a[5:]]
    a, b = packed
    return a - b


@case
def unpack3(a):
    packed = (a[:5], a[5:])
    a, b = packed
    return a - b


@case
def fn_with_self_set(a, b):
    return F.avg_pool2d(torch.unsqueeze(a, 0) * torch.unsqueeze(b, 1), kernel_size=2, padding=1)


@case
def return_tuple1(a, b):
    return (a - b, b - a, a, b)


@case
def globalvar(a, b):
    return a - b + d


@case
def globalmodule(x):
    return e(x)


@case
def inline_with_default(a, b, c):
    return func_with_default(a, b) * c


@case
def inner_function(x):
    def fn(x):
        return torch.add(x, x)

    return fn(x)


@case
def transpose_for_scores(x):
    new_x_shape = x.size()[:-1] + (2, 5)
    x = x.view(*new_x_shape)
    return x.permute(0, 2, 1)


@case
def return_tuple2(x):
    return (torch.add(x, x), x)


@case
def load_global_bool(x):
    if flag:
        return torch.add(x, x)
    else:
        return x


@case
def len_tensor(x):
    z = len(x)
    return torch.add(x, z)


@case
def len_constant_list(x):
    z = len([1, 2, 3])
    return torch.add(x, z)


@case
def len_constant_dict(x):
    z = len({"foo": "bar"})
    return torch.add(x, z)


@case
def dict_copy(x):
    z = dict({"foo": x + 1})
    return z


@case
def dict_keys(x):
    d = {3: x}
    keys = d.keys()
    d[4] = x + 1
    d2 = {3: 2, 4: "aa"}
    return 3 in keys, 4 in keys, 5 in keys, d2.keys() == keys


@case
def dict_values(x):
    d = {3: x}
    values = d.values()
    d[3] = x + 1
    d[4] = x + 2
    return len(values)


@case
def dict_setdefault1(x):
    d = {"a": 1, "b": 2}
    d.setdefault("a", 10)
    if d["a"] == 1:
        return x + 1
    else:
        return x - 1


@case
def dict_setdefault2(x):
    d = {"a": 1, "b": 2}
    d.setdefault("c", 10)
    if d["c"] == 10:
        return x + 1
    else:
        return x - 1


@case
def dict_setdefault3(x):
    d = {"a": 1, "b": 2}
    d.setdefault("c")
    if d["c"] is None:
        return x + 1
    else:
        return x - 1


@case
def dict_update_kwargs(x):
    d = {"a": 2}
    d.update(b=4)
    return x * d["a"] * d["b"]


@case
def defaultdict_setdefault1(x):
    d = collections.defaultdict.fromkeys("a", "b")
    d["a"] = 1
    d["b"] = 2
    d.setdefault("a", 10)
    if d["a"] == 1:
        return x + 1
    else:
        return x - 1


@case
def defaultdict_setdefault2(x):
    d = collections.defaultdict.fromkeys("a", "b")
    d["a"] = 1
    d["b"] = 2
    d.setdefault("c", 10)
    if d["c"] == 10:
        return x + 1
    else:
        return x - 1


@case
def defaultdict_setdefault3(x):
    d = collections.defaultdict.fromkeys("a", "b")
    d["a"] = 1
    d["b"] = 2
    d.setdefault("c")
    if d["c"] is None:
        return x + 1
    else:
        return x - 1


@case
def callable_lambda(x):
    if callable(lambda x: True):
        return x + 1
    else:
        return x - 1


@case
def callable_torch(x):
    if callable(torch.abs):
        return x + 1
    else:
        return x - 1


@case
def callable_builtin(x):
    if callable(sum):
        return x + 1
    else:
        return x - 1


@case
def len_constant_misc_iterables(x):
    a = len((1, 2, 3))
    b = len("test str")
    c = a + b
    return torch.add(x, c)


@case
def dict_kwargs(x):
    z = dict(text_embed=x + 1, other=x + 2)
    return z


@case
def ordered_dict_kwargs(x):
    z = collections.OrderedDict(sample=torch.ones(10))
    return z


@case
def float_(x):
    y = float(1.2)
    y += float("1.2")
    return torch.add(x, y)


@case
def is_floating_point(x):
    y = x + 1
    return torch.is_floating_point(y), torch.is_floating_point(input=y)


@case
def dtype(x):
    if x.dtype == torch.float32:
        return x + 1


@case
def get_default_dtype(x):
    if x.dtype == torch.get_default_dtype():
        return x + 1
    else:
        return x - 1


@case
def is_any_autocast_enabled(x):
    if torch._C._is_any_autocast_enabled():
        return x + 1
    else:
        return x - 1


@case
def list_compare_polyfill(x):
    for a, b, c in [
        [(1, 2, 3), (1, 2, 3), 7.77],
        [(1, 4, 3), (1, 2, 3), 3.33],
        [(1, 2), (1, 2, 3), 5.55],
        [(1, 2, 3), (1, 2), 11.11],
        [(1, -1, 3), (1, 2, 3), 13.33],
    ]:
        if a != b:
            x += 1 * c
        if a == b:
            x += 2 * c
        if a < b:
            x += 4 * c
        if a > b:
            x += 8 * c
        if a <= b:
            x += 16 * c
        if a >= b:
            x += 32 * c
    return x


@case
def promote_types(x):
    if x.dtype == torch.promote_types(torch.int32, torch.float32):
        return x + 1
    else:
        return x - 1


@case
def get_calculate_correct_fan(x):
    fan_in = torch.nn.init._calculate_correct_fan(x, "fan_in")
    return x + fan_in


@case
def is_complex(x):
    if torch.is_complex(x):
        return x + 1
    else:
        return x - 1


@case
def tensor_is_complex(x):
    if x.is_complex():
        return x + 1
    else:
        return x - 1


@case
def device(x):
    if not x.is_cuda:
        return x + 1


@case
def tensor_type(a, b):
    m = a.to(torch.float16)
    return b.type(m.type())


@case
def tensor_type4(a, b):
    m = a.type("torch.HalfTensor")
    return b.type(m.type())


@case
def tensor_element_size(a):
    if a.element_size() > 1:
        return (a + a.element_size(), a - a.element_size())
    return (a - a.element_size(), a + a.element_size())


@case
def ndim(x):
    if x.ndim == 2 and x.ndimension() == 2 and x.dim() == 2:
        return x + 1


@case
def T(x):
    return torch.ones_like(x.T)


@case
def mT(x):
    return torch.ones_like(x.mT)


@case
def is_sparse(x):
    if not x.is_sparse:
        return x + 1


@case
def shape1(x):
    if x.shape[0] == 10:
        return x + 1


@case
def shape2(x):
    if x.size(1) == 10:
        return x + 1


@case
def del_(a, b):
    c = a + 1
    d = c + 2
    del c, a
    return b + d


@case
def chunks1(x):
    chunk_size = 5
    assert x.shape[0] % chunk_size == 0
    assert x.shape[0] // chunk_size == 2
    return x[:chunk_size] - x[chunk_size:]


@case
def import1(x, y):
    import torch
    from torch import sub

    return sub(torch.add(x, y), y)


@case
def return_dict(x, y):
    z = [x + y, y, False]
    return {"x": x, "z": z, "a": x, "b": z, "c": x}


@case
def return_dict2(x, y):
    tmp = {"x": x}
    tmp["z"] = [x + y, y]
    tmp["y"] = y
    tmp["z"].append(False)
    return tmp


@case
def funcdef_closure(x, y):
    x = x + y + 1.0

    def inner(z):
        nonlocal x, y
        y = x + z + 20.0
        x = y + z + 10.0

    inner(2.0)
    inner(3.0)
    return x, y


@case
def inline_softmax(x, y):
    return torch.nn.Softmax(dim=-1)(x + y * 2)


@case
def dtype_compare(a, b):
    if a.dtype == torch.float16:
        return a + 10
    if a.dtype == torch.float32:
        return a - b * 32


@case
def build_list_unpack(a, b):
    it1 = (x + 1 for x in (a, b))
    it2 = (x - 1 for x in (a, b))
    return torch.cat([*it1, *it2], dim=-1)


@case
def tensor_len(a, b):
    return a + b + len(a) + b.__len__()


@case
def pop(a, b):
    ll = [a, b]
    ll.append(a + 1)
    ll.extend([b + 2, a + b])
    ll.pop(-1)
    ll.pop(0)
    ll.pop()
    v1, v2 = ll
    return v1 - v2


@case
def list_convert(a, b):
    ll = [a + 2, b]
    ll = tuple(ll)
    tmp = b + 3
    ll = list(ll)
    v1, v2 = ll
    return v1 - v2 + tmp


@case
def list_add(a, b):
    l1 = (a, b)
    l2 = ()
    l3 = l1 + l2
    return l3[0] + l3[1]


@case
def startswith(a, b):
    x = a + b
    if "foobar".startswith("foo") and "test" in constant3.__module__:
        x = x + 1
    return x


@case
def dict_ops(a, b):
    tmp = {"a": a + 1, "b": b + 2}
    assert tmp.get("zzz") is None
    v = tmp.pop("b") + tmp.get("a") + tmp.get("missing", 3) + tmp.pop("missing", 4)
    tmp.update({"d": 3})
    tmp["c"] = v + tmp["d"]
    if "c" in tmp and "missing" not in tmp:
        return tmp["c"] - tmp["a"] + len(tmp)


@case
def inline_jit__unwrap_optional(x):
    if torch.jit._unwrap_optional(x) is None:
        return torch.ones(2, 2)
    return x.sin()


@case
def zip_longest(x):
    list1 = [1, 2, 3]
    list2 = ["a", "b"]
    list3 = [True, False, True, False]
    return torch.sin(x + 1), list(itertools.zip_longest(list1, list2, list3, fillvalue=None))


@case
def call_dict1(x):
    d1 = dict()
    d1["x"] = x + 1
    d2 = collections.OrderedDict()
    d2["x"] = x + 2
    return d1["x"] + d2["x"] + 1


@case
def call_dict2(x):
    d1 = dict()
    d1["x"] = x
    d2 = collections.OrderedDict(d1)
    if isinstance(d2, collections.OrderedDict):
        return x + 1
    else:
        return x - 1


@case
def call_dict3(x):
    my_list = [("a", x), ("b", x + 1), ("c", x + 2)]
    d1 = dict(my_list)
    d1["a"] = x + 10
    d2 = collections.OrderedDict(my_list)
    d2["c"] = x + 20
    return d1["a"] + d2["c"] + 1


@case
def call_dict4(x):
    my_list = (("a", x), ("b", x + 1), ("c", x + 2))
    d1 = dict(my_list)
    d1["a"] = x + 10
    d2 = collections.OrderedDict(my_list)
    d2["c"] = x + 20
    return d1["a"] + d2["c"] + 1


@case
def dict_fromkeys(x, y):
    lst = ["a", "b"]
    d = dict.fromkeys(lst)
    d1 = dict.fromkeys(d, x + 1)
    d2 = collections.defaultdict.fromkeys(iter(d1), x - 2)
    d3 = collections.OrderedDict.fromkeys(tuple(lst), value=y)
    return d1["a"] * d2["b"] + d2["a"] + d1["b"] + d3["a"] + d3["b"] + 1


@case
def dict_copy2(x):
    my_list = [("a", x), ("b", x + 1), ("c", x + 2)]
    d1 = dict(my_list)
    d1["a"] = x + 10
    d2 = d1.copy()
    d2["a"] = x - 5
    d2["b"] = x + 3
    d3 = collections.OrderedDict(my_list)
    d3["c"] = x + 20
    d4 = d3.copy()
    d4["c"] = x - 10
    return d1["a"] * d2["a"] + d2["b"] + d3["c"] * d4["c"] + 1


@case
def dict_update(x, y, z):
    d = {"a": x, "b": y}
    d.update({"a": y - 1})
    d.update([("b", z + 1), ["c", z]])
    d.update(zip("ab", [z + 3, y + 2]))
    od = collections.OrderedDict(a=x * 3, b=y + 2)
    od.update({"a": y + 5})
    od.update([["b", z + 6], ("c", z - 7)])
    od.update(zip("ab", [z - 3, x + 2]))
    return d["a"] * od["a"] + od["c"] + d["b"] + od["b"] * d["c"]


@case
def min_max(a, b):
    c = a + b
    a = a.sum()
    b = b.sum()
    a = min(max(a, 0), 1)
    b = max(0, min(1, b))
    return max(a, b) - min(a, b) + c


@case
def symbool_to_int(x):
    if sum(s == -1 for s in x.size()) == 0:
        return x + 1
    else:
        return x - 1


@case
def map_sum(a, b, c, d):
    return sum(map(lambda x: x + 1, [a, b, c, d]))


@case
def sum_(a, b, c, d):
    return sum([a, b, c, d])


@case
def sum_with_start_arg(a, b, c, d):
    return sum([b, c, d], a)


@case
def sum_with_start_kwarg(a, b, c, d):
    return sum([b, c, d], start=a)


@case
def sum_shortcut():
    return sum([0, 1.0, 2, 3.0])


@case
def reduce(a, b, c, d):
    return functools.reduce(operator.add, [a, b, c, d])


@case
def reduce_with_initial(a, b, c, d):
    return functools.reduce(operator.add, [b, c, d], a)


@case
def tuple_contains(a, b):
    v1 = "a"
    v2 = "b"
    v3 = "c"
    vals1 = (v1, v2, v3)
    vals2 = ("d", "e", "f")
    if "a" in vals1 and "b" not in vals2:
        return a + b
    return a - b


@case
def set_update_bytecode(x):
    var = {"apple", "banana", "cherry"}
    if isinstance(var, set):
        return x + 1
    else:
        return x - 1


@case
def set_update_list_with_duplicated_items(x):
    list1 = ["apple", "banana", "apple"]
    list2 = ["orange", "banana"]
    if len({*list1, *list2}) == 3:
        return x + 1
    else:
        return x - 1


@case
def set_contains(a, b):
    vals = set(["a", "b", "c"])
    if "a" in vals:
        x = a + b
    else:
        x = a - b
    if "d" in vals:
        y = a + b
    else:
        y = a - b
    return x, y


@case
def set_intersection(a, b):
    set1 = {"apple", "banana", "cherry"}
    set2 = {"google", "microsoft", "apple"}
    intersection_set = set1.intersection(set2)
    x = a + b if "apple" in intersection_set else a - b
    y = a + b if "banana" in intersection_set else a - b
    return x, y


@case
def set_union(a, b):
    set1 = {"apple", "banana", "cherry"}
    set2 = {"google", "microsoft", "apple"}
    union_set = set1.union(set2)
    x = a + b if "apple" in union_set else a - b
    y = a + b if "banana" in union_set else a - b
    return x, y


@case
def set_difference(a, b):
    set1 = {"apple", "banana", "cherry"}
    set2 = {"google", "microsoft", "apple"}
    difference_set = set1.difference(set2)
    x = a + b if "apple" in difference_set else a - b
    y = a + b if "banana" in difference_set else a - b
    return x, y


@case
def tuple_iadd(a, b):
    output = (a, b)
    output += (a + b, a - b)
    return output


@case
def unpack_ex1(x):
    output = (x, x + 1, x + 2, x + 3)
    a, b, *cd = output
    return a - b / cd[0]


@case
def unpack_ex2(x):
    output = (x, x + 1, x + 2, x + 3)
    *ab, c, d = output
    return c - d / ab[0]


@case
def unpack_ex3(x):
    output = (x, x + 1, x + 2, x + 3)
    a, *bc, d = output
    return a - d / bc[0]


@case
def const_tuple_add1(x):
    output = (x, x + 1, x + 2, x + 3)
    output = () + output + ()
    return output[2] + output[3]


@case
def const_tuple_add2(x):
    output = (x, x + 1, x + 2, x + 3)
    output = (None,) + output + (None,)
    return output[2] + output[3]


@case
def list_truth(a, b):
    tmp = [1, 2, 3]
    if tmp:
        return a + b
    else:
        return a - b


@case
def list_reversed(a, b):
    tmp = [a + 1, a + 2, a + 3]
    return a + b + next(iter(reversed(tmp)))


@case
def list_sorted1(x):
    tmp = [1, 10, 3, 0]
    return x + 1, sorted(tmp), sorted(tmp, reverse=True)


@case
def list_sorted2(x):
    y = [("john", "A", 8), ("jane", "B", 5), ("dave", "B", 10)]
    return (x + 1, sorted(y), sorted(y, key=lambda student: student[2]),
            sorted(y, key=lambda student: student[2], reverse=True))


@case
def tuple_sorted(x):
    tmp = (1, 10, 3, 0)
    return x + 1, sorted(tmp), sorted(tmp, reverse=True)


@case
def dict_sorted(x):
    tmp = {1: "D", 10: "B", 3: "E", 0: "F"}
    return x + 1, sorted(tmp), sorted(tmp, reverse=True)


@case
def list_clear(a, b):
    tmp = [a + 1, a + 2]
    tmp.clear()
    tmp.append(a + b)
    return tmp


@case
def not_list(a):
    return not [a + 1]


@case
def islice_chain(a, b):
    tmp1 = [a + 1, a + 2]
    tmp2 = [a + 3, a + 4]
    a, b = list(itertools.islice(itertools.chain(tmp1, tmp2), 1, 3))
    c = next(itertools.islice(tmp1, 1, None))
    return a - b / c


@case
def namedtuple(a, b):
    mytuple = collections.namedtuple("mytuple", ["x", "y", "xy"])
    tmp = mytuple(a, b, a + b)
    return mytuple(tmp.x, tmp[1], tmp.xy + b)


@case
def namedtuple_defaults(a, b):
    mytuple = collections.namedtuple("mytuple", ["x", "y", "xy"], defaults=(None, 1, None))
    tmp = mytuple(a, xy=b)
    return mytuple(tmp.x, tmp[1], tmp.xy + b)


@case
def namedtuple_user_methods(a, b):
    mytuple = MyNamedTuple(a, b)
    return mytuple.add(), mytuple.static_method(), mytuple.class_method()


@case
def namedtuple_hasattr(a, b):
    mytuple = MyNamedTuple(a, b)

    def isinstance_namedtuple(obj) -> bool:
        return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")

    if isinstance_namedtuple(mytuple):
        return a + b
    else:
        return a - b


@case
def torch_size_hasattr(x):
    if hasattr(x.shape, "_fields"):
        return x + 1
    else:
        return x - 1


@case
def is_quantized(a, b):
    if not a.is_quantized:
        return a + b


@case
def fstrings1(a, b):
    x = 1.229
    tmp = f"{x:.2f} bar"
    if tmp.startswith("1.23"):
        return a + b


@case
def fstrings2(x):
    tmp = f"{x.shape[0]} bar"
    if tmp.startswith("10"):
        return x + 1


@case
def fstrings3(x):
    tmp = f"{x.__class__.__name__} foo"
    if tmp.startswith("Tensor"):
        return x + 1


@case
def fstrings4(x):
    tmp = f"{x.shape[0]} bar"
    if "10" in tmp:
        return x + 1


@case
def fstrings5(x):
    tmp = f"{x.shape[0]} bar"
    if "10" in (tmp + "haha"):
        return x + 1


@case
def fstrings6(x):
    tmp = f"{x.shape[0] + x.shape[1]}"
    if "20" in tmp:
        return x + 1


@case
def tensor_new_with_size(x):
    y = torch.rand(5, 8)
    z = x.new(y.size())
    assert z.size() == y.size()


@case
def tensor_new_with_shape(x):
    y = torch.rand(5, 8)
    z = x.new(y.shape)
    assert z.size() == y.size()


@case
def jit_annotate(x):
    y = torch.jit.annotate(Any, x + 1)
    return y + 2


@case
def is_contiguous_memory_format(tensor):
    if torch.jit.is_scripting():
        return None
    elif tensor.is_contiguous(memory_format=torch.contiguous_format):
        return tensor + 1


@case
def list_slice_assignment(x):
    m = [1, 2, 3, 4]
    m[1:] = [6] * (len(m) - 1)
    return x + 1


@case
def distributed_is_available(x):
    if torch.distributed.is_available():
        return x + 1
    else:
        return x - 1


@case
def torch_distributions_functions(x):
    normal = torch.distributions.Normal(x, torch.tensor(1))
    independent = torch.distributions.Independent(normal, 1)
    return independent.log_prob(x)


@case
def context_wrapping_nested_functions_no_closure(x):
    @torch.no_grad()
    def augment(x: torch.Tensor) -> torch.Tensor:
        return (x + 1) * 2

    return augment(x)


@case
def torch_from_numpy(x):
    a = x.numpy()
    b = torch.from_numpy(a)
    if b.size(0) == 1:
        return torch.tensor(True)
    else:
        return torch.tensor(False)


@case
def mean_sum_np(x):
    x_mean = np.mean(x.numpy(), 1)
    x_sum = np.sum(x_mean)
    x_sum_array = np.asarray(x_sum)
    return torch.from_numpy(x_sum_array)


@case
def ndarray_builtin_functions(x):
    a = x.numpy()
    return a + a, a - a


@case
def partials_torch_op_kwarg(x):
    par_mul = functools.partial(torch.mul, other=torch.ones(10, 10))
    return par_mul(x)


@case
def partials_torch_op_arg(x):
    par_mul = functools.partial(torch.mul, torch.ones(10, 10))
    return par_mul(x)


@case
def partials_udf_arg(x):
    par_mul = functools.partial(udf_mul, torch.ones(10, 10))
    return par_mul(x)


@case
def list_add_then_mutate(x):
    my_list = [1, x]
    y = x / 4.0
    my_list = my_list + [x / 2.0, 4]
    my_list.append(y)
    return sum(my_list)


@case
def list_expand_lhs(x):
    return sum(4 * [x])


@case
def in_not_in(x):
    mylist = [1, 2, 3, 4, 5, x]
    myotherlist = [1, 2, 3, 4, 5]
    assert 3 in mylist
    assert 6 not in myotherlist
    return sum(mylist)


@case
def partials_udf_kwarg(x):
    par_mul = functools.partial(udf_mul, y=torch.ones(10, 10))
    return par_mul(x)


@case
def partials_udf_kwarg_module(x, y):
    par_mod = functools.partial(udf_module, mod=SmallNN())
    return par_mod(x=x, y=y)


@case
def partials_udf_kwarg_method(x, y):
    par_mod = functools.partial(udf_module, mod=SmallNN().forward)
    return par_mod(x=x, y=y)


@case
def partials_lambda(x):
    multiply = lambda x, y: x * y
    triple = functools.partial(multiply, y=3)
    return triple(x)


@case
def inline_lru_cache_fn_with_default_args(a, b):
    return lru_cached_sin(a, 2, b)


@case(args=lambda: (torch.randn(10), 12))
def math_radians(x, a):
    return x + math.radians(a)


@case
def compare_constant_and_tensor(x):
    return [op(-10, x) for op in (operator.lt, operator.le, operator.gt, operator.ge,
                                  operator.ne, operator.eq)]


@case(args=lambda: (torch.ones(4), 1))
def pos(x, y):
    return operator.pos(x) * +y


@case(args=lambda: (torch.ones(1), 1))
def truth(x, y):
    return operator.truth(x) and bool(y)


@case
def complex_closure(y):
    def a():
        def x(z):
            return y + z

        return x

    return a()(y)


@case(args=lambda: (torch.rand(10, 2), torch.rand(10, 8, 6)))
def tensor_size_indexed_by_symint(x, y):
    index = x.shape[-1]
    return x + y.shape[index]


# -- partials as inputs and across graph breaks, operator module, range iterators, map ---------
def udf_mul2(x, y, z):
    return x * y * z


def _multiply(x, y):
    return x * y


@case(args=lambda: (functools.partial(_multiply, y=3), functools.partial(_multiply, y=2),
                    torch.randn(2, 2)))
def partials_as_input_partials_lambda(f0, f1, x):
    return f0(x) * f1(x)


@case(args=lambda: (functools.partial(SmallNN(), y=torch.randn(2, 2)),
                    functools.partial(SmallNN(), y=torch.randn(2, 2)), torch.randn(2, 2)))
def partials_as_input_partials_mod(f0, f1, x):
    return f0(x) * f1(x)


@case(args=lambda: (functools.partial(udf_mul, y=torch.randn(2, 2)),
                    functools.partial(udf_mul, y=torch.randn(2, 2)), torch.randn(2, 2)))
def partials_as_input_UDF(f0, f1, x):
    return f0(x) * f1(x)


@case(args=lambda: (udf_mul, udf_mul, torch.randn(2, 2)))
def partials_graph_break_reconstruct(udf_mul_0, udf_mul_1, x):
    lambda0 = functools.partial(udf_mul_0, y=x)
    lambda1 = functools.partial(udf_mul_1, y=x)
    torch._dynamo.graph_break()  # (the test prints "break")
    return torch.mul(lambda0(x), lambda1(x))


@case(args=lambda: (udf_mul, torch.randn(2, 2)))
def partials_graph_break_reconstruct_mix_no_source(udf_mul_0, x):
    udf_add_1 = lambda x, y: x + y
    lambda0 = functools.partial(udf_mul_0, y=x)
    lambda1 = functools.partial(udf_add_1, x)
    torch._dynamo.graph_break()
    return torch.mul(lambda0(x), lambda1(x))


@case(args=lambda: (udf_mul2, torch.randn(2, 2)))
def partials_graph_break_reconstruct_args_and_kwargs(udf_mul_0, x):
    lambda0 = functools.partial(udf_mul_0, x, 4, z=x)
    lambda1 = functools.partial(udf_mul_0, 4, z=x)
    return torch.mul(lambda0(), lambda1(5))


@case(args=lambda: ())
def manual_seed():
    torch.manual_seed(3)
    return torch.randint(0, 5, (5,))


def _bar(x, **kwargs):
    return x + x


@case(args=lambda: (torch.rand(1), 10))
def partial_across_graph_break_uninvoked(x, i):
    def inner():
        torch._dynamo.graph_break()  # (the test prints)
        return op(x)

    op = functools.partial(_bar, dim=10)
    x = inner()
    op = functools.partial(_bar, other=10)
    return inner() + x


@case(args=lambda: (torch.rand([2]),))
def no_recompile_inner_function(inp):
    def g(y):
        return inp + y

    torch._dynamo.graph_break()
    return g(torch.ones([1]))  # (torch.rand in the test)


@case(args=lambda: (torch.rand([2]),))
def no_recompile_inner_lambda(inp):
    g = lambda y: inp + y
    torch._dynamo.graph_break()
    return g(torch.ones([1]))


@case(args=lambda: (torch.randn(1), torch.randn(1)))
def non_inlined_closure(x, y):
    one = lambda x, y: x + y

    def inner():
        torch._dynamo.graph_break()  # force no inlining
        return one(x, y)

    res = inner()
    one = lambda x, y: x - y
    res += inner()
    return res


@case(args=lambda: (torch.randn(2), torch.randn(2), "int16"))
def np_constant_collections_as_input_int(a, b, info_or_dt):
    return a + np.iinfo(info_or_dt).max


@case(args=lambda: (torch.randn(2), torch.randn(2), np.dtype("float16")))
def np_constant_collections_as_input_float(a, b, info_or_dt):
    return a + np.finfo(info_or_dt).max


@case(args=lambda: (torch.zeros(3, dtype=int), np.iinfo(np.dtype(int))))
def np_constant_collections_guards(a, info):
    return a + info.max


@case(args=lambda: (torch.randn(10),))
def compare_constant_and_tensor_ops(x):
    ops = [operator.lt, operator.le, operator.gt, operator.ge, operator.ne, operator.eq,
           operator.is_, operator.is_not]
    return [op(-10, x) for op in ops]


@case(args=lambda: (10, torch.ones(1)))
def index(x, t):
    v = operator.index(x)
    return torch.mul(t, v)


@case(args=lambda: (torch.ones(1), 1))
def truth_tensor(x, y):
    return operator.truth(x) and bool(y), x + 1


@case(args=lambda: (torch.randn(3),))
def unary_fold_op(x):
    a = range(-10, 10)
    return [list(map(op, a)) for op in (operator.abs, abs, operator.neg, operator.pos,
                                        operator.truth)], x + 1


@case(args=lambda: (torch.randn(3),))
def unary_fold_op_seq(x):
    a = [tuple(range(-10, i)) for i in range(10)]
    return tuple(map(operator.length_hint, a)), x + 1


@case(args=lambda: (torch.randn(3, 4), torch.randn(3, 4)))
def attrgetter(x, y):
    out = []
    for attrs in (("shape",), ("data.shape",), ("device", "shape"),
                  ("device", "shape", "data.shape")):
        getter = operator.attrgetter(*attrs)
        out.append((getter(x), getter(y)))
    return out


@case(args=lambda: (torch.randn(3, 4), torch.randn(3, 4)))
def itemgetter(x, y):
    out = []
    for items in ((0,), (slice(1, 3),), (0, 1), (slice(1, 3), 0, 1)):
        getter = operator.itemgetter(*items)
        out.append((getter(x), getter(y)))
    return out


@case(args=lambda: (torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4)))
def methodcaller(x, y, z):
    out = []
    for name, args, kwargs in (("size", (), {}), ("size", (0,), {}), ("add", (z,), {}),
                               ("add", (z,), {"alpha": 2.0})):
        caller = operator.methodcaller(name, *args, **kwargs)
        out.append((caller(x), caller(y)))
    return out


@case(args=lambda: (torch.tensor([1.0]),))
def range_iterator_graph_break(x):
    it = range(1, 7, 2).__iter__()
    y = x + next(it)
    torch._dynamo.graph_break()
    return y + next(it) + next(it)


@torch.compiler.disable
def _two_more(y, it):
    return y + next(it) + next(it)


@case(args=lambda: (torch.tensor([1.0]),))
def range_iterator_graph_break_2(x):
    it = range(1, 10, 2).__iter__()
    y = x + next(it)
    z = _two_more(y, it)
    k = next(it)
    assert k == 7
    return z + k


range_iterator_type = type(iter(range(0)))


@case
def range_iterator(a, b):
    it = range(5).__iter__()
    if isinstance(it, range_iterator_type):
        return a + b
    return a - b


@case
def range_iterator_2(a, b):
    it = iter(range(5))
    if isinstance(it, range_iterator_type):
        return a + b
    return a - b


@case(args=lambda: (torch.ones(1),))
def range_with_slice_index(x):
    acc = 1
    for k in range(2)[1::2]:
        acc *= acc * k
    return x * acc


@case(args=lambda: (torch.ones(1),))
def range_with_index(x):
    acc = 1
    acc *= acc * range(10, 20, 2)[2]
    return x * acc


@case(args=lambda: ())
def to():
    t = torch.ones(2)
    y = t.to("meta")
    return y.shape, y.device


@case(args=lambda: (np.zeros(4), np.s_[...], np.ones(4)))
def elipsis(a, ind, val):
    a[ind] = val
    return a


@case(args=lambda: (torch.randn(2),))
def round(t):  # (the case's name shadows the builtin in this module: builtins.round)
    return t + builtins.round(1.00002000011, 7)


@case
def map_max(a, b):
    return max(map(lambda x: x.sum(), [a, b]))


@case
def map_max_const(a):
    return max(map(lambda x: x, [1, 2, 3])), a + 1


@case
def map_list(a, b):
    return list(map(lambda x: x + 1, [a, b]))


@case
def map_tuple(a, b):
    return tuple(map(lambda x: x + 1, [a, b]))


@case
def map_iter(a, b):
    it = iter(map(lambda x: x + 1, [a, b]))
    return next(it)


@case
def map_zip_dict(a):
    d = dict(zip(map(lambda x: x + 1, [0, 1, 2]),
                 [map(lambda x: x - 1, [y]) for y in [3, 4, 5]]))
    return list(d[3])[0], a + 1  # noqa: RUF015


@case
def map_dict_fromkeys(a):
    return dict.fromkeys(map(lambda x: x + 1, [0, 1])), a + 1


@case
def map_set(a):
    return set(map(lambda x: x + 1, [0, 1])), a + 1


@case
def map_reduce(a, b):
    return functools.reduce(lambda x, y: x + y, map(lambda x: x + 1, [a, b]))


@case
def map_sorted(a):
    return sorted(map(lambda x: x + 1, [0, 4, 3, 1, 2])), a + 1


@case
def map_list_extend(a, b, c):
    l = [a]
    l.extend(map(lambda x: x + 1, [b, c]))
    return l


@case
def map_list_slice_assign(a, b, c, d, e):
    l = [a, b, c]
    l[1:2] = map(lambda x: x + 1, [d, e])
    return l


@case
def map_deque_extendleft(a, b, c):
    d = collections.deque([a])
    d.extendleft(map(lambda x: x + 1, [b, c]))
    return d


@case
def map_str_join(a):
    return "".join(map(lambda x: x, ["a", "b", "c"])), a + 1


@case(args=lambda: (torch.ones(3, 3),))
def map_with_graph_break(a):
    a += 1

    def g(x):
        nonlocal a
        a += 1
        return x + 1

    m = map(g, [1, 2, 3, 4, 5])
    a += next(m)
    torch._dynamo.graph_break()
    a += next(m)
    return a
