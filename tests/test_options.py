"""One immutable options object per compile (inductor/options.py): built once from the global
knobs, the mode and ``options=``; read by every stage below ``compile_fx``, never the global
config."""

import ast
import dataclasses
import pathlib

import pytest
import torch

import minicompile as mc
from minicompile import config
from minicompile.inductor.options import MODE_OPTIONS, InductorOptions

PACKAGE = pathlib.Path(mc.__file__).parent
# the stages below compile_fx: only options.py reads minicompile.config there
BELOW_COMPILE_FX = [PACKAGE / "inductor", PACKAGE / "cudagraphs"]


def imports_config(path: pathlib.Path) -> bool:
    """Whether a module imports ``minicompile.config`` (``from .. import config``, ``from ...
    import config``, ``import minicompile.config``, ``from minicompile import config``)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and any(a.name == "config" for a in node.names):
            if node.level > 0 or node.module == "minicompile":
                return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("config") \
                and (node.level > 0 or (node.module or "").startswith("minicompile")):
            return True
        if isinstance(node, ast.Import) and any(a.name == "minicompile.config" for a in node.names):
            return True
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "config" and node.attr in ("inductor", "debug"):
            return True  # config.inductor.x: the global knobs, imported or not
    return False


def test_no_stage_below_compile_fx_reads_the_global_config():
    readers = [str(p.relative_to(PACKAGE)) for root in BELOW_COMPILE_FX if root.exists()
               for p in sorted(root.rglob("*.py"))
               if p.name != "options.py" and imports_config(p)]
    assert readers == [], f"read the compile's InductorOptions instead: {readers}"


def test_the_check_sees_each_form_of_import(tmp_path):
    forms = ["from ... import config", "from .. import config, debug", "x = config.inductor.a",
             "from minicompile import config", "import minicompile.config",
             "from ...config import inductor"]
    for i, form in enumerate(forms):
        path = tmp_path / f"m{i}.py"
        path.write_text(form + "\n")
        assert imports_config(path), form
    (tmp_path / "ok.py").write_text("from triton import Config\nfrom .options import X\n")
    assert not imports_config(tmp_path / "ok.py")


def test_build_layers_config_then_mode_then_options(monkeypatch):
    monkeypatch.setattr(config.inductor, "cpp_lanes", False)
    opts = InductorOptions.build("max-autotune-no-cudagraphs", {"cpp_vectorize": False})
    assert (opts.cpp_lanes, opts.max_autotune, opts.cudagraphs, opts.cpp_vectorize) == \
        (False, True, False, False)
    assert InductorOptions.build("reduce-overhead").cudagraphs is True
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.cpp_lanes = True  # type: ignore[misc]
    with pytest.raises(ValueError, match="unknown inductor options \\['cpp_simd'\\]"):
        InductorOptions.build(options={"cpp_simd": True})
    with pytest.raises(ValueError, match="unknown mode 'fastest'"):
        InductorOptions.build("fastest")
    assert set(MODE_OPTIONS) == {None, "default", "reduce-overhead", "max-autotune",
                                 "max-autotune-no-cudagraphs"}


def test_a_compile_keeps_the_knobs_it_started_with(compiled_graphs, monkeypatch):
    """Flipping a global knob changes the next compile, never one already made."""
    x = torch.randn(64, 32)
    f = mc.compile(lambda x: (x.exp() * 2).sum(1))
    f(x)
    monkeypatch.setattr(config.inductor, "cpp_vectorize", False)
    g = mc.compile(lambda x: (x.exp() * 3).sum(1))
    g(x)
    first, second = compiled_graphs
    assert first.options.cpp_vectorize and not second.options.cpp_vectorize
    if first.backends.get("cpu") == "cpp":  # the C++ source follows each compile's own knob
        assert "simd" in first.source and "simd" not in second.source
    torch.testing.assert_close(f(x), (x.exp() * 2).sum(1))
    torch.testing.assert_close(g(x), (x.exp() * 3).sum(1))


def test_options_reach_every_graph_of_a_training_compile(compiled_graphs):
    lin = torch.nn.Linear(8, 8)
    f = mc.compile(lambda x: torch.relu(lin(x)).sum(), options={"cpp_lanes": False})
    f(torch.randn(4, 8, requires_grad=True)).backward()
    assert [g.name.split()[0] for g in compiled_graphs] == ["forward", "backward"]
    assert all(g.options.cpp_lanes is False for g in compiled_graphs)


def test_max_autotune_tries_more_triton_configs():
    th = pytest.importorskip("minicompile.inductor.runtime.triton_heuristics")
    if th.INTERPRET:  # the interpreter runs one block size whatever the mode
        pytest.skip("candidate configs are one under TRITON_INTERPRET")
    default = th.candidate_configs("pointwise", 1 << 20, 1)
    more = th.candidate_configs("pointwise", 1 << 20, 1, max_autotune=True)
    assert len(more) > len(default)


def test_pointwise_configs_are_inductors_two_in_powers_of_two(monkeypatch):
    """The default mode tries two pointwise configs, as Inductor's: 8 elements a thread and 2
    (a kernel of many loads an element needs the second); blocks are powers of two at any size
    (``tl.arange`` takes nothing else)."""
    th = pytest.importorskip("minicompile.inductor.runtime.triton_heuristics")
    monkeypatch.setattr(th, "INTERPRET", False)
    for numel in (1, 3, 1000, 50_000, 1823 * 781, 1 << 24):
        configs = th.candidate_configs("pointwise", numel, 1)
        assert all(c.XBLOCK & (c.XBLOCK - 1) == 0 for c in configs), (numel, configs)
    big = th.candidate_configs("pointwise", 1 << 24, 1)
    assert [(c.XBLOCK // (32 * c.num_warps)) for c in big] == [8, 2]


def test_knobs_that_would_not_be_read_are_errors():
    with pytest.raises(ValueError, match="mode= or options=, not both"):
        mc.compile(lambda x: x, mode="max-autotune", options={"cpp_lanes": False})
    with pytest.raises(ValueError, match="backend='eager' reads neither"):
        mc.compile(lambda x: x, backend="eager", mode="max-autotune")
    with pytest.raises(ValueError, match="backend='aot_eager' reads neither"):
        mc.compile(lambda x: x, backend="aot_eager", options={"cpp_lanes": False})


@pytest.mark.cpu_only
def test_max_autotune_on_the_cpp_backend_says_it_has_nothing_to_try(monkeypatch):
    from minicompile.inductor import compile_fx
    monkeypatch.setattr(compile_fx, "_warned", set())
    monkeypatch.setattr(config.inductor, "cpu_backend", "cpp")
    f = mc.compile(lambda x: x.sin() + 1, mode="max-autotune-no-cudagraphs")
    with pytest.warns(UserWarning, match="kernels of the 'cpp' backend have none to try"):
        f(torch.randn(8))


@pytest.mark.skipif(not torch.cuda.is_available()
                    and __import__("os").environ.get("TRITON_INTERPRET") != "1",
                    reason="the Triton template runs on a GPU or under TRITON_INTERPRET=1")
@pytest.mark.parametrize("with_bias", [False, True])
def test_the_mm_template_max_autotune_chooses_from_computes_the_product(with_bias):
    """The candidate max-autotune may pick instead of the library: odd sizes, a strided
    factor, a broadcast bias."""
    from minicompile.inductor.runtime.mm_autotune import CONFIGS, run_template
    device = "cuda" if torch.cuda.is_available() else "cpu"
    a = torch.randn(37, 50, device=device)
    b = torch.randn(29, 50, device=device).t()  # (50, 29), strides (1, 50)
    bias = torch.randn(29, device=device) if with_bias else None
    for config in (CONFIGS[0], CONFIGS[-1]):
        got = run_template(a, b, bias, config)
        want = a @ b + (bias if with_bias else 0)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
def test_max_autotune_times_the_library_and_the_template(compiled_graphs):
    w = torch.randn(256, 512, device="cuda", dtype=torch.float16)
    f = mc.compile(lambda x: torch.relu(x @ w) * 2, mode="max-autotune-no-cudagraphs")
    x = torch.randn(128, 256, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(f(x), torch.relu(x @ w) * 2, rtol=2e-2, atol=2e-2)
    (graph,) = compiled_graphs
    assert "mm_choice" in graph.source
