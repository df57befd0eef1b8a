"""The guard tree (minicompile/dynamo/guard_manager.py): each source read once, checks folded
only where one implies another, and the function accepting exactly what the listing accepts."""

import collections
import re
import types

import pytest
import torch

import minicompile as mc
from minicompile.dynamo.eval_frame import cache_entries
from minicompile.dynamo.guard_manager import GuardFn
from minicompile.dynamo.guards import Guard, GuardKind
from minicompile.dynamo.source import AttrSource, LocalSource


@pytest.fixture(autouse=True)
def _reset():
    mc.reset()
    yield
    mc.reset()


class Counted:
    """An attribute that counts its reads (a data descriptor: a read through ``getattr``, a
    guard's included, calls ``__get__``). Not a ``__getattribute__`` hook: the tracer runs such
    a hook while tracing, and guards read past it, as real Dynamo's do."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        obj.reads[self.name] += 1
        return obj.__dict__[self.name]

    def __set__(self, obj, value):
        obj.__dict__[self.name] = value


class Config:
    """A config object that counts the reads of each of its attributes."""
    scale, shift = Counted(), Counted()

    def __init__(self):
        self.reads = collections.Counter()
        self.scale, self.shift = 2.0, True


class Block(torch.nn.Module):
    def __init__(self, config: Config):
        super().__init__()
        self.lin, self.drop, self.config = torch.nn.Linear(4, 4), torch.nn.Dropout(0.0), config

    def forward(self, x):
        y = self.drop(self.lin(x)) * self.config.scale
        return y + 1 if self.config.shift else y


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.config = Config()
        self.blocks = torch.nn.Sequential(Block(self.config), Block(self.config))

    def forward(self, x):
        return self.blocks(x) * OFFSET


OFFSET = 3


def listing_fn(guard):
    """The listing as a function (exceptions count as a failed check, as in the cache)."""
    namespace: dict = {}
    exec(guard.source, {"torch": torch, **guard.scope.names}, namespace)

    def check(L, G):
        try:
            return bool(namespace[guard.name](L, G))
        except Exception:
            return False
    return check


def tree_fn(guard):
    def check(L, G):
        try:
            return bool(guard(L, G))
        except Exception:
            return False
    return check


def test_the_tree_reads_each_value_once():
    """The listing reads ``L['self'].config.scale`` in each of its checks and in each block;
    the tree reads each attribute of one path once per call, whatever the checks on it."""
    net = Net()
    cfn = mc.compile(net, backend="eager")
    x = torch.randn(2, 4)
    cfn(x)
    guard = cache_entries(cfn)[0].guard
    assert guard.source.count(".config.scale") > 2  # type and value, in two blocks
    L = {"self": net, "x": x}
    net.config.reads.clear()
    assert guard(L, Net.forward.__globals__)
    paths = len(re.findall(r"= \w+\.scale\n", guard.runs))  # the paths that read it
    assert paths == 2 and net.config.reads["scale"] == paths, guard.runs
    assert net.config.reads["shift"] == paths


MUTATIONS = {  # name -> mutate(net, x) -> the new x
    "nothing": lambda net, x: x,
    "config float": lambda net, x: setattr(net.config, "scale", 3.0) or x,
    "config flag": lambda net, x: setattr(net.config, "shift", False) or x,
    "config int for float": lambda net, x: setattr(net.config, "scale", 2) or x,
    "training flag": lambda net, x: (net.blocks[1].drop.train(False), x)[1],
    "new parameter": lambda net, x: setattr(net.blocks[0].lin, "weight",
                                            torch.nn.Parameter(torch.randn(4, 4))) or x,
    "parameter resized": lambda net, x: setattr(net.blocks[0].lin.bias, "data",
                                                torch.randn(1)) or x,
    "requires_grad": lambda net, x: (net.blocks[1].lin.weight.requires_grad_(False), x)[1],
    "input dtype": lambda net, x: x.double(),
    "input shape": lambda net, x: torch.randn(3, 4),
    "input strides": lambda net, x: torch.randn(4, 2).t(),
    "input requires_grad": lambda net, x: x.clone().requires_grad_(),
    "input device": lambda net, x: x.to("meta"),
    "global": lambda net, x: globals().__setitem__("OFFSET", 4) or x,
    "forward hook": lambda net, x: (net.blocks[0].lin.register_forward_hook(
        lambda m, i, o: o * 2), x)[1],
    "instance forward": lambda net, x: setattr(net.blocks[1], "forward", lambda y: y) or x,
    "class of a module": lambda net, x: setattr(net.blocks[0].drop, "__class__",
                                                torch.nn.Identity) or x,
    "module replaced": lambda net, x: net.blocks.__setitem__(0, Block(net.config)) or x,
}


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_the_tree_accepts_what_the_listing_accepts(mutation):
    """After each change the tree's function and the listing give the same verdict (and it is
    'reuse' only when nothing changed); the compiled call then equals eager."""
    global OFFSET
    OFFSET = 3
    torch.manual_seed(0)
    net, x = Net(), torch.randn(2, 4)
    cfn = mc.compile(net, backend="eager")
    cfn(x)
    guard = cache_entries(cfn)[0].guard
    G = Net.forward.__globals__
    try:
        x = MUTATIONS[mutation](net, x)
        L = {"self": net, "x": x}
        verdict = tree_fn(guard)(L, G)
        assert verdict == listing_fn(guard)(L, G)
        assert verdict == (mutation == "nothing")
        if x.device.type == "meta":
            return
        with torch.no_grad():
            try:
                expected = net(x)
            except RuntimeError as e:  # a float64 input to a float32 layer: as in eager
                with pytest.raises(type(e)):
                    cfn(x)
            else:
                torch.testing.assert_close(cfn(x), expected)
    finally:
        OFFSET = 3


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.eps = torch.nn.Conv2d(2, 2, 3, padding=1), 1e-5

    def forward(self, x):
        return self.conv(x) * (1 + self.eps)


CONSTANT_MUTATIONS = {  # name -> (mutate(net), whether the entry still holds)
    "nothing": (lambda net: None, True),
    "an equal tuple, another object": (lambda net: setattr(net.conv, "padding", tuple([1, 1])), True),
    "another padding": (lambda net: setattr(net.conv, "padding", (0, 0)), False),
    "a list for the tuple": (lambda net: setattr(net.conv, "padding", [1, 1]), False),
    "a float for an int in it": (lambda net: setattr(net.conv, "stride", (1.0, 1)), False),
    "an equal float, another object": (lambda net: setattr(net, "eps", float("1e-05")), True),
    "another float": (lambda net: setattr(net, "eps", 1e-3), False),
}


@pytest.mark.parametrize("mutation", CONSTANT_MUTATIONS)
def test_constants_held_as_traced_pass_by_identity_and_others_are_checked(mutation):
    """A conv's ``padding`` and a module's ``eps`` are the very objects the trace read, call
    after call: the tree tests them by identity first (``is not ___tuple``, ``is ___const``),
    skipping a tuple's length and items. An equal value in another object still passes, by the
    full checks; another value fails, as in the listing, and the call then equals eager."""
    torch.manual_seed(0)
    net, x = ConvNet(), torch.randn(1, 2, 5, 5)
    cfn = mc.compile(net, backend="eager")
    cfn(x)
    guard = cache_entries(cfn)[0].guard
    assert "_padding is not ___tuple" in guard.runnable and "is ___const" in guard.runnable
    mutate, holds = CONSTANT_MUTATIONS[mutation]
    mutate(net)
    L = {"self": net, "x": x}
    verdict = tree_fn(guard)(L, ConvNet.forward.__globals__)
    assert verdict == listing_fn(guard)(L, ConvNet.forward.__globals__) == holds
    if mutation == "a float for an int in it":
        return  # (eager raises: conv2d takes ints)
    with torch.no_grad():
        torch.testing.assert_close(cfn(x), net(x))


def test_identity_implies_the_class_only_where_python_fixes_it():
    """``id(f) == N`` pins the class of a function (CPython refuses ``__class__`` assignment on
    it): its TYPE_MATCH is dropped. A module's class can be reassigned: its type check stays,
    and catches the reassignment."""
    def f():
        return 1

    module = torch.nn.ReLU()
    guards = []
    for name, obj in (("f", f), ("m", module)):
        guards += [Guard(LocalSource(name), GuardKind.ID_MATCH, obj),
                   Guard(LocalSource(name), GuardKind.TYPE_MATCH, type(obj))]
    guard = GuardFn(guards)
    assert "type(f)" not in guard.runs and "type(m) is" in guard.runs
    assert "type(L['f'])" in guard.source  # the listing keeps every guard
    L = {"f": f, "m": module}
    assert guard(L, {})
    module.__class__ = torch.nn.Identity
    assert not guard(L, {}) and not listing_fn(guard)(L, {})


def test_identity_does_not_imply_attributes():
    """An attribute of an object pinned by identity can still change: it stays checked."""
    fn = types.SimpleNamespace(flag=True)
    src = LocalSource("o")
    guard = GuardFn([Guard(src, GuardKind.ID_MATCH, fn),
                     Guard(AttrSource(src, "flag"), GuardKind.EQUALS_MATCH, True)])
    assert guard({"o": fn}, {})
    fn.flag = False
    assert not guard({"o": fn}, {})


def test_a_tied_weight_is_one_argument_of_the_tensor_check():
    """A model whose output layer shares its embedding's weight reads one Parameter under two
    paths. torch's C++ tensor check refuses an argument given twice (aliasing), so the tree
    passes it once: the C check itself accepts the unchanged model (no fall back to Python on
    every call), and a change of the weight still fails the guard."""
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.out = torch.nn.Embedding(8, 4), torch.nn.Linear(4, 8, bias=False)
            self.out.weight = self.emb.weight

        def forward(self, ids):
            return self.out(self.emb(ids))

    model, ids = Tied(), torch.tensor([1, 2, 3])
    cfn = mc.compile(model, backend="eager")
    cfn(ids)
    guard, G = cache_entries(cfn)[0].guard, Tied.forward.__globals__
    L = {"self": model, "ids": ids}
    assert guard(L, G)
    call = re.search(r"(___check_tensors_\d+)\((.*?)\)", guard.runnable)
    by_var = {node.var: source for source, node in guard.tree.managers.items()}
    args = [eval(by_var[v].name(), {}, {"L": L}) for v in call.group(2).split(", ")]
    assert len({id(a) for a in args}) == len(args) == 2  # the weight once, and the ids
    assert guard.fn.__globals__[call.group(1)](*args)
    model.emb.weight.data = torch.randn(8, 5)
    assert not guard(L, G) and not listing_fn(guard)(L, G)


def test_locals_never_shadow_the_names_the_checks_use():
    """Arguments named like the builtins and modules the checks call (``id``, ``type``,
    ``torch``) are held in locals of other names; the guard still tells their values apart."""
    def f(id, type, torch, x):
        return x * id + type + torch

    cfn = mc.compile(f, backend="eager")
    x = globals()["torch"].randn(3)
    for args in ((2, 3, 4), (2, 3, 4), (5, 3, 4), (2, 1, 4), (2, 3, 0)):
        globals()["torch"].testing.assert_close(cfn(*args, x), f(*args, x))
    guard = cache_entries(cfn)[0].guard
    assert not re.search(r"^\s+(id|type|torch) = ", guard.runs, re.M)
