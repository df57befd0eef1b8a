"""Benchmarking: helpers the notebooks use, and the side-by-side benchmark.

    from minicompile.bench import benchmark, profile_kernels, format_profile, plot_times
    from minicompile.bench import copy_bandwidth, bandwidth_table
    bash course.sh bench --device cpu --quick      # eager vs torch.compile vs minicompile

Reading map:

    helpers.py    benchmark / copy_bandwidth / bandwidth_table / profile_kernels / plot_times
                  (notebooks)
    cases.py      the benchmark's workloads, their sizes per device, bytes and FLOPs
    gpt_block.py  the nanoGPT Block of the training case
    timing.py     do_bench on the GPU, torch.utils.benchmark on the CPU, copy bandwidth, cold calls
    run.py        one case: compile cold, check against eager, then time
    report.py     header, table with ratios and geomean, JSON, plot
    progress.py   the progress bar
    cli.py        ``bash course.sh bench`` (``__main__.py``)
"""

from .helpers import (bandwidth_table, benchmark, copy_bandwidth, format_profile, plot_times,
                      profile_kernels)

__all__ = ["bandwidth_table", "benchmark", "copy_bandwidth", "format_profile", "plot_times",
           "profile_kernels"]
