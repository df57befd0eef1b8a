"""``mc.explain`` next to ``torch._dynamo.explain``: graph_count and graph_break_count have the
real definitions (graphs handed to the backend; one less than that), so on the same function
both report the same numbers -- on frames that run eagerly and on breaks inside called
functions too."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo

import minicompile as mc


def straight_line(x):
    return (x.sin() + 1).relu()


def one_print(x):
    y = x * 2
    print("break")
    return y + 1


def two_prints(x):
    y = x * 2
    print("one")
    y = y.cos()
    print("two")
    return y - 1


def _breaking_callee(x):
    y = x + 1
    print("inside")
    return y * 2


def nested_break(x):
    return _breaking_callee(x.sin()).cos()


def _outer_callee(x):
    return _breaking_callee(x * 3) + 1


def doubly_nested_break(x):
    return _outer_callee(x).relu()


def break_in_loop(x):  # the frame runs eagerly (a break inside a loop), no graph of its own
    for _ in range(2):
        x = x + 1
        print("loop")
    return x


def _eager_callee(x):
    for _ in range(2):
        x = x * 2
        print("loop")
    return x


def eager_frame_called(x):  # the callee runs eagerly; the caller still compiles around it
    return _eager_callee(x + 1).sum()


def data_dependent_if(x):
    if x.sum() > 0:
        return x + 1
    return x - 1


def item_at_end(x):
    return (x * 2).sum().item()


def item_in_middle(x):
    s = x.sum().item()
    return x * s


def no_tensor_ops(x):  # no graph: -1 breaks, as torch._dynamo.explain says
    return x


def constant_only(x):
    return len([1, 2, 3])


CASES = [straight_line, one_print, two_prints, nested_break, doubly_nested_break, break_in_loop,
         eager_frame_called, data_dependent_if, item_at_end, item_in_middle, no_tensor_ops,
         constant_only]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_counts_equal_torch_dynamo_explain(fn, capsys):
    x = torch.randn(4)
    ours = mc.explain(fn)(x)
    torch._dynamo.reset()
    theirs = torch._dynamo.explain(fn)(x)
    capsys.readouterr()
    assert (ours.graph_count, ours.graph_break_count) == \
        (theirs.graph_count, theirs.graph_break_count), (str(ours), str(theirs))


def test_cases_cover_every_shape_of_answer(capsys):
    """The side-by-side comparison is only worth something if the answers differ: no graph,
    one graph, several graphs, and a frame run eagerly that still lists its reason."""
    counts = {fn.__name__: mc.explain(fn)(torch.randn(4)).graph_count for fn in CASES}
    capsys.readouterr()
    assert counts["no_tensor_ops"] == 0 and counts["straight_line"] == 1
    assert counts["two_prints"] == 3 and counts["doubly_nested_break"] >= 2
    eager = mc.explain(break_in_loop)(torch.randn(4))
    assert eager.graph_count == 0 and eager.graph_break_count == -1
    assert any("loop" in str(r) for r in eager.break_reasons)


def test_a_break_inside_an_inlined_call_names_the_callee_as_the_user_knows_it():
    """The break's reason ends with the call the frame could not inline, named by the module's
    class or the user's own expression, not by the name the transformed code calls it by."""
    class Block(torch.nn.Module):
        def forward(self, x):
            print("in block")
            return x.cos()

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            return self.block(x.sin()) + 1

    reasons = [str(b).splitlines()[0] for b in mc.explain(Net())(torch.randn(4)).break_reasons]
    assert reasons[0].endswith("(call to Block.forward)"), reasons
    assert not any("__compiled" in r for r in reasons), reasons
