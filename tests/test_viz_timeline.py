"""Launch timelines (viz/timeline.py): profiler events sorted into the host's operators, the
host's launch calls and the GPU's kernels."""

from types import SimpleNamespace

import pytest
import torch
from torch.autograd import DeviceType

from minicompile.viz.timeline import LANES, lane_of, launch_timeline, summary


def event(name, device=DeviceType.CPU, parent=None):
    return SimpleNamespace(name=name, device_type=device, cpu_parent=parent)


@pytest.mark.parametrize("e, lane", [
    (event("triton_poi_fused_relu_0", DeviceType.CUDA), "GPU: kernels"),
    (event("cudaLaunchKernel", parent=object()), "host: launches"),
    (event("cudaGraphLaunch", parent=object()), "host: launches"),
    (event("aten::linear"), "host: operators"),
    (event("aten::addmm", parent=object()), None),  # inside aten::linear: not drawn twice
    (event("ProfilerStep#1"), None),
])
def test_each_event_goes_to_its_lane(e, lane):
    assert lane_of(e) == lane


@pytest.mark.cpu_only
def test_a_cpu_trace_has_one_top_level_operator_per_call_of_each_op():
    mlp = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8))
    x = torch.randn(2, 8)
    with torch.no_grad():
        spans = launch_timeline(lambda: mlp(x), "cpu", calls=3)
    names = [s.name for s in spans]
    assert sorted(set(names)) == ["aten::linear", "aten::relu"] and len(names) == 9
    assert all(s.lane == LANES[0] and s.end_us >= s.start_us >= 0 for s in spans)
    assert "3.0 host: operators" in summary(spans, calls=3)
