"""Cases ported from pytorch/pytorch ``test/dynamo/test_misc.py`` (``MiscTests``): the function
each test compiles, re-typed and adapted to run on small tensor arguments; the name is the
test's name with ``test_`` dropped."""

# ruff: noqa: E731
from __future__ import annotations

import collections
import dataclasses
import functools
import math
import operator
import typing
from typing import Optional

import torch
import torch.nn.functional as F

from . import case_registrar

case = case_registrar("test/dynamo/test_misc.py")

mytuple = collections.namedtuple("mytuple", ["a", "b", "ab"])
Point = collections.namedtuple("Point", ["x", "y"], defaults=(0,))


class Config:
    scale = 2.0
    use_bias = True


class UserGetattr:
    def __init__(self, t):
        self.t = t

    def __getattr__(self, name):
        if name == "twice":
            return self.t * 2
        raise AttributeError(name)


class WithProperty:
    def __init__(self, t):
        self._t = t

    @property
    def doubled(self):
        return self._t * 2


class Vec:
    """A user class with ``__eq__`` (test_user_defined_class_eq-style)."""

    def __init__(self, n):
        self.n = n

    def __eq__(self, other):
        return isinstance(other, Vec) and self.n == other.n


@dataclasses.dataclass
class Pair:
    first: torch.Tensor
    second: torch.Tensor
    weight: float = 0.5


class TinyMLP(torch.nn.Module):
    def __init__(self, n=10):
        super().__init__()
        self.fc = torch.nn.Linear(n, n)

    def forward(self, x):
        return F.relu(self.fc(x))


@functools.lru_cache(maxsize=None)
def cached_factor(n):
    return n * 3 + 1


def my_decorator(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) + 1

    return wrapper


@my_decorator
def decorated(x):
    return x * 2


# -- arguments, packing, unpacking --------------------------------------------------------------
@case(args=lambda: (torch.randn(10, 10), torch.randn(10, 10), True))
def boolarg(aa, bb, flag):
    if flag:
        return aa - bb
    else:
        return bb - aa


@case(args=lambda: ([torch.randn(10, 10) for _ in range(3)],))
def callpacked(args):
    a, b, c = args
    return a - b * c


@case
def inplace(a, b):
    x = a.clone()
    x.add_(b)
    x.mul_(2)
    return x


@case
def unpack4(a, b):
    a = a[:5, :]
    b = b[:5, :]
    x, y = a.size()
    o = torch.empty((x, y))
    torch.add(a, b, out=o)
    return o


@case
def unpack5(a, b):
    a = a[:5, :]
    b = b[:5, :]
    x, y = a.shape
    o = torch.empty((x, y))
    torch.add(a, b, out=o)
    return o


@case
def matmul1(a, b):
    return a @ b


@case
def int_shape_binops(x):
    y = 15 - x.shape[0]
    y = 4 + y
    y = 5 * y
    y = 2 % y
    y = 3**y
    y = 10 // y
    y = pow(2, y)
    y = 10 / y
    return x + y


@case
def shape_int_inplace_binops(x):
    p = x.shape[0]
    p += 2
    p -= 2
    p **= 2
    p /= 2
    p *= 2
    p //= 2
    p %= 2
    return x + p


@case
def int_int_comparisons(x):
    if 2 != 2:
        out = 1
    elif 2 < 1:
        out = 1
    elif 1 > 2:
        out = 1
    elif 1 >= 2:
        out = 1
    elif 2 <= 1:
        out = 1
    elif 2 == 2:
        out = 2
    else:
        out = 1
    return x + out


@case
def shape_int_comparisons(x):
    a = x.shape[0]
    if a != 10:
        out = 1
    elif a < 2:
        out = 1
    elif a > 12:
        out = 1
    elif a >= 12:
        out = 1
    elif a <= 2:
        out = 1
    elif a == 10:
        out = 2
    else:
        out = 1
    return x + out


@case
def param_shape_binops(x):
    p = torch.nn.Parameter(torch.ones(3, 4))
    y = 15 - x.shape[0] + p.shape[0]
    return x + y


@case
def user_getattr1(x):
    return UserGetattr(x).twice + 1


@case
def user_property(x):
    return WithProperty(x).doubled - x


@case
def numel(a):
    return (a + a.numel() + torch.numel(a), a + a.nelement())


@case
def pair(a):
    return torch.zeros(torch.nn.modules.utils._pair(a.size())) + a


@case
def tensor_item_capture(a, b):
    return (a + b).sum().item()


@case
def namedtuple1(a, b):
    tmp = mytuple(a, b, a + b)
    return mytuple(tmp.a, tmp[1], tmp.ab + b)


@case
def namedtuple2(a, b):
    tmp = mytuple(a, b, a + b)
    x, y, z = tmp
    return x + y - z + tmp.ab * len(tmp)


@case
def namedtuple3(a, b):
    tmp = mytuple(a, b, a + b)
    if isinstance(tmp, mytuple):
        return tmp.a + tmp.b + tmp.ab
    return a


@case
def namedtuple_replace_asdict(a, b):
    p = Point(a)
    q = p._replace(y=b)
    d = q._asdict()
    return d["x"] + d["y"] + p.y, Point._fields


@case
def is_tensor(x):
    if torch.is_tensor(x):
        return x + 1
    return x


@case
def is_tensor2(x):
    if torch.is_tensor(x) and isinstance(x, torch.Tensor):
        return x + 1
    return x


@case
def dict_mutation_side_effect(a):
    d = {"a": a, "b": a + 1}
    d["c"] = d["a"] + d.pop("b")
    return d


@case
def dict_order_keys(x):
    d = {"b": x + 1, "a": x + 2}
    out = x
    for k, v in d.items():
        out = out * v if k == "a" else out + v
    return out, list(d.keys())


@case
def user_defined_class_eq(x):
    if Vec(2) == Vec(2) and Vec(2) != Vec(3):
        return x + 1
    return x - 1


@case
def user_defined_class_in_list(x):
    items = [Vec(1), Vec(2)]
    if Vec(2) in items:
        return x * 2
    return x


@case
def nested_closure(x):
    def inner():
        return x + 1

    return inner()


@case
def nested_closure_mutation(x):
    count = 0

    def bump(t):
        nonlocal count
        count += 1
        return t * count

    return bump(x) + bump(x), count


@case
def return_nested_function(x):
    def scale(t):
        return t * 3

    return x + 1, scale


@case
def return_closure(x):
    k = 4

    def add_k(t):
        return t + k

    return add_k(x), add_k


@case
def enumerate_list(a, b):
    out = a
    for i, t in enumerate([a, b], start=1):
        out = out + t * i
    return out


@case
def builtin_isinstance(x):
    results = [isinstance(x, torch.Tensor), isinstance(3, int), isinstance((1,), (list, tuple))]
    if all(results):
        return x + 1
    return x


@case
def repeat_interleave(x):
    return x.repeat_interleave(2, dim=0)


@case
def no_grad_block(x):
    with torch.no_grad():
        y = x * 2
    return y + 1


@case
def enable_grad_block(x):
    with torch.no_grad():
        with torch.enable_grad():
            y = x * 2
    return y


@case
def set_grad_enabled(x):
    with torch.set_grad_enabled(False):
        y = x.sin()
    return y


@case
def nn_module_built_inside(x):
    layer = torch.nn.ReLU()
    return layer(x - 0.5)


@case
def nn_module_linear_built_inside(x):
    torch.manual_seed(0)
    layer = torch.nn.Linear(10, 4)
    return layer(x)


@case
def nn_module_user_class_built_inside(x):
    torch.manual_seed(0)
    return TinyMLP()(x)


@case
def nn_sequential_built_inside(x):
    seq = torch.nn.Sequential(torch.nn.Tanh(), torch.nn.Softmax(dim=-1))
    return seq(x)


@case
def new_empty(x):
    return x.new_empty((2, 3)).fill_(1.0) + x[:2, :3]


@case
def new_zeros_ones_full(x):
    return x.new_zeros(3) + x.new_ones(3) + x.new_full((3,), 2.0) + x[0, :3]


@case
def tensor_new_list(x):
    return x.new([1.0, 2.0]) + 1


@case
def tensor_type_no_arg(x):
    if x.type() == "torch.FloatTensor":
        return x + 1
    return x


@case
def tensor_type_cast(x):
    return x.type(torch.float64) * 2


@case
def type_name(x):
    if type(x).__name__ == "Tensor":
        return x + 1
    return x - 1


@case
def class_name_attr(x):
    name = x.__class__.__name__
    return x * len(name)


@case
def is_floating_point_method(x):
    if x.is_floating_point():
        return x + 1
    return x


@case
def is_floating_point_int(x):
    y = x.long()
    if y.is_floating_point():
        return y + 1
    return y - 1


@case
def typing_cast(x):
    y = typing.cast(torch.Tensor, x + 1)
    return y * 2


@case
def typing_optional_annotation(x):
    y: Optional[torch.Tensor] = None
    if y is None:
        y = x + 1
    return y


@case
def jit_annotate_list(x):
    out = torch.jit.annotate(typing.List[torch.Tensor], [])
    out.append(x + 1)
    out.append(x * 2)
    return out


@case
def jit_is_scripting(x):
    if torch.jit.is_scripting():
        return x
    return x + 1


@case
def dataclass_fields(x, y):
    p = Pair(x, y)
    return p.first * p.weight + p.second


@case
def functools_wraps(x):
    return decorated(x)


@case
def lru_cache_constant(x):
    return x * cached_factor(2)


@case
def lru_cache_local(x):
    @functools.lru_cache
    def factor(n):
        return n + 1

    return x * factor(3)


@case
def config_class_attr(x):
    if Config.use_bias:
        return x * Config.scale + 1
    return x * Config.scale


@case
def min_max_over_iterable(x):
    sizes = [x.shape[0], 3, 7]
    return x[: min(sizes)] * max(sizes)


@case
def string_format(x):
    s = "{}-{}".format(x.dim(), "d")
    if s == "2-d":
        return x + 1
    return x


@case
def string_join_split(x):
    parts = "a,b,c".split(",")
    return x * len(",".join(parts))


@case
def list_index(x):
    names = ["a", "b", "c"]
    return x * names.index("c")


@case
def list_count_and_reverse(x):
    items = [1, 2, 2, 3]
    items.reverse()
    return x * items.count(2) + items[0]


@case
def iter_set(x):
    s = {1, 2, 3}
    out = x
    for v in sorted(s):
        out = out + v
    return out


@case
def zip_dict(a, b):
    d = dict(zip(["a", "b"], [a, b]))
    return d["a"] - d["b"]


@case
def dict_comprehension(a):
    d = {f"k{i}": a * i for i in range(3)}
    return sum(d.values())


@case
def dict_items_unpack(a, b):
    d = {"x": a, "y": b}
    return [k + "!" for k in d] , [v.sum() for _, v in d.items()][0] + 1


@case
def list_comprehension_cond(a):
    return [a * i for i in range(5) if i % 2]


@case
def nested_list_comprehension(a):
    return [[a + i + j for j in range(2)] for i in range(2)]


@case
def generator_sum(a):
    return sum(a * i for i in range(4))


@case
def any_all(a):
    flags = [a.dim() == 2, a.shape[0] > 1]
    if any(flags) and all(flags):
        return a + 1
    return a


@case
def builtin_abs_round_divmod(x):
    q, r = divmod(17, 5)
    return x * abs(-q) + round(2.6) + r


@case
def math_functions(x):
    return x * math.sqrt(16) + math.floor(2.5) + math.ceil(0.2) + math.pi


@case
def operator_getitem_attrgetter(x):
    get0 = operator.itemgetter(0)
    shape = operator.attrgetter("shape")
    return x * get0(shape(x))


@case
def chained_comparison(x):
    n = x.shape[0]
    if 0 < n <= 10:
        return x + 1
    return x


@case
def while_loop_constant(x):
    i = 0
    while i < 3:
        x = x * 2
        i += 1
    return x


@case
def for_break_continue(x):
    for i in range(10):
        if i == 1:
            continue
        if i == 4:
            break
        x = x + i
    return x


@case
def try_except_constant(x):
    try:
        k = {"a": 1}["b"]
    except KeyError:
        k = 2
    return x * k


@case
def assert_shape(x):
    assert x.shape == (10, 10), "bad shape"
    return x + 1


@case
def tensor_methods_chain(x):
    return x.t().contiguous().view(-1).reshape(5, 20).sum(dim=1).unsqueeze(0)


@case
def tensor_indexing_mixed(x):
    return x[1:3, None, ::2], x[..., 0], x[[0, 2]], x[x > 0]


@case
def tensor_setitem(x):
    y = x.clone()
    y[0] = 1.0
    y[:, 1] = y[:, 2]
    return y


@case
def tensor_split_unbind(x):
    a, b = x.split(5)
    c = x.unbind(1)
    return a + b, c[3]


@case
def tensor_chunk_cat(x):
    parts = x.chunk(5, dim=1)
    return torch.cat(parts[::-1], dim=1)


@case
def tensor_stack_list(a, b):
    return torch.stack([a, b, a * b])


@case
def tensor_max_dim(x):
    values, indices = x.max(dim=1)
    return values + indices


@case
def tensor_return_types(x):
    out = torch.sort(x, dim=0)
    return out.values - x, out.indices


@case
def tensor_size_ops(x):
    s = x.size()
    return x.view(s[1], s[0]) + x.new_zeros(s), len(s), s.numel()


@case
def tensor_dtype_device(x):
    return torch.zeros(3, dtype=x.dtype, device=x.device) + x[0, :3]


@case
def tensor_to_dtype(x):
    return x.to(torch.float64).to(torch.int32), x.double(), x.half().float()


@case
def tensor_requires_grad(x):
    if x.requires_grad:
        return x + 1
    return x - 1


@case
def tensor_detach(x):
    return x.detach() * 2


@case
def torch_where_clamp(x):
    return torch.where(x > 0, x, torch.zeros_like(x)).clamp(max=0.5)


@case
def functional_ops(x):
    return F.gelu(x) + F.silu(x) + F.softmax(x, dim=-1) + F.dropout(x, p=0.0)


@case
def layer_norm_functional(x):
    return F.layer_norm(x, (10,))


@case
def einsum(a, b):
    return torch.einsum("ij,jk->ik", a, b)


@case
def arange_linspace(x):
    return x + torch.arange(10) + torch.linspace(0, 1, 10)


@case
def global_torch_dtype(x):
    dt = torch.float32
    return x.to(dt) + 1


@case
def default_kwarg_function(x):
    def f(t, *, scale=2, shift=1):
        return t * scale + shift

    return f(x) + f(x, scale=3)


@case
def star_args_kwargs(x):
    def f(*args, **kwargs):
        return sum(args) * kwargs["k"]

    return f(x, x, x, k=2)


@case
def recursion_small(x):
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    return x * fact(4)


@case
def lambda_immediately(x):
    return (lambda t: t.relu() + 1)(x)


@case
def map_filter(a, b):
    doubled = list(map(lambda t: t * 2, [a, b]))
    kept = list(filter(lambda i: i % 2 == 0, range(5)))
    return doubled[0] + doubled[1] * len(kept)


@case
def tuple_compare_slicing(x):
    t = (1, 2, 3, 4)
    if t[1:3] == (2, 3) and t[::-1][0] == 4:
        return x + 1
    return x


@case
def str_methods(x):
    name = "Linear_Layer"
    if name.lower().startswith("linear") and name.endswith("Layer") and "_" in name:
        return x * len(name.replace("_", ""))
    return x


@case
def global_class_instance_attr(x):
    return x * Config().scale


@case
def torch_no_grad_decorator(x):
    @torch.no_grad()
    def inner(t):
        return t * 2

    return inner(x) + 1


@case
def hasattr_tensor(x):
    if hasattr(x, "shape") and not hasattr(x, "nope"):
        return x + 1
    return x


@case
def getattr_default(x):
    return x * getattr(Config, "missing", 3) + getattr(Config, "scale")


@case
def tensor_grad_none(x):
    if x.grad is None:
        return x + 1
    return x


@case
def torch_finfo_eps(x):
    return x + torch.finfo(x.dtype).eps


@case
def sym_size_arith(x):
    n, m = x.shape
    return x.reshape(n * m // 2, 2) + (n - m)


@case
def deque_maxlen(a, b):
    q = collections.deque(maxlen=2)
    q.append(a)
    q.append(b)
    q.append(a + b)
    return q[0] + q[-1], len(q)


@case
def deque_rotate_left(a, b):
    q = collections.deque([a, b, a * 2])
    q.appendleft(b * 3)
    q.rotate(1)
    return list(q)


@case
def defaultdict_list(a, b):
    groups = collections.defaultdict(list)
    for key, t in [("x", a), ("y", b), ("x", b)]:
        groups[key].append(t)
    return sum(groups["x"]) - groups["y"][0]


@case
def counter_constant(x):
    c = collections.Counter("hello")
    return x * c["l"]


@case
def ordered_dict_move(x):
    od = collections.OrderedDict(a=x, b=x + 1)
    od.move_to_end("a")
    return list(od.values())[0] * 2


@case
def dict_get_default_and_in(x):
    cfg = {"scale": 2}
    if "bias" not in cfg:
        return x * cfg.get("scale", 1) + cfg.get("bias", 0.5)
    return x


@case
def dict_keys_values_eq(x):
    a = {"p": 1, "q": 2}
    b = dict(q=2, p=1)
    if a.keys() == b.keys() and list(a.values()) == sorted(b.values()):
        return x + 1
    return x


@case
def dict_view_set_ops(x):
    a = {"p": 1, "q": 2}
    b = {"q": 3, "r": 4}
    both = a.keys() & b.keys()
    return x * len(both) + len(a.keys() | b.keys())


@case
def distributions_normal_sample_shape(x):
    dist = torch.distributions.Normal(torch.zeros_like(x), torch.ones_like(x))
    return dist.log_prob(x) + dist.mean, dist.stddev


@case
def distributions_categorical(x):
    dist = torch.distributions.Categorical(logits=x)
    return dist.log_prob(torch.zeros(10, dtype=torch.long)), dist.entropy()


@case
def numpy_on_tensor(x):
    return torch.from_numpy(x.numpy() * 2)


# -- _test_misc_part2.py (MiscTestsPart2): torch._check, config objects, dicts of tensors ---------
@case(args=lambda: (torch.randn(3),))
def check_raises_at_runtime_when_predicate_false_constant_and_message_None(x):
    try:  # (the test asserts the call raises: here the function catches it)
        torch._check(x.shape[0] > 3)
    except RuntimeError as e:
        return str(e).split(".")[0], x - 1
    return x + 1


@case(args=lambda: (torch.randn(3),))
def check_raises_at_runtime_when_predicate_false_constant_and_message_has_no_closure(x):
    try:
        torch._check(x.shape[0] > 3, lambda: "Shape is not greater than 3")
    except RuntimeError as e:
        return str(e), x - 1
    return x + 1


@case(args=lambda: (torch.randn(4),))
def check_passes_when_predicate_true(x):
    torch._check(x.shape[0] > 3, lambda: "Shape is not greater than 3")
    return x + 1


@case(args=lambda: (torch.randn(10),))
def assert_(x):  # test_assert's fn1 (the test asserts the call raises)
    try:
        assert x.shape != x.shape  # noqa: S101
    except AssertionError:
        return x - 1
    return x + 1


@case(args=lambda: (torch.randn(10),))
def assert2(x):  # test_assert's fn2
    assert x.shape == x.shape  # noqa: S101
    return x.abs()


class Cfg:
    def __init__(self) -> None:
        self.val = 0.5
        self.count = 3


def _cfg(val=None, count=None):
    cfg = Cfg()
    if val is not None:
        cfg.val = val
    if count is not None:
        cfg.count = count
    return cfg


@case(args=lambda: (torch.zeros(1), _cfg(val=1.0)))
def config_obj(x, cfg):
    for i in range(cfg.count):
        x = x + cfg.val
    return x


@case(args=lambda: (torch.zeros(1), _cfg(count=10)))
def config_getattr_default(x, cfg):
    if getattr(cfg, "just_add_7", False):
        return x + 7
    for i in range(cfg.count):
        x = x + cfg.val
    return x


@case(args=lambda: (torch.zeros(10, 20), torch.Size([10, 20])))
def size_input(x, s):
    a, b = s
    return x + (a - b)


@case(args=lambda: (torch.zeros(10, 20), [10, 20]))
def size_input_list(x, s):
    a, b = s
    return x + (a - b)


@case(args=lambda: (torch.Tensor([100]), torch.Tensor([100])))
def cell_output1(a, b):
    out = None

    def fn(a, b):
        nonlocal out
        out = a + b * 10

    result = fn(a, b)
    return result, out


@case(args=lambda: ({"a": torch.Tensor([100]), "b": torch.Tensor([200])},))
def tensor_dict1(inputs):
    return inputs["a"] - inputs["b"] * 1.5


@case(args=lambda: ({"a": torch.Tensor([100]), "b": torch.Tensor([200])},
                    {"b": torch.Tensor([100]), "c": torch.Tensor([200])}))
def tensor_dict3(inputs_a, inputs_b):
    total = torch.zeros(1)
    input_keys = inputs_a.keys() | inputs_b.keys()
    for k in sorted(input_keys):  # (a set's order: sorted, so eager and compiled add alike)
        if k in inputs_a:
            total += inputs_a[k]
        if k in inputs_b:
            total += inputs_b[k]
    return total


@case(args=lambda: ({"a": torch.Tensor([100]), "b": torch.Tensor([200])},))
def tensor_dict2(inputs):
    total = torch.zeros(1)
    for k, v in inputs.items():
        total += v
    for v in inputs.values():
        total += v
    for k in inputs.keys():
        total += inputs[k]
    return total


@case(args=lambda: ({"a": torch.Tensor([100]), "b": torch.Tensor([200])},))
def dictcomp(inputs):
    return {k: v + 1 for k, v in inputs.items()}


@case(args=lambda: ({"a": torch.Tensor([100]), "b": torch.Tensor([200])},))
def listcomp(inputs):
    return torch.sum(torch.cat([v + 1 for k, v in inputs.items()], 0))


@case
def is_floating_point_torch(a, b):  # test_is_floating_point (test_functions has its name)
    x = a + 1.0
    if torch.is_floating_point(b):
        x = x + b
    return x + 2.0


@case
def is_floating_point2(a, b):
    x = a + 1.0
    if b.is_floating_point():
        x = x + b
    return x + 2.0


@case(args=lambda: ({"input": torch.rand(2, 3)},))
def is_tensor_dict_input(x):  # test_is_tensor2's first input
    if torch.is_tensor(x):
        return x + 1
    return torch.ones([2, 3])


class NamedAB(typing.NamedTuple):
    a: int
    b: int


class TensorPair(typing.NamedTuple):
    a: torch.Tensor
    b: torch.Tensor


class TensorPairSubclass(TensorPair):
    pass


@case(args=lambda: (torch.randn(2),))
def namedtuple___eq__(x):
    t1 = NamedAB(a=1, b=2)
    t2 = (1, 2)
    return x.sin(), (t1 == t2)


@case(args=lambda: (TensorPairSubclass(a=torch.tensor([1.0]), b=torch.tensor(2.0)),))
def namedtuple_source_dynamic_attributes(tup):
    c = torch.tensor(3.0)
    tup.c = c  # a dynamic attribute
    return tup, tup.c


@case(args=lambda: ())
def namedtuple_sourceless_dynamic_attributes():
    tup = TensorPairSubclass(a=torch.tensor([1.0]), b=torch.tensor(2.0))
    tup.c = torch.tensor(3.0)
    return tup, tup.c


@case(args=lambda: (torch.randn(3, 2), torch.randn(2, 4)))
def structseq1(x, y):
    return torch.return_types.max((x, y))


@case(args=lambda: (torch.randn(3, 2), torch.randn(2, 4)))
def structseq2(x, y):  # (torch.return_types.qr in the test: not in every torch)
    return tuple(torch.return_types.sort((2 * x, y - 1)))


@case(args=lambda: (torch.randn(3, 2),))
def structseq_repr(x):
    result = torch.max(x, dim=0)
    s = repr(result)
    return result.values, s.startswith("torch.return_types.max")


def _add_range(a, rng):
    x = a
    for i in rng:
        x = x + i
    return x


@case
def range_input(a):
    return _add_range(a, rng=range(3))


@case
def range_with_shape(a):
    for i in range(1, a.shape[0]):
        a += 1
    return a


@case(args=lambda: (torch.randn(3),))
def range___iter__(x):
    it = range(3).__iter__()
    return x + next(it)


@case(args=lambda: (torch.zeros(1), iter(range(1, 3))))
def range_iter_side_effects(x, it):
    n = next(it)
    return x + n, next(it)


def _fn1(a, b, c):
    return a - b / c


@case
def build_tuple_unpack(a, b, c):
    tmp1 = (a,)
    tmp2 = (b, c)
    args = (*tmp1, *tmp2)
    return _fn1(*args)


@case(args=lambda: (torch.randn(10, 10), torch.randn(10, 10), torch.randn(10, 10)))
def build_tuple_unpack_star(a, *args):
    return _fn1(a, *args)


@case(args=lambda: (2,))
def list_mul(count):
    return count * [None] * count


@case(args=lambda: (2,))
def list_slice_mul(count):
    a = [1, 2, 3]
    return count * a[1:] * count


@case(args=lambda: (2,))
def tuple_mul(count):
    return count * (2, 3) * count


@case
def tuple_mul_with_shape(a):
    x = a.shape[0]
    y = 2 * (x, 3) * 2
    return a + y[4]


@case
def tuple_iadd_with_shape(a):
    output = (a + a.shape[0], a - a.shape[0])
    output += (a - a.shape[0], a + a.shape[0])
    output += (2, 3)
    return output


@case
def list_iadd_with_shape(a):
    output = [a + a.shape[0], a - a.shape[0]]
    output += [a - a.shape[0], a + a.shape[0]]
    output += (a + a.shape[0], a - a.shape[0])
    return output


@case(args=lambda: ([1, 2, 3], torch.ones(2, 2)))
def list_iadd_side_effect(a, b):
    a += [b]
    torch._dynamo.graph_break()
    return a


class Foo:
    def __init__(self, x):
        self.x = x

    def __add__(self, other):
        return Foo(self.x + other.x)


@case(args=lambda: (Foo(torch.ones(2)), Foo(torch.ones(2) + 1)))
def class_binop(a, b):
    return (a + b).x


class MyConfigDict(dict):
    def __getattr__(self, name):
        return self[name]


@case(args=lambda: (MyConfigDict(offset=5), torch.randn(10), torch.randn(10)))
def user_getattr1_dict(cfg, x, y):
    return x + y + cfg.offset


class MyConfigGetattr:
    defined_on_class = 1

    def __init__(self) -> None:
        self.defined_on_object = 2

    def __getattr__(self, name):
        return 3


@case(args=lambda: (MyConfigGetattr(), torch.randn(10)))
def user_getattr2(cfg, x):
    return x + cfg.defined_on_class - cfg.defined_on_object + cfg.not_defined


@case(args=lambda: (torch.Tensor.shape, torch.ones(2, 2)))
def getset_descriptor(g, x):
    torch.sin(x)
    return g.__get__(x)


class Field:
    def __set__(self, obj, value):
        obj.__dict__["field"] += value * 2


class WithField:
    field = Field()

    def __init__(self):
        self.__dict__["field"] = 0


@case(args=lambda: (torch.zeros(2), WithField()))
def set_descriptor(x, foo):
    foo.field = 10
    return x + foo.field, foo.field


class MyDescriptor:
    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return obj.__dict__.get("_value", 0)

    def __set__(self, obj, value):
        obj.__dict__["_value"] = value


class WithDescriptor:
    prop = MyDescriptor()

    def __init__(self):
        self.prop = 42


@case(args=lambda: (WithDescriptor(), torch.ones(1)))
def dict_with_descriptor(obj, x):
    obj.__dict__["extra"] = 99
    return x + obj.prop + obj.__dict__["extra"], obj.__dict__["_value"]


class SlottedClass:
    __slots__ = ("x",)

    def __init__(self, x):
        self.x = x


@case(args=lambda: (SlottedClass(torch.ones(2)),))
def dict_with_slots(obj):
    return obj.x * 2
