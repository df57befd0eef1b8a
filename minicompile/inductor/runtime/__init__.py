"""What generated kernels import at run time (mirrors torch/_inductor/runtime/): Triton helper
functions (``triton_helpers.py``) and the launcher that picks block sizes and a grid
(``triton_heuristics.py``)."""
