"""Which convolutions ATen runs faster channels-last on this CPU (the measurement behind
``inductor/layout_opt.py``'s decision): every distinct 2-D convolution of the timm suite's
models at a size, run eagerly from NCHW and from channels-last (input and weight), one thread,
``torch.utils.benchmark`` medians, the two layouts taking turns.

    python -m minicompile.bench.conv_layouts                 # needs timm (docs/models.md)
    python -m minicompile.bench.conv_layouts --models efficientnet_b0,resnet18

Prints NHWC time / NCHW time per kind of convolution (grouped, 1x1, dense kxk) and input
size, and per model (the sum over its distinct convolutions, each counted once).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import dataclass

import torch
import torch.utils.benchmark as benchmark
from torch.profiler import ProfilerActivity, profile

from .models import timm_models
from .models.zoo import SIZES


PIXEL_BINS = (16, 64, 256)


@dataclass(frozen=True)
class Conv:
    input: tuple     # (N, C, H, W)
    weight: tuple    # (C', C/groups, kh, kw)
    stride: tuple
    padding: tuple
    dilation: tuple
    groups: int

    def kind(self) -> str:
        return "grouped" if self.groups > 1 else "1x1" if self.weight[2:] == (1, 1) else "dense"

    def pixels(self) -> str:
        """The input's H*W, binned: late layers of a small image have a few pixels."""
        hw = self.input[2] * self.input[3]
        return next((f"<={b}" for b in PIXEL_BINS if hw <= b), f">{PIXEL_BINS[-1]}")


def convolutions_of(name: str, size: str) -> set[Conv]:
    """The 2-D convolutions one inference step of timm model ``name`` calls."""
    model, inputs = timm_models.build(name, SIZES[size])
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        model.eval()(inputs["x"])
    convs = set()
    for e in prof.events():
        if e.name == "aten::convolution" and len(e.input_shapes[0]) == 4:
            c = e.concrete_inputs
            convs.add(Conv(tuple(e.input_shapes[0]), tuple(e.input_shapes[1]), tuple(c[3]),
                           tuple(c[4]), tuple(c[5]), c[8]))
    return convs


def median_us(conv: Conv, memory_format: torch.memory_format) -> float:
    x = torch.randn(conv.input).contiguous(memory_format=memory_format)
    w = torch.randn(conv.weight).contiguous(memory_format=memory_format)
    args = (conv.stride, conv.padding, conv.dilation, False, (0, 0), conv.groups)
    timer = benchmark.Timer("conv(x, w, None, *args)", globals={
        "conv": torch.ops.aten.convolution, "x": x, "w": w, "args": args}, num_threads=1)
    return timer.blocked_autorange(min_run_time=0.05).median * 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m minicompile.bench.conv_layouts")
    parser.add_argument("--models", default=",".join(timm_models.MODELS))
    parser.add_argument("--size", default="cpu", choices=sorted(SIZES))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    users: dict[Conv, list[str]] = defaultdict(list)
    for name in args.models.split(","):
        for conv in convolutions_of(name, args.size):
            users[conv].append(name)
    times = {}
    for conv in users:
        nchw, nhwc = [], []
        for _ in range(3):  # the layouts take turns: a busy machine slows both alike
            nchw.append(median_us(conv, torch.contiguous_format))
            nhwc.append(median_us(conv, torch.channels_last))
        times[conv] = (min(nchw), min(nhwc))
    print(f"{len(users)} distinct convolutions; NHWC time / NCHW time, one thread")
    by_kind: dict[tuple, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    by_model: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for conv, (nchw, nhwc) in times.items():
        row = by_kind[(conv.kind(), conv.pixels())]
        row[0], row[1], row[2] = row[0] + nchw, row[1] + nhwc, row[2] + 1
        for name in users[conv]:
            by_model[name][0] += nchw
            by_model[name][1] += nhwc
    bins = [f"<={b}" for b in PIXEL_BINS] + [f">{PIXEL_BINS[-1]}"]
    for (kind, pixels), (nchw, nhwc, n) in sorted(by_kind.items(),
                                                  key=lambda kv: (kv[0][0], bins.index(kv[0][1]))):
        print(f"  {kind:8s} H*W {pixels:6s} {n:4d} convolutions  {nhwc / nchw:5.2f}")
    for name, (nchw, nhwc) in sorted(by_model.items()):
        print(f"  {name:32s} NCHW {nchw / 1e3:7.2f} ms  NHWC {nhwc / 1e3:7.2f} ms  {nhwc / nchw:5.2f}")


if __name__ == "__main__":
    main()
