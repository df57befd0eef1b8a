"""Where a Triton kernel checks a loaded index (minicompile/inductor/codegen/triton_checks.py):
an index tensor the kernel reads whole is checked on the host before the launch (one min and
max; no check and no bounds mask in the kernel); one read in part keeps its check in the
kernel; in a looped reduction a check whose index does not change along the row runs once per
row, before the loop. Each way raises eager's error, message included, and never computes from
an index outside its tensor. Run on CPU tensors under ``TRITON_INTERPRET=1`` (conftest sets it)."""

import os

import pytest
import torch
import torch.nn.functional as F

import minicompile as mc
from minicompile import config
from minicompile.inductor.codegen.wrapper import WrapperCodeGen

pytest.importorskip("triton")

HOST = "checked on the host before the launch"
IN_KERNEL = "triton_helpers.check_index("
W = torch.randn(5, 3)
LONG_ROWS = torch.randn(5, 1500)  # rows past 1024 elements: a looped reduction


@pytest.fixture(autouse=True)
def triton_cpu(monkeypatch, request):
    on_gpu = request.node.get_closest_marker("gpu") is not None
    if not on_gpu and os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
        pytest.skip("Triton kernels on CPU tensors need TRITON_INTERPRET=1")
    monkeypatch.setattr(config.inductor, "cpu_backend", "triton")
    mc.reset()
    yield
    mc.reset()


@pytest.fixture
def sources(monkeypatch):
    """The source of every kernel defined while the test runs."""
    seen: list[str] = []
    define = WrapperCodeGen.define_kernel
    monkeypatch.setattr(WrapperCodeGen, "define_kernel",
                        lambda self, n, k, src: seen.append(src) or define(self, n, k, src))
    return seen


def same_as_eager(fn, *args, **compile_kwargs):
    """The compiled call returns eager's result, or raises eager's exception with its message."""
    compiled = mc.compile(fn, backend="inductor", **compile_kwargs)
    try:
        expected = fn(*args)
    except (IndexError, RuntimeError) as error:
        with pytest.raises(type(error)) as raised:
            compiled(*args)
        assert str(raised.value) == str(error)
        return
    torch.testing.assert_close(compiled(*args), expected)


READ_WHOLE = {  # the kernel loads every element of the index tensor as an index
    "embedding": (lambda i: F.embedding(i, W) * 2, "index out of range in self"),
    "getitem": (lambda i: W[i] + 1, "is out of bounds for dimension 0 with size 5"),
    "gather": (lambda i: torch.gather(W, 1, i.view(-1, 1)) + 1, "out of bounds"),
}


@pytest.mark.cpu_only  # (eager's out-of-range index on a GPU ends the process)
@pytest.mark.parametrize("name", list(READ_WHOLE))
def test_an_index_tensor_read_whole_is_checked_on_the_host(name, sources):
    fn, message = READ_WHOLE[name]
    bad = torch.tensor([1, 9, 0])
    with pytest.raises((IndexError, RuntimeError), match=message):
        fn(bad)  # (the case is what it says)
    same_as_eager(fn, bad)
    same_as_eager(fn, torch.tensor([2, 0, 1]))
    same_as_eager(fn, torch.tensor([-1, 2, 0]))  # x[-1] wraps; gather's -1 raises
    source = "\n".join(sources)
    assert HOST in source and IN_KERNEL not in source and "_in_bounds" not in source, source


@pytest.mark.cpu_only
def test_an_index_tensor_used_twice_is_checked_once(monkeypatch):
    from minicompile.inductor.checks import HostCheck

    runs = []
    run = HostCheck.run
    monkeypatch.setattr(HostCheck, "run", lambda self, args: runs.append(self) or run(self, args))
    fn = lambda i: W[i] * W[i].sin()  # noqa: E731
    same_as_eager(fn, torch.tensor([4, 0, 2]))
    assert len(runs) == 1
    same_as_eager(fn, torch.tensor([4, 5, 2]))


@pytest.mark.cpu_only
@pytest.mark.parametrize("row", [(), (3,)], ids=["vector", "rows"])
def test_a_check_reads_the_size_the_launch_is_given(row, sources):
    """With dynamic shapes the dimension's size is a parameter of the kernel: the check takes it
    from the launch's arguments, call by call (on the host for a vector's ``w[i]``, whose index
    tensor is read at ``xindex``; in the kernel for rows, read at ``xindex // s1``)."""
    fn = lambda w, i: w[i] * 2  # noqa: E731
    compiled = mc.compile(fn, backend="inductor", dynamic=True)
    for rows in (5, 8):
        w = torch.randn(rows, *row)
        torch.testing.assert_close(compiled(w, torch.tensor([rows - 1, 0])),
                                   fn(w, torch.tensor([rows - 1, 0])))
        with pytest.raises(IndexError) as raised:
            compiled(w, torch.tensor([0, rows]))
        assert str(raised.value) == f"index {rows} is out of bounds for dimension 0 with size {rows}"
    assert (HOST in "\n".join(sources)) == (row == ())


PARTLY_READ = {  # eager never reads i[0]: a check of the whole tensor would raise wrongly
    "slice": lambda i: W[i[1:]] * 2,
    "every_other": lambda i: F.embedding(i[1::2], W) + 1,
}


@pytest.mark.cpu_only
@pytest.mark.parametrize("name", list(PARTLY_READ))
def test_an_index_tensor_read_in_part_is_checked_in_the_kernel(name, sources):
    fn = PARTLY_READ[name]
    same_as_eager(fn, torch.tensor([99, 1, 4, 2, 3]))  # i[0] is out of range, unread: no error
    same_as_eager(fn, torch.tensor([0, 7, 4, 7, 1]))  # a read one is: eager's error
    source = "\n".join(sources)
    assert IN_KERNEL in source and HOST not in source, source


@pytest.mark.cpu_only
def test_a_check_that_does_not_change_along_the_row_runs_before_the_loop(sources):
    """``LONG_ROWS[i[1:]].sum(-1)``: the index of row x is the same at every step of the loop
    over the row's 1500 elements, so it is loaded and checked once per row, before the loop."""
    fn = lambda i: LONG_ROWS[i[1:]].sum(-1)  # noqa: E731
    same_as_eager(fn, torch.tensor([99, 1, 4, 2]))
    same_as_eager(fn, torch.tensor([0, 1, -6, 2]))  # eager: index -6 is out of bounds
    same_as_eager(fn, torch.tensor([0, 1, -5, 2]))  # (-5 wraps to row 0)
    (source,) = [s for s in sources if "for roffset" in s]
    before, loop = source.split("for roffset", 1)
    assert IN_KERNEL in before and IN_KERNEL not in loop, source
    assert "_in_bounds" in loop  # the loads in the loop stay masked to the index's bounds


@pytest.mark.cpu_only
def test_a_check_that_changes_along_the_row_stays_in_the_loop(sources):
    fn = lambda i: torch.gather(LONG_ROWS, 1, i[:, 1:]).sum(-1)  # noqa: E731
    i = torch.randint(0, 1500, (5, 1201))
    same_as_eager(fn, i)
    i[3, 700] = 1500
    same_as_eager(fn, i)
    (source,) = [s for s in sources if "for roffset" in s]
    assert IN_KERNEL in source.split("for roffset", 1)[1], source


@pytest.mark.gpu
def test_on_the_gpu_the_hoisted_check_is_a_device_assert_before_the_loop(sources, monkeypatch):
    """On a GPU nothing is checked on the host; with the debug flag the kernel's device assert
    of a row's index runs before the loop, and an in-range call gives eager's result. (Enough
    rows to fill the GPU: a few would be split into chunks shorter than a loop's threshold.)"""
    monkeypatch.setattr(config.inductor, "triton_device_asserts", True)
    rows = LONG_ROWS.cuda()
    i = torch.cat([torch.tensor([99]), torch.randint(0, 5, (4096,))]).cuda()
    fn = lambda i: rows[i[1:]].sum(-1)  # noqa: E731
    torch.testing.assert_close(mc.compile(fn, backend="inductor")(i), fn(i))
    (source,) = [s for s in sources if "for roffset" in s]
    before, loop = source.split("for roffset", 1)
    assert IN_KERNEL in before and IN_KERNEL not in loop and HOST not in source, source
