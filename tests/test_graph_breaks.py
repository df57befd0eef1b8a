"""Graph breaks end to end: eager-equal results, side effects in eager order, graph counts
next to real Dynamo's, fullgraph errors, explain() against mc.metrics."""

from __future__ import annotations

import contextlib
import heapq
import logging
import random

import numpy as np
import pytest
import torch
import torch._dynamo

import minicompile as mc
from minicompile.dynamo.exc import FullGraphError

LOG: list = []  # side effects land here, in order


def record(*args):
    LOG.append(args)


def helper_with_print(x):
    y = x * 2
    print("inside helper")
    return y + 1


def bumpy(x):
    y = x.relu()
    record("bumpy", y.shape)
    return y - 1


# -- the programs: each breaks in a different way ----------------------------------------------
def print_between(x, y):
    a = x.sin() + y
    print("between graphs")
    return a.cos() * 2


def item_then_math(x):
    n = x.sum().item()
    return x * n + 1


def data_dependent_if(x):
    y = x * 2
    if y.sum() > 0:
        return y + 1
    return y - 1


def break_in_loop(x):
    for i in range(3):
        x = x * 2 + i
        record("step", i)
    return x.sum()


def break_in_no_grad(x, w):
    y = x @ w
    with torch.no_grad():
        z = y * 2
        print("grad enabled", torch.is_grad_enabled())
        z = z + 1
    return y + z


def break_in_callee(x):
    a = x.cos()
    b = helper_with_print(a)
    return b * a


def several_breaks(x):
    x = x + 1
    record("one")
    x = x * 2
    n = int(x.max().item() > 0)
    x = x - n
    record("two", n)
    x = bumpy(x)
    if x.mean() > 0:
        x = x + 10
    return x


def numpy_and_random(x):
    y = x.exp()
    k = np.float32(np.sqrt(4.0))
    r = random.Random(0).random()
    return y * float(k) + r


def numpy_array_live_across_break(x):
    y = x + 1
    z = np.ones(3)  # a live local of the resume function: wrapped without comparing it (==)
    return y * float(z.sum())


class Scaler:
    def apply(self, x):
        print("scaling")  # breaks inside a method called from compiled code
        return x.relu() * 2


SCALER = Scaler()


def method_with_print(x):
    return SCALER.apply(x + 1) - 1  # the method runs natively, its own frame compiled


def explicit_break(x):
    y = x.sin()
    torch._dynamo.graph_break()  # the user asks for a break: two graphs, as in real Dynamo
    return y.cos()


def tolist_in_middle(x):
    vals = (x * 3).tolist()
    return x + sum(vals)


def list_kept_across_break(x):
    outs = []
    for i in range(2):
        outs.append(x + i)
        print("iteration", i)
    return outs


def loop_calls_breaking_helper(x):
    for _ in range(3):  # the loop frame runs eagerly; the helper is compiled on its own
        x = helper_with_print(x)
    return x.sum()


def two_prints(x):
    x = x + 1
    print("a")
    x = x * 2
    print("b")
    return x - 1


def break_after_loop(x):
    for i in range(3):
        x = x + i
    print("done")
    return x * 2


def mutations_across_break(x, xs, d):
    xs.append(x + 1)
    d["k"] = x * 2
    record("before", len(xs))
    print("break")
    xs[0] = xs[-1] * 3
    return xs.pop() + d["k"]


def logging_call(x):
    y = x.tanh()
    logging.getLogger("minicompile.test").info("value %s", 1)
    return y * y


def alias_across_break(x):
    a = [x]
    b = a  # one list under two names: both must still name it after the break
    print("break")
    b.append(x * 2)
    return len(a), a[-1]


def appends_after_print(lst):
    print("native")
    lst.append(99)


def callee_mutates_local_list(x):
    lst = [1, 2]
    appends_after_print(lst)  # runs natively on the list the resume function gets too
    return x * len(lst), lst


def c_function_mutates_local_list(x):
    lst = [3, 1]
    heapq.heappush(lst, 0)
    return x * lst[0] + len(lst), lst


@torch._dynamo.disable
def sort_natively(xs):
    xs.sort()


def copy_live_across_a_mutating_break(x, xs):
    first = list(xs)  # a copy of the items as they are now, read from xs[0], xs[1], ...
    sort_natively(xs)  # runs natively and reorders xs: the copy must not see it
    return x * first[0], first, xs


def dict_view_across_break(x, d):
    items = d.items()  # a live view: it sees the key added after the break
    print("break")
    d["new"] = x
    return x * len(items)


def nested_grad_modes_with_break(x):
    with torch.no_grad():
        with torch.enable_grad():
            a = x * 2
            print("break")
            b = a * 3
        c = b + 1  # no_grad again
    return b, c


def two_breaks_in_no_grad(x):
    with torch.no_grad():
        a = x + 1
        print("1")
        b = a * 2
        print("2")
    return a, b


def break_in_nullcontext(x, no_grad):
    ctx = torch.no_grad() if no_grad else contextlib.nullcontext()  # a common pattern
    with ctx:
        a = x * 2
        print("break")
        b = a + 1
    with contextlib.nullcontext(a) as c:  # `as` binds the enter_result
        d = c * b
    return d


def iterator_live_across_break(x):
    it = iter([x, x * 2, x * 3])
    a = next(it)
    print("break")
    b = next(it)
    return a + b + next(it)


def data_dependent_while(x):
    while x.sum() < 20:  # one resume function per offset, reused on every iteration
        x = x + 1
    return x


def print_in_try_finally(x):
    try:
        y = x * 2
        print("in try")  # inside a try: the handler covers the print (test_graph_breaks_try)
        y = y + 1
    finally:
        record("finally")
    return y


def breaking_with_star_args(x, scale=1, **kw):
    print("star")
    return x * scale + len(kw)


def star_and_double_star_call(x, y):
    d = {"extra": 1}
    lst = [x + y]
    return breaking_with_star_args(*lst, scale=2, **d) - 1


class BranchySub(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        y = self.lin(x)
        if y.sum() > 0:  # breaks: this forward runs as its own compiled frame
            return y * 2
        return y - 2


class WithBranchySub(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.sub, self.post = BranchySub(), torch.nn.Linear(3, 1)

    def forward(self, x):
        return self.post(self.sub(x.tanh()))


WITH_BRANCHY_SUB = WithBranchySub()


def calls_module_whose_forward_breaks(x):
    return WITH_BRANCHY_SUB(x) + 1


def noisy(value):
    print("noisy", value)
    return value


# Breaks with a call half built on the stack: the callable, its NULL (below the callable up to
# 3.12, above it from 3.13) and the arguments evaluated so far travel to the resume function.
def break_in_call_arguments(x):
    return torch.add(x.sin(), helper_with_print(x))


def break_in_method_call_arguments(x):
    return x.cos().mul(noisy(3)) + 1


def break_in_keyword_argument(x):
    return torch.clamp(x * 2, min=noisy(-1.0), max=1.0)  # CALL_KW from 3.13


def break_in_nested_calls(x):
    return torch.add(x, torch.mul(x, noisy(3)), alpha=noisy(2))


def break_in_star_call_arguments(x):
    return torch.add(*[x.exp(), noisy(x)], **{"alpha": 2})


def break_in_fstring(x):
    label = f"{noisy(x.shape[0]):>4}|{x.dim()!r}"  # FORMAT_WITH_SPEC, CONVERT_VALUE from 3.13
    return x * len(label)


PROGRAMS = [
    (print_between, lambda: (torch.randn(5), torch.randn(5))),
    (item_then_math, lambda: (torch.randn(4, 3),)),
    (data_dependent_if, lambda: (torch.randn(7),)),
    (data_dependent_if, lambda: (-torch.rand(7),)),
    (break_in_loop, lambda: (torch.randn(3, 2),)),
    (break_in_no_grad, lambda: (torch.randn(2, 3, requires_grad=True), torch.randn(3, 4))),
    (break_in_callee, lambda: (torch.randn(6),)),
    (several_breaks, lambda: (torch.randn(5),)),
    (numpy_and_random, lambda: (torch.randn(3),)),
    (tolist_in_middle, lambda: (torch.randn(4),)),
    (list_kept_across_break, lambda: (torch.randn(2, 2),)),
    (logging_call, lambda: (torch.randn(9),)),
    (loop_calls_breaking_helper, lambda: (torch.randn(4),)),
    (two_prints, lambda: (torch.randn(3, 5)[:, ::2],)),  # non-contiguous
    (break_after_loop, lambda: (torch.randn(1823, 3),)),
    (mutations_across_break, lambda: (torch.randn(3), [torch.randn(3)], {"a": 1})),
    (numpy_array_live_across_break, lambda: (torch.randn(3),)),
    (explicit_break, lambda: (torch.randn(3),)),
    (method_with_print, lambda: (torch.randn(4),)),
    (alias_across_break, lambda: (torch.randn(3),)),
    (callee_mutates_local_list, lambda: (torch.randn(3),)),
    (c_function_mutates_local_list, lambda: (torch.randn(3),)),
    (dict_view_across_break, lambda: (torch.randn(3), {"a": 1})),
    (copy_live_across_a_mutating_break, lambda: (torch.randn(3), [3, 1, 2])),
    (nested_grad_modes_with_break, lambda: (torch.randn(3, requires_grad=True),)),
    (two_breaks_in_no_grad, lambda: (torch.randn(3, requires_grad=True),)),
    (iterator_live_across_break, lambda: (torch.randn(3),)),
    (data_dependent_while, lambda: (torch.zeros(2),)),
    (print_in_try_finally, lambda: (torch.randn(3),)),
    (star_and_double_star_call, lambda: (torch.randn(3), torch.randn(3))),
    (calls_module_whose_forward_breaks, lambda: (torch.randn(4, 3),)),
    (break_in_nullcontext, lambda: (torch.randn(3, requires_grad=True), False)),
    (break_in_nullcontext, lambda: (torch.randn(3, requires_grad=True), True)),
    (break_in_call_arguments, lambda: (torch.randn(3),)),
    (break_in_method_call_arguments, lambda: (torch.randn(3),)),
    (break_in_keyword_argument, lambda: (torch.randn(3),)),
    (break_in_nested_calls, lambda: (torch.randn(3),)),
    (break_in_star_call_arguments, lambda: (torch.randn(3),)),
    (break_in_fstring, lambda: (torch.randn(3),)),
]
IDS = [f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(PROGRAMS)]


def _eager_and_compiled(fn, args, capsys):
    LOG.clear()
    expected = fn(*args)
    eager_log, eager_out = list(LOG), capsys.readouterr().out
    LOG.clear()
    got = mc.compile(fn, backend="eager")(*_copy(args))
    return expected, got, (eager_log, eager_out), (list(LOG), capsys.readouterr().out)


def _tensors(value) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _copy(args):  # fresh lists/dicts for the compiled run, so both runs mutate their own
    return [type(a)(a) if isinstance(a, (list, dict)) else a for a in args]


@pytest.mark.parametrize("fn,make_args", PROGRAMS, ids=IDS)
def test_eager_equal_with_side_effects_in_order(fn, make_args, capsys):
    args = make_args()
    compiled_args = _copy(args)
    LOG.clear()
    expected = fn(*args)
    eager_effects = (list(LOG), capsys.readouterr().out)
    LOG.clear()
    got = mc.compile(fn, backend="eager")(*compiled_args)
    torch.testing.assert_close(got, expected)
    assert [t.requires_grad for t in _tensors(got)] == [t.requires_grad for t in _tensors(expected)]
    torch.testing.assert_close(compiled_args, args)  # mutated arguments end up equal too
    assert (list(LOG), capsys.readouterr().out) == eager_effects
    assert mc.metrics.eager_fallbacks == 0


# Real Dynamo's count for these depends on the torch version: 2.11+ traces numpy through
# torch._numpy (1 graph), earlier versions break at each call. Compared by reason instead.
VERSION_DEPENDENT = {"numpy_and_random", "numpy_array_live_across_break"}
# Real Dynamo keeps tracing through an iterator its resume function receives; ours gets it as an
# object it can't look into, so `next(it)` breaks once more there (the results are the same).
KNOWN_EXTRA_BREAK = {"iterator_live_across_break"}
# Real Dynamo compiles no graph after this break (its resume function starts with the bound
# method `t.mul` on the stack); ours traces the rest: one graph more, the same results.
KNOWN_EXTRA_GRAPH = {"break_in_method_call_arguments"}
# Real Dynamo compiles the graph before a ``try`` and runs the rest of the frame eagerly; ours
# resumes inside the ``try`` with its handler: one graph more (test_graph_breaks_try.py).
KNOWN_EXTRA_GRAPH |= {"print_in_try_finally"}
SAME_COUNT = [(p, i) for p, i in zip(PROGRAMS, IDS)
              if p[0].__name__ not in VERSION_DEPENDENT | KNOWN_EXTRA_BREAK | KNOWN_EXTRA_GRAPH]


@pytest.mark.parametrize("fn,make_args", [p for p, _ in SAME_COUNT], ids=[i for _, i in SAME_COUNT])
def test_graph_count_matches_real_dynamo(fn, make_args, capsys):
    args = make_args()
    ours = mc.explain(fn)(*args)
    torch._dynamo.reset()
    theirs = torch._dynamo.explain(fn)(*args)
    capsys.readouterr()
    assert ours.graph_count == theirs.graph_count, (str(ours), str(theirs))


@pytest.mark.parametrize("fn,make_args", PROGRAMS[:6], ids=IDS[:6])
def test_explain_agrees_with_metrics(fn, make_args, capsys):
    out = mc.explain(fn)(*make_args())
    assert out.graph_count == mc.metrics.graphs_compiled
    assert len(out.break_reasons) == mc.metrics.graph_breaks
    assert out.graph_break_count == out.graph_count - 1  # torch._dynamo.explain's definition
    program = out.transformed_program()
    assert "__compiled_fn_" in program and "guard_0" in program
    assert ("__resume_at_" in program) == bool(out.break_reasons)
    for reason in out.break_reasons:
        assert reason.user_line and ".py:" in reason.user_line
        assert "Explanation:" in str(reason) and "Hint:" in str(reason)


def test_break_reasons_are_classified():
    kinds = {fn.__name__: [b.kind for b in mc.explain(fn)(*make()).break_reasons]
             for fn, make in PROGRAMS[:5] + PROGRAMS[6:7] + PROGRAMS[8:9] + PROGRAMS[11:12]}
    assert kinds["print_between"] == ["print_or_logging"]
    assert kinds["item_then_math"] == ["tensor_to_python"]
    assert kinds["data_dependent_if"] == ["data_dependent_branch"]
    assert kinds["break_in_callee"][0] == "inlined_call"
    assert "untraceable_call" in kinds["numpy_and_random"]  # np.sqrt, random.Random, ...
    assert kinds["logging_call"] == ["print_or_logging"]  # getLogger runs at trace time
    assert kinds["break_in_loop"] == []  # record() appends to a global list: replayed, no break
    assert [b.kind for b in mc.explain(explicit_break)(torch.randn(3)).break_reasons] == ["explicit"]
    out = mc.explain(list_kept_across_break)(torch.randn(2))
    assert [b.kind for b in out.break_reasons] == ["graph_break_in_loop"] and out.graph_count == 0


def test_fullgraph_raises_with_reason_and_line():
    with pytest.raises(FullGraphError) as err:
        mc.compile(item_then_math, backend="eager", fullgraph=True)(torch.randn(3))
    assert "item" in str(err.value) and "n = x.sum().item()" in str(err.value)


def test_resume_functions_compile_lazily_and_recompile():
    cf = mc.compile(data_dependent_if, backend="eager")
    cf(torch.ones(3))  # only the `if` branch's resume function is compiled
    assert mc.metrics.graphs_compiled == 2
    cf(torch.ones(3))  # cached: no new graphs
    assert mc.metrics.graphs_compiled == 2
    cf(-torch.ones(3))  # the other branch: its resume function compiles now
    assert mc.metrics.graphs_compiled == 3
    x = torch.randn(5, 2)
    torch.testing.assert_close(cf(x), data_dependent_if(x))  # new shape: recompiles


def test_transformed_program_is_readable_python():
    out = mc.explain(print_between)(torch.randn(3), torch.randn(3))
    program = out.transformed_program()
    assert "print('between graphs')" in program
    assert "return __resume_at_" in program
    compile(program.replace("# ----", "#"), "<program>", "exec")  # valid Python


def test_logs_graph_breaks(caplog):
    mc.set_logs("graph_breaks")
    try:
        with caplog.at_level(logging.INFO, logger="minicompile"):
            logger = logging.getLogger("minicompile")
            logger.addHandler(caplog.handler)
            mc.compile(print_between, backend="eager")(torch.randn(2), torch.randn(2))
            logger.removeHandler(caplog.handler)
    finally:
        mc.set_logs()
    assert "Graph break" in caplog.text and "print" in caplog.text


INSTALLED_PREFIXES = ("__compiled_fn_", "__resume_at_", "__transformed_code_", "__const_",
                      "__eager_", "__compiled_", "__torch_")


def test_compiling_leaves_the_module_globals_alone(capsys):
    """Compiled graphs, resume functions and helpers are closure variables of the transformed
    function, not globals: real Dynamo, run on the same module afterwards, would refuse
    ``__resume_at_...`` names that already exist there."""
    before = set(globals())
    for fn, make_args in PROGRAMS:
        mc.compile(fn, backend="eager")(*make_args())
        mc.explain(fn)(*make_args())
    added = {n for n in set(globals()) - before if n.startswith(INSTALLED_PREFIXES)}
    assert not added
    assert mc.metrics.graph_breaks > 0
    torch._dynamo.reset()
    for fn, make_args in PROGRAMS[:4] + PROGRAMS[6:8]:  # breaks with resume functions
        assert torch._dynamo.explain(fn)(*make_args()).graph_count >= 1
    capsys.readouterr()
    # and the transformed functions still read the user's live globals for everything else
    global LOG
    cf = mc.compile(bumpy, backend="eager")
    LOG.clear()
    cf(torch.randn(3))
    old, LOG = LOG, []
    try:
        cf(torch.randn(3))
        assert len(LOG) == 1 and len(old) == 1
    finally:
        LOG = old


class PrintingBox:
    """Subscripting it runs a print: the root frame breaks at the subscript instruction."""

    def __init__(self, items):
        self.items = items

    def __getitem__(self, key):
        print("get", key)
        return self.items[key]

    def __setitem__(self, key, value):
        print("set", key)
        self.items[key] = value


def slice_break(x, box, n):
    out = x.sin() * 2
    head = box[:n]  # 3.12: BINARY_SLICE, normalised to BUILD_SLICE 2; BINARY_SUBSCR
    box[1:n] = head  # 3.12: STORE_SLICE
    return out + len(head)


def test_break_at_a_slice_resumes_with_the_original_stack(capsys):
    """The break happens before the whole (3.12: BINARY_SLICE) instruction, so the resume
    function gets the stack the original instruction expects."""
    x = torch.randn(5)
    eager_box = PrintingBox([1, 2, 3, 4])
    expected = slice_break(x, eager_box, 3)
    eager_out = capsys.readouterr().out
    box = PrintingBox([1, 2, 3, 4])
    got = mc.compile(slice_break, backend="eager")(x, box, 3)
    torch.testing.assert_close(got, expected)
    assert capsys.readouterr().out == eager_out and box.items == eager_box.items
    assert mc.metrics.graph_breaks >= 1


def test_no_recompile_after_a_break_inside_no_grad(capsys):
    """The resume function re-enters a fresh ``torch.no_grad()`` each call: only its type is
    guarded, so later calls hit the cache."""
    cfn = mc.compile(two_breaks_in_no_grad, backend="eager")
    keep = []
    for _ in range(4):
        keep.append(torch.no_grad())  # new objects, new ids
        cfn(torch.randn(3))
    assert mc.metrics.recompiles == 0 and mc.metrics.guard_failures == 0


def breaking_callee_with_kwargs(x, scale=1, **kw):
    print("kw")
    return x * scale + len(kw)


def calls_with_double_star(x):
    d = {"extra": 1}
    return breaking_callee_with_kwargs(x, scale=2, **d) * 2


def test_explain_agrees_with_metrics_when_a_frame_runs_eagerly(capsys):
    out = mc.explain(calls_with_double_star)(torch.randn(3))
    assert out.graph_count == mc.metrics.graphs_compiled
    assert len(out.break_reasons) == mc.metrics.graph_breaks >= 1


class ReadsWeightThenBreaks(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(3, 4))

    def forward(self, x):
        w = self.weight
        print(end="")  # a graph break: the graph so far only returns the parameter
        return x @ w


def test_break_after_a_graph_that_only_returns_parameters():
    """That graph has no ops, but the code after the break reads its output: it must still run
    (it was skipped: NameError graph_out_0), and AOT autograd's min-cut partitioner must take a
    joint graph with nothing to partition (it raised StopIteration and fell back)."""
    model = ReadsWeightThenBreaks()
    x = torch.randn(2, 3)
    out = mc.compile(model, backend="inductor")(x)
    torch.testing.assert_close(out, model(x))
    out.sum().backward()
    torch.testing.assert_close(model.weight.grad, x.t() @ torch.ones(2, 4))
    assert mc.metrics.eager_fallbacks == 0


@torch._disable_dynamo
def never_traced(x):
    record("never_traced", x.shape)
    return x + 1


def calls_a_disabled_function(x):
    return never_traced(x.sin()).cos()


def test_a_function_wrapped_in_disable_dynamo_runs_natively_with_its_reason():
    """torch._disable_dynamo (Optimizer.zero_grad wears it) asks never to be traced: tracing its
    wrapper put a function into the graph (an internal error), then compiling the wrapper as its
    own frame hit the same. Now the call is a break, the function runs natively, once."""
    LOG.clear()
    x = torch.randn(5)
    out = mc.explain(calls_a_disabled_function)(x)
    assert out.graph_count == 2 and len(out.break_reasons) == 1, out.break_reasons
    reason = str(out.break_reasons[0])
    assert "torch._disable_dynamo" in reason and "internal error" not in reason, reason
    LOG.clear()
    torch.testing.assert_close(mc.compile(calls_a_disabled_function)(x),
                               calls_a_disabled_function(x))
    assert LOG == [("never_traced", x.shape)] * 2  # once compiled, once eager


def test_an_optimizer_step_breaks_at_zero_grad_with_its_reason():
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        loss = model(x).sum()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    out = mc.explain(step)(torch.randn(3, 4))
    reasons = [str(r) for r in out.break_reasons]
    assert any("zero_grad is wrapped in torch._disable_dynamo" in r for r in reasons), reasons
    assert not any("internal error" in r for r in reasons), reasons


class WithLoggingProperty(torch.nn.Module):
    """transformers' ``self.loss_function``: a property whose getter logs a warning."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    @property
    def loss_fn(self):
        logging.getLogger("minicompile.tests").warning("using the default loss")
        return torch.nn.functional.mse_loss

    def forward(self, x, y):
        h = self.lin(x).relu()
        loss = self.loss_fn(h, y)  # the break: LOAD_ATTR (3.11) / LOAD_ATTR method bit (3.12+)
        return loss * 2, h


def test_a_property_that_breaks_is_read_natively_and_both_sides_compile(caplog):
    m, x, y = WithLoggingProperty(), torch.randn(3, 4), torch.randn(3, 4)
    with caplog.at_level(logging.WARNING, logger="minicompile.tests"):
        expected = m(x, y)
        torch.testing.assert_close(mc.compile(m)(x, y), expected)
    assert caplog.text.count("using the default loss") == 2  # eager's and the compiled one
    assert mc.metrics.eager_fallbacks == 0
    out = mc.explain(m)(x, y)
    assert out.graph_count == 2 and "reading .loss_fn, natively" in str(out.break_reasons[0])
    grad = torch.autograd.grad(mc.compile(m)(x, y)[0], m.lin.weight)[0]  # through both graphs
    torch.testing.assert_close(grad, torch.autograd.grad(m(x, y)[0], m.lin.weight)[0])


class MarksItsInputForCheckpointing(torch.nn.Module):
    """wav2vec2's feature encoder: ``hidden_states.requires_grad = True`` on a tensor the
    graph made, so that gradient checkpointing has a leaf to differentiate from."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(1, 4, 3)

    def forward(self, x):
        hidden = x[:, None] * 2
        if self.training:
            hidden.requires_grad = True
        return torch.relu(self.conv(hidden)).sum(-1), hidden


def test_an_attribute_assignment_that_breaks_runs_natively_and_the_rest_compiles():
    m, x = MarksItsInputForCheckpointing(), torch.randn(2, 16)
    out, hidden = m(x)
    grads = torch.autograd.grad(out.sum(), [m.conv.weight, hidden])
    mc.reset()
    mc.metrics.reset()
    got, got_hidden = mc.compile(m)(x)
    assert got_hidden.requires_grad and got_hidden.is_leaf  # the assignment happened
    torch.testing.assert_close(got, out)
    for g, want in zip(torch.autograd.grad(got.sum(), [m.conv.weight, got_hidden]), grads):
        torch.testing.assert_close(g, want)
    assert mc.metrics.eager_fallbacks == 0  # the convolution after it is in a graph
    explanation = mc.explain(m)(x)
    assert explanation.graph_count == torch._dynamo.explain(m)(x).graph_count == 2
    assert "assigned natively" in str(explanation.break_reasons[0])


def loss_and_grad_of_a_fresh_leaf(x):
    """A detection loss's gradient check: a copy made a leaf inside the function, a loss over
    it, backward, and the leaf's gradient."""
    x = x.clone().requires_grad_()
    loss = (x.sigmoid() * x).sum()
    loss.backward()
    return loss.detach(), x.grad


def loss_and_grad_of_an_input_made_a_leaf(x):
    x.requires_grad_()
    loss = (x * x).sum()
    loss.backward()
    return loss.detach(), x.grad


@pytest.mark.parametrize("fn", [loss_and_grad_of_a_fresh_leaf,
                                loss_and_grad_of_an_input_made_a_leaf])
def test_requires_grad_turned_on_inside_the_function_runs_natively(fn):
    # Traced into the graph, the loss came out without a grad_fn and backward() raised.
    x = torch.randn(3, 5)
    expected = fn(x.clone())
    mc.reset()
    torch.testing.assert_close(mc.compile(fn)(x.clone()), expected)
    torch._dynamo.reset()
    assert mc.explain(fn)(x.clone()).graph_break_count >= 1

def scaled_then_printed(x, scale):
    keys = {k: scale * k for k in range(3)}  # a comprehension: a function closing over `scale`
    y = x * keys[2]
    print("between")  # the break: `scale` is a cell variable of this frame
    shift = lambda t: t + scale  # noqa: E731 -- made after the break, over the resumed cell
    scale = scale + 1
    return shift(y), scale


def test_a_break_in_a_frame_whose_variables_are_closed_over_resumes(capsys):
    """transformers' ``capture_outputs`` wrapper closes over ``self`` and ``kwargs``: a break
    in the model it calls must resume in it, not leave it to eager. The comprehension's
    function is gone by the break, so the resumed frame gets new cells with the same values;
    a closure still alive at the break would need the very same cells: that frame runs
    eagerly, with its reason."""
    x = torch.randn(3)
    expected = scaled_then_printed(x, 2.0)
    mc.reset()
    mc.metrics.reset()
    got = mc.compile(scaled_then_printed)(x, 2.0)
    torch.testing.assert_close(got[0], expected[0])
    assert got[1] == expected[1] == 3.0
    assert mc.metrics.eager_fallbacks == 0 and mc.explain(scaled_then_printed)(x, 2.0).graph_count == 2

    def held_across(x):
        a = x + 1
        inner = lambda: a * 2  # noqa: E731 -- alive across the break
        print("between")
        return inner()

    torch.testing.assert_close(mc.compile(held_across)(x), held_across(x))
    assert "a closure over them" in str(mc.explain(held_across)(x).break_reasons[0])


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_an_out_tensor_the_call_resizes_runs_natively(backend):
    """``torch.sin(x, out=o)`` with an empty ``o``: eager resizes ``o``. Traced, the fake ``o``
    was resized in place and the graph took it for an input of the new size; the copy back
    into the real, empty ``o`` then failed. The call runs natively, with its reason."""
    def f(x, o):
        torch.sin(x, out=o)
        return o * 2

    x = torch.randn(5)
    expected, o_expected = f(x, torch.empty(0)), torch.sin(x)
    o = torch.empty(0)
    got = mc.compile(f, backend=backend)(x, o)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(o, o_expected)
    reasons = [b.reason for b in mc.explain(f)(x, torch.empty(0)).break_reasons]
    assert any("resizes its out tensor" in r for r in reasons)


# --- one code, many closures ----------------------------------------------------------------------

class _NotTraced(set):  # building it breaks the graph
    pass


def _break_then_read(x):
    def inner(n):
        _NotTraced()  # a break: the rest runs in a resume function over inner's closure
        return x * 2 + n
    return inner


def _break_in_loop(x):
    def inner(n):
        for _ in range(2):
            _NotTraced()  # a break in a loop: the frame runs eagerly
            n = n + 1
        return x * 2 + n
    return inner


def _breaks_then_closure_over_local(x):
    def inner(n):
        s = _NotTraced()
        n += len(s)  # a second break, in the first resume function
        y = x + 1
        return torch.stack([y * i for i in range(1, 3)]).sum(0) + n  # a closure over y
    return inner


@pytest.mark.parametrize("make", [_break_then_read, _break_in_loop, _breaks_then_closure_over_local])
def test_each_call_runs_in_its_own_closure(make):
    """A nested function's code is compiled once and called with other closures (a function
    defined inside another, a decorator's wrapper): what runs after a break (a resume
    function, an eager copy of the frame) must read this call's closure. It read the closure
    of the call that compiled it: the first ``x`` again."""
    mc.reset()
    for _ in range(3):
        fn = make(torch.randn(4))
        torch.testing.assert_close(mc.compile(fn, backend="eager")(1), fn(1))


def slice_by_a_tensor_span(w, q):
    """DeBERTa's relative embeddings: ``rel[m - span : m + span, :]``, span a 0-d tensor."""
    span = torch.tensor(min(q.size(-2), 8))
    return w[8 - span: 8 + span, :] * 2 + q.sum()


def store_into_a_slice_by_a_tensor(w, q):
    w = w.clone()
    w[q.size(0):torch.tensor(6)] = q.sum()
    return w.cos()


@pytest.mark.parametrize("fn", [slice_by_a_tensor_span, store_into_a_slice_by_a_tensor])
@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_a_slice_with_tensor_bounds_reads_them_natively_and_both_sides_compile(fn, backend):
    # Left in the graph, the bounds were read while AOT traced it (a constant tensor's
    # .item()), and the whole graph ran eagerly; resumed *at* BUILD_SLICE, the rest of the
    # frame did. As real Dynamo: u = t.item() (a break), then the slice of numbers.
    w, q = torch.randn(16, 4), torch.randn(2, 5, 4)
    mc.reset()
    mc.metrics.reset()
    torch.testing.assert_close(mc.compile(fn, backend=backend)(w, q), fn(w, q))
    assert mc.metrics.eager_fallbacks == 0, mc.metrics.fallback_reasons
    assert mc.metrics.graphs_compiled == 2
    explanation = mc.explain(fn)(w, q)
    assert explanation.graph_count == 2
    assert "a slice bound, read natively" in str(explanation.break_reasons[0])
