"""Guard soundness, through the public API only (minicompile/dynamo/guards.py, eval_frame.py).

Each property test draws a sequence of calls of one compiled function and changes something
between calls: the inputs (shape, dtype, requires_grad, layout), globals, closure cells,
module attributes, int/list/dict arguments, global state (grad mode, default dtype). Every call's
result must equal eager: either a guard fails and the frame recompiles, or every guard holds and
the cached entry is right. A stale entry is the one thing that may never happen.
"""

import enum
import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minicompile as mc

SETTINGS = settings(max_examples=8, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

DYNAMIC = st.sampled_from([None, True, False])


def assert_same(actual, expected):
    """assert_close, and the same requires_grad (grad mode must be guarded too)."""
    torch.testing.assert_close(actual, expected)
    flat_a = actual if isinstance(actual, (tuple, list)) else [actual]
    flat_e = expected if isinstance(expected, (tuple, list)) else [expected]
    for a, e in zip(flat_a, flat_e):
        if isinstance(e, torch.Tensor):
            assert a.requires_grad == e.requires_grad


def compiled(fn, dynamic=None):
    mc.reset()
    return mc.compile(fn, backend="eager", dynamic=dynamic)


# ---- inputs -------------------------------------------------------------------------------------
tensor_specs = st.tuples(
    st.lists(st.integers(1, 6), min_size=1, max_size=3),  # shape
    st.sampled_from([torch.float32, torch.float64]),  # dtype
    st.booleans(),  # requires_grad
    st.booleans(),  # make it non-contiguous
)


def make_tensor(spec):
    shape, dtype, requires_grad, transpose = spec
    t = torch.randn(*shape, dtype=dtype)
    if transpose and t.dim() >= 2:
        t = t.transpose(0, 1).contiguous().transpose(0, 1)  # same shape, other strides
    return t.requires_grad_(requires_grad)


def shape_dependent(x):
    y = x * 2 + 1
    if x.shape[0] > 3:  # branches on a size
        y = y - x.sum(0)
    if x.dtype == torch.float64:  # branches on a dtype
        y = y * 0.5
    if x.requires_grad:
        y = y + 1
    return y.reshape(-1)[: x.dim() + 1]


@SETTINGS
@given(specs=st.lists(tensor_specs, min_size=2, max_size=5), dynamic=DYNAMIC)
def test_tensor_metadata_changes(specs, dynamic):
    cfn = compiled(shape_dependent, dynamic)
    for spec in specs:
        x = make_tensor(spec)
        assert_same(cfn(x), shape_dependent(x))


def two_inputs(x, y):
    return x + y, (x * y).sum(-1)


@SETTINGS
@given(sizes=st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5), st.booleans()),
                      min_size=2, max_size=5), dynamic=DYNAMIC)
def test_duck_sized_inputs_that_stop_being_equal(sizes, dynamic):
    cfn = compiled(two_inputs, dynamic)
    for m, n, broadcast in sizes:
        x = torch.randn(m, n)
        y = torch.randn(1 if broadcast else m, n)
        assert_same(cfn(x, y), two_inputs(x, y))


def with_int(x, n):
    return x * n + n, x[:n]


@SETTINGS
@given(ns=st.lists(st.integers(0, 7), min_size=2, max_size=6), dynamic=DYNAMIC)
def test_int_argument_changes(ns, dynamic):
    cfn = compiled(with_int, dynamic)
    x = torch.randn(5, 2)
    for n in ns:
        assert_same(cfn(x, n), with_int(x, n))


def with_containers(xs, opts):
    out = xs[0] * opts["scale"]
    for x in xs[1:]:
        out = out + x
    if "bias" in opts:
        out = out + opts["bias"]
    return out


@SETTINGS
@given(calls=st.lists(st.tuples(st.integers(1, 4), st.sampled_from([1.0, 2.0, -3.5]),
                                st.booleans()), min_size=2, max_size=5))
def test_list_length_and_dict_keys_change(calls):
    cfn = compiled(with_containers)
    for n, scale, bias in calls:
        xs = [torch.randn(3) for _ in range(n)]
        opts = {"scale": scale, **({"bias": torch.randn(3)} if bias else {})}
        assert_same(cfn(xs, opts), with_containers(xs, opts))


def reads_some_options(x, unused, opts):
    if opts["relu"]:  # a value read by control flow
        x = x.relu()
    return x * opts["lr"]  # a value read into the graph; opts["step"] and `unused` never read


@SETTINGS
@given(calls=st.lists(st.tuples(st.sampled_from(["a", "b"]), st.booleans(),
                                st.sampled_from([0.5, 2.0]), st.integers(0, 9)),
                      min_size=2, max_size=6))
def test_a_constant_the_code_never_reads_is_not_guarded(calls):
    """A constant among the inputs is guarded where the trace reads it: a changing step count
    in an options dict, or an argument, that the code never reads compiles no new entry;
    every value it does read (in control flow, or into the graph) is still guarded. (An int
    argument that changes is another matter: automatic dynamic makes it a symbolic input.)"""
    cfn = compiled(reads_some_options)
    mc.metrics.reset()
    x = torch.randn(4)
    for unused, relu, lr, step in calls:
        opts = {"relu": relu, "lr": lr, "step": step}
        assert_same(cfn(x, unused, opts), reads_some_options(x, unused, opts))
    read = {(relu, lr) for _, relu, lr, _ in calls}
    assert mc.metrics.frames_compiled == len(read)


# ---- globals, closures, modules -----------------------------------------------------------------
SCALE = 2.0
FLAG = True
WEIGHT = torch.randn(4)


def reads_globals(x):
    y = x * SCALE + WEIGHT
    return y.relu() if FLAG else y.sigmoid()


@SETTINGS
@given(steps=st.lists(st.tuples(st.sampled_from([2.0, 3.0, -1.0]), st.booleans(), st.booleans()),
                      min_size=2, max_size=5))
def test_global_values_change(steps):
    global SCALE, FLAG, WEIGHT
    saved = SCALE, FLAG, WEIGHT
    try:
        cfn = compiled(reads_globals)
        x = torch.randn(4)
        for scale, flag, new_weight in steps:
            SCALE, FLAG = scale, flag
            if new_weight:
                WEIGHT = torch.randn(4, dtype=torch.float64)
            assert_same(cfn(x), reads_globals(x))
    finally:
        SCALE, FLAG, WEIGHT = saved


@SETTINGS
@given(values=st.lists(st.tuples(st.sampled_from([0.5, 1.0, 4]), st.booleans()),
                       min_size=2, max_size=5))
def test_closure_cells_change(values):
    factor, fn_choice = 1.0, torch.sin

    def inner(x):
        return fn_choice(x) * factor

    cfn = compiled(inner)
    x = torch.randn(3)
    for f, use_cos in values:
        factor, fn_choice = f, (torch.cos if use_cos else torch.sin)
        assert_same(cfn(x), inner(x))


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.alpha = 1.5

    def forward(self, x):
        y = self.lin(x) * self.alpha
        return y + 1 if self.training else y - 1


@SETTINGS
@given(steps=st.lists(st.tuples(st.booleans(), st.sampled_from([1.5, 0.25, 3.0]), st.booleans()),
                      min_size=2, max_size=5))
def test_module_attributes_change(steps):
    mod = Scaled()
    mc.reset()
    cmod = mc.compile(mod, backend="eager")
    x = torch.randn(2, 4)
    for training, alpha, swap in steps:
        mod.train(training)
        mod.alpha = alpha
        if swap:
            mod.lin = torch.nn.Linear(4, 3)
        with torch.no_grad():
            assert_same(cmod(x), mod(x))


# ---- global state -------------------------------------------------------------------------------
def makes_tensors(x):
    return x * 2 + torch.ones(x.shape[-1])


@SETTINGS
@given(steps=st.lists(st.tuples(st.booleans(), st.sampled_from([torch.float32, torch.float64])),
                      min_size=2, max_size=5))
def test_grad_mode_and_default_dtype_change(steps):
    cfn = compiled(makes_tensors)
    saved = torch.get_default_dtype()
    try:
        for grad, dtype in steps:
            torch.set_default_dtype(dtype)
            x = torch.randn(3, requires_grad=True)
            with torch.set_grad_enabled(grad):
                assert_same(cfn(x), makes_tensors(x))
    finally:
        torch.set_default_dtype(saved)


def test_seed_example_guard_and_result():
    @mc.compile(dynamic=True, backend="eager")
    def fn(a):
        if a.shape[0] * 2 < 16:
            return a
        else:
            return a + 1

    for n in [8, 9, 20, 3, 7, 8]:
        a = torch.randn(n)
        torch.testing.assert_close(fn(a), a if n * 2 < 16 else a + 1)
    from minicompile.dynamo.eval_frame import cache_entries

    sources = [entry.guard.source for entry in cache_entries(fn)]
    assert len(sources) == 2  # one entry per branch, whatever the size
    assert "2*L['a'].size()[0] >= 16" in sources[0]
    assert "2*L['a'].size()[0] < 16" in sources[1]


# ---- mutations that are easy to miss -------------------------------------------------------------
LIN = torch.nn.Linear(3, 3)
MODULES = torch.nn.ModuleList([torch.nn.Linear(3, 3)])
BN = torch.nn.BatchNorm1d(3).eval()
TABLE = {"a": 1.0, "b": torch.ones(3)}
SCALES = [1.0, 2.0]


class Config:
    scale, mode, bias = 2.0, "add", torch.ones(3)


CFG = Config()


def uses_object(x):
    y = x * CFG.scale
    return y + CFG.bias if CFG.mode == "add" else y - CFG.bias


def uses_global_list(x):
    return x * sum(SCALES) + len(SCALES)


def uses_linear(x):
    return LIN(x)


def uses_module_list(x):
    for layer in MODULES:
        x = layer(x)
    return x


def uses_batchnorm(x):
    return BN(x)


def uses_table(x):
    return x * TABLE["a"] + TABLE["b"]


def with_default(x, s=2.0):
    return x * s


def _replace_weight():
    LIN.weight = torch.nn.Parameter(torch.randn(3, 3))


def _update_weight_in_place():
    with torch.no_grad():
        LIN.weight.add_(1.0)


@pytest.mark.parametrize("fn, mutate", [
    (uses_linear, _replace_weight),
    (uses_linear, _update_weight_in_place),
    (uses_module_list, lambda: MODULES.append(torch.nn.Linear(3, 3))),
    (uses_module_list, lambda: MODULES.__setitem__(0, torch.nn.Linear(3, 3))),
    (uses_batchnorm, lambda: setattr(BN, "running_mean", torch.ones(3))),
    (uses_table, lambda: TABLE.__setitem__("a", 4.0)),
    (uses_table, lambda: TABLE.__setitem__("b", torch.zeros(3))),
    (with_default, lambda: setattr(with_default, "__defaults__", (7.0,))),
    (uses_object, lambda: setattr(CFG, "scale", 3.0)),
    (uses_object, lambda: setattr(CFG, "mode", "sub")),
    (uses_object, lambda: setattr(CFG, "bias", torch.zeros(3))),
    (uses_global_list, lambda: SCALES.append(3.0)),
    (uses_global_list, lambda: SCALES.__setitem__(0, 10.0)),
], ids=["param-replaced", "param-in-place", "modulelist-append", "modulelist-swap",
        "buffer-replaced", "dict-value", "dict-tensor-value", "defaults", "object-float-attr",
        "object-str-attr", "object-tensor-attr", "global-list-append", "global-list-item"])
def test_mutation_between_calls(fn, mutate):
    cfn = compiled(fn)
    x = torch.randn(2, 3)
    with torch.no_grad():
        assert_same(cfn(x), fn(x))
        mutate()
        assert_same(cfn(x), fn(x))


# ---- state the guards must see although nothing in the traced code assigns it -------------------
class Holder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.sub(x)


def _call_holder(holder):
    return lambda x: holder(x)


def _storage_offset_case():
    base = torch.arange(8.0)

    def f(x):
        return x + x.storage_offset()
    return f, [(base[0:4],), (base[2:6],)]


def _identity_case():
    a, b = torch.zeros(3), torch.zeros(3)

    def f(x, y):
        return x + 1 if x is y else x - 1
    return f, [(a, b), (a, a), (b, a)]


def _float_zero_case():
    def f(x, s):
        return x * math.copysign(1.0, s)
    return f, [(torch.ones(2), 0.0), (torch.ones(2), -0.0), (torch.ones(2), float("nan"))]


def _dict_key_type_case():
    def f(x, d):
        return x * (10 if isinstance(next(iter(d)), bool) else 1)
    return f, [(torch.ones(2), {1: 0}), (torch.ones(2), {True: 0})]


def _is_leaf_case():
    leaf = torch.ones(3, requires_grad=True)

    def f(x):
        return x + 1 if x.is_leaf else x - 1
    return f, [(leaf,), (leaf * 1,)]


@pytest.mark.parametrize("case", [_storage_offset_case, _identity_case, _float_zero_case,
                                  _dict_key_type_case, _is_leaf_case],
                         ids=["storage-offset", "same-tensor-twice", "minus-zero-and-nan",
                              "dict-key-bool-vs-int", "is-leaf"])
def test_argument_properties_outside_tensor_match(case):
    fn, calls = case()
    cfn = compiled(fn)
    for args in calls:
        assert_same(cfn(*args), fn(*args))


def _module_mutations():
    def add_hook(h):
        h.sub.register_forward_hook(lambda mod, inp, out: out * 0 + 7)

    def replace_forward(h):
        h.sub.forward = lambda x: x * 0 + 5

    def change_class(h):
        class Doubled(torch.nn.Linear):
            def forward(self, x):
                return super().forward(x) * 2
        h.sub.__class__ = Doubled

    def to_double(h):
        h.double()

    def reshape_weight(h):
        h.sub.weight.data, h.sub.bias.data = torch.ones(2, 3), torch.ones(2)
    return [add_hook, replace_forward, change_class, to_double, reshape_weight]


@pytest.mark.parametrize("mutate", _module_mutations(),
                         ids=lambda f: f.__name__.replace("_", "-"))
def test_called_submodule_changes(mutate):
    holder = Holder()
    fn = _call_holder(holder)
    cfn = compiled(fn)
    x = torch.randn(2, 3)
    with torch.no_grad():
        assert_same(cfn(x), fn(x))
        mutate(holder)
        x = x.to(holder.sub.weight.dtype)
        assert_same(cfn(x), fn(x))


@pytest.mark.parametrize("switch", [
    lambda: torch.use_deterministic_algorithms(True),
    lambda: torch.autocast("cpu", dtype=torch.bfloat16),
], ids=["deterministic", "autocast"])
def test_global_state_is_guarded(switch):
    def f(x):
        if torch.are_deterministic_algorithms_enabled() or torch.is_autocast_enabled("cpu"):
            return x + 1
        return x - 1
    cfn = compiled(f)
    x = torch.ones(3)
    assert_same(cfn(x), f(x))
    ctx = switch()
    try:
        if ctx is not None:
            ctx.__enter__()
        assert_same(cfn(x), f(x))
    finally:
        if ctx is not None:
            ctx.__exit__(None, None, None)
        torch.use_deterministic_algorithms(False)


@pytest.mark.parametrize("enter", [
    lambda: torch.device("meta"),
    lambda: torch.set_default_device("meta"),  # (returns None: nothing to enter)
], ids=["with-device", "set-default-device"])
def test_default_device_is_guarded(enter):
    """A factory call makes its tensor on the default device: an entry compiled on the CPU is
    not reused under ``with torch.device("meta")`` or after ``set_default_device`` (the ATen
    graph aot_eager runs names its device: ``aten.ones(..., device=cpu)``)."""
    def f():
        return torch.ones(2) * 2
    cfn = mc.compile(f, backend="aot_eager")
    assert cfn().device.type == "cpu"
    ctx = enter()
    try:
        if ctx is not None:
            ctx.__enter__()
        assert cfn().device == f().device == torch.device("meta")
    finally:
        if ctx is not None:
            ctx.__exit__(None, None, None)
        torch.set_default_device(None)
    assert cfn().device.type == "cpu"


class Plain:
    def go(self, x):
        return x + 1


def _attribute_added_case():
    obj = Plain()

    def f(x, o):
        return x + o.extra if hasattr(o, "extra") else x

    def add():
        obj.extra = 5
    return f, (obj,), add


def _class_method_replaced_case():
    obj = Plain()

    def f(x, o):
        return o.go(x)

    def patch():
        Plain.go = lambda self, x: x + 50
    return f, (obj,), patch


def test_attribute_added_to_an_object():
    f, extra, mutate = _attribute_added_case()
    cfn = compiled(f)
    x = torch.zeros(3)
    assert_same(cfn(x, *extra), f(x, *extra))
    mutate()
    assert_same(cfn(x, *extra), f(x, *extra))


def test_python_attribute_set_on_a_tensor():
    def f(x):
        return x * getattr(x, "scale", 1)
    cfn = compiled(f)
    t = torch.ones(3)
    assert_same(cfn(t), f(t))
    t.scale = 4
    assert_same(cfn(t), f(t))


def test_method_replaced_on_the_class():
    original = Plain.go
    try:
        f, extra, mutate = _class_method_replaced_case()
        cfn = compiled(f)
        x = torch.zeros(3)
        assert_same(cfn(x, *extra), f(x, *extra))
        mutate()
        assert_same(cfn(x, *extra), f(x, *extra))
    finally:
        Plain.go = original


class CountingLocals(dict):
    """Frame locals that count how often the guard looks each one up."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lookups: dict[str, int] = {}

    def __getitem__(self, key):
        self.lookups[key] = self.lookups.get(key, 0) + 1
        return super().__getitem__(key)


def test_the_guard_that_runs_reads_each_value_once():
    """The listing (``MINICOMPILE_LOGS=guards``) names ``L['x']`` in every TENSOR_MATCH check;
    the guard tree's function reads it once into a local, and agrees with the listing on inputs
    that pass and on inputs that fail each check."""
    from minicompile.dynamo.eval_frame import cache_entries

    cfn = mc.compile(lambda x, y: x * y + 1, backend="eager", dynamic=False)
    cfn(torch.randn(4, 3), torch.randn(4, 3))
    guard = cache_entries(cfn)[0].guard
    listing: dict = {}
    exec(guard.source, {"torch": torch, **guard.scope.names}, listing)
    by_listing = listing[guard.name]
    assert guard.source.count("L['x']") > 1 and guard.runs.count("L['x']") == 1
    # ... and looks up no attribute of torch by name: each was bound when it was built
    assert "torch.float32" in guard.source and "torch" not in guard.fn.__code__.co_names
    x = torch.randn(4, 3)
    cases = [(x, x + 1), (x.double(), x), (x, torch.randn(3, 4).t()), (x, 2.0),
             (torch.randn(5, 3), torch.randn(5, 3))]
    for x, y in cases:
        frame = CountingLocals(x=x, y=y)
        assert guard(frame, {}) == by_listing({"x": x, "y": y}, {})
        assert max(frame.lookups.values()) == 1, frame.lookups


def test_the_guard_function_reads_flags_of_torch_at_each_call():
    """``bind_torch`` binds the functions, classes and dtypes a check names in ``torch`` once;
    a flag that may change between calls is still read from ``torch`` at each call."""
    from minicompile.dynamo.guard_manager import bind_torch

    bound: dict = {}
    check = bind_torch("L['x'].dtype is torch.float32 and torch.backends.cudnn.enabled is L['f']",
                       bound)
    assert "___torch_float32" in check and "torch.backends.cudnn.enabled" in check
    guard = eval(f"lambda L: {check}", {"torch": torch, **bound})
    saved = torch.backends.cudnn.enabled
    try:
        for flag in (True, False):
            torch.backends.cudnn.enabled = flag
            assert guard({"x": torch.ones(1), "f": flag})
            assert not guard({"x": torch.ones(1), "f": not flag})
    finally:
        torch.backends.cudnn.enabled = saved


def test_str_enum_value_is_guarded_by_a_bound_name():
    """A str-Enum member is a str whose repr is not Python source: the guard binds it."""
    import enum

    class Action(str, enum.Enum):
        NONE = "none"
        WARN = "warn"

    def f(x, action):
        return x + 1 if action == Action.NONE else x - 1

    x = torch.randn(2)
    compiled = mc.compile(f, backend="eager")
    for action in (Action.NONE, Action.WARN, "none"):
        torch.testing.assert_close(compiled(x, action), f(x, action))


class Reduction(enum.Enum):
    SUM = 1
    MEAN = 2
    MAX = "max"


class ReduceConfig:
    def __init__(self, mode):
        self.mode = mode


def reduce_by_mode(x, cfg):
    if cfg.mode is Reduction.SUM:
        return x.sum(-1)
    if cfg.mode == Reduction.MEAN:
        return x.mean(-1)
    return x.amax(-1)


@pytest.mark.parametrize("where, name", [(torch.nn.functional, "gelu"), (torch, "sin")])
def test_a_torch_function_replaced_after_the_compile_is_called(where, name):
    """Code replaces torch's functions (a library patching ``F.scaled_dot_product_attention``
    or an activation): a function read from a module is guarded by identity, torch's own
    included, so the next call compiles again with the new one (it ran the old one)."""
    original = getattr(where, name)
    fn = (lambda x: torch.nn.functional.gelu(x) + 1) if name == "gelu" else \
        (lambda x: torch.sin(x) + 1)
    cfn = mc.compile(fn, backend="inductor")
    x = torch.randn(3, 4)
    torch.testing.assert_close(cfn(x), fn(x))
    try:
        setattr(where, name, lambda t, *args, **kwargs: t * 3)
        torch.testing.assert_close(cfn(x), x * 3 + 1)
    finally:
        setattr(where, name, original)
    torch.testing.assert_close(cfn(x), fn(x))


def test_enum_member_is_guarded_by_identity():
    # Guarded by type only, a config with another member reused the first member's graph.
    x = torch.randn(3, 4)
    compiled = mc.compile(reduce_by_mode, backend="eager")
    for mode in (Reduction.MEAN, Reduction.SUM, Reduction.MAX, Reduction.MEAN):
        cfg = ReduceConfig(mode)
        torch.testing.assert_close(compiled(x, cfg), reduce_by_mode(x, cfg))


def test_tensor_checks_run_as_one_cpp_call_and_agree_with_the_listing():
    """The TENSOR_MATCH lines of the listing run as one call of torch's C++ tensor check
    (``GuardFn.runs``); it accepts and refuses what the lines do, dynamic dims included."""
    from minicompile.dynamo.eval_frame import cache_entries

    w = torch.nn.Parameter(torch.randn(3))
    for dynamic in (False, True):
        mc.reset()  # (one code object: the first entry is this compile's)
        cfn = mc.compile(lambda x, p: x * p + 1, backend="eager", dynamic=dynamic)
        cfn(torch.randn(4, 3), w)
        guard = cache_entries(cfn)[0].guard
        assert guard.source.count("TENSOR_MATCH") == 2 and "L['x'].dtype" in guard.source
        assert guard.runs.count("___check_tensors") == 1, guard.runs  # the lines: its "or"
        listing: dict = {}
        exec(guard.source, {"torch": torch, **guard.scope.names}, listing)
        by_listing = listing[guard.name]
        x = torch.randn(4, 3)
        cases = [(x, w), (torch.randn(6, 3), w), (x.double(), w), (torch.randn(3, 4).t(), w),
                 (x.clone().requires_grad_(), w), (x, w.detach()), (x, torch.randn(3)),
                 (torch.nn.Parameter(x.detach()), w), (2.0, w), (x[None], w)]
        verdicts = [guard({"x": a, "p": b}, {}) for a, b in cases]
        assert verdicts == [bool(by_listing({"x": a, "p": b}, {})) for a, b in cases]
        assert verdicts[0] and not verdicts[2] and verdicts[1] == dynamic


def test_a_dispatch_mode_does_not_fail_the_tensor_checks():
    """Under a ``TorchDispatchMode`` every tensor carries the Python dispatch key, so the C++
    check says no; the lines decide, and the frame is not compiled again."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        calls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.calls += 1
            return func(*args, **(kwargs or {}))

    mc.reset()
    cfn = mc.compile(lambda x, y: x * y + 1, backend="eager")
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    cfn(x, y)
    with Count():
        torch.testing.assert_close(cfn(x, y), x * y + 1)
    assert Count.calls > 0 and mc.metrics.recompiles == 0 and mc.metrics.frames_compiled == 1


def test_an_object_that_answers_every_attribute_is_guarded_by_identity():
    """``torch.classes`` makes a namespace for any name read from it (``__qualname__``
    included) and raises RuntimeError, not AttributeError, when formatting it asks for
    ``__file__`` (transformers' import checks reach it through ``importlib``): naming it in
    the guard's code and comment must not read its attributes."""
    def f(x, namespace):
        return x + 1 if namespace is torch.classes else x - 1

    mc.reset()
    cfn = mc.compile(f, backend="eager")
    x = torch.randn(3)
    torch.testing.assert_close(cfn(x, torch.classes), x + 1)
    torch.testing.assert_close(cfn(x, torch.ops), x - 1)  # the identity guard fails: recompile
    assert mc.metrics.recompiles == 1


def test_an_ordered_dict_is_read_in_its_own_order():
    """``move_to_end`` reorders an ``OrderedDict`` but not the dict beneath it: the trace reads
    the items and guards the keys in the OrderedDict's order (``OrderedDict.keys``), so a
    reordered argument gives eager's answer, and moving a key again recompiles."""
    from collections import OrderedDict

    def fn(x, d):
        y = 0
        for idx, value in enumerate(d.values()):
            y = y + (torch.sin(x * value) if idx == 0 else torch.cos(x * value))
        return y, list(d)

    d = OrderedDict([(2, 4), (3, 5)])
    d.move_to_end(2)
    x = torch.randn(3)
    cfn = mc.compile(fn, backend="eager")
    assert_same(cfn(x, d), fn(x, d))
    d.move_to_end(3)
    assert_same(cfn(x, d), fn(x, d))


def patchify(x, p):
    """A ViT's patch embedding input: crop to whole patches, then one row per patch."""
    B, C, H, W = x.shape
    Hp, Wp = H // p, W // p
    x = x[:, :, :Hp * p, :Wp * p]
    return x.reshape(B, C, Hp, p, Wp, p).permute(0, 2, 4, 1, 3, 5).reshape(B, Hp * Wp, C * p * p)


def test_a_shape_guard_with_a_disjunction_keeps_the_rest_of_the_guard():
    # reshape's guards include `a or b or c`; joined unparenthesized with `and`, the guard of
    # the square image passed for any image, and a 9x13 one ran the graph made for H == W.
    compiled = mc.compile(patchify, backend="inductor", dynamic=True)
    for h, w in [(8, 8), (9, 13), (16, 4)]:
        x = torch.randn(2, 3, h, w)
        torch.testing.assert_close(compiled(x, 4), patchify(x, 4))
