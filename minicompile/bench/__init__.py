"""Benchmarking: helpers the notebooks use, and the side-by-side benchmark.

    from minicompile.bench import benchmark, profile_kernels, format_profile, plot_times
    python -m minicompile.bench --device cpu --quick      # eager vs torch.compile vs minicompile

Reading map:

    helpers.py    benchmark / profile_kernels / format_profile / plot_times (notebooks)
    cases.py      the benchmark's workloads, their sizes per device, bytes and FLOPs
    gpt_block.py  the nanoGPT Block of the training case
    timing.py     do_bench on the GPU, torch.utils.benchmark on the CPU, copy bandwidth, cold calls
    run.py        one case: compile cold, check against eager, then time
    report.py     header, table with ratios and geomean, JSON, plot
    progress.py   the progress bar
    cli.py        ``python -m minicompile.bench`` (``__main__.py``)
"""

from .helpers import benchmark, format_profile, plot_times, profile_kernels

__all__ = ["benchmark", "format_profile", "plot_times", "profile_kernels"]
