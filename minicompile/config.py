"""Knobs of the whole compiler, in one place (mirrors torch/_dynamo/config.py and torch/_inductor/config.py).

Everything here is a plain module attribute so a learner can flip it in a notebook::

    import minicompile.config as config
    config.recompile_limit = 2
"""

import os

# --- dynamo ---------------------------------------------------------------------------------------
recompile_limit = 8  # entries per code object before the frame runs eagerly (cache_size_limit)
automatic_dynamic_shapes = True  # a dim whose size changed becomes symbolic on the next compile
specialize_int = False  # an int argument that changed becomes a SymInt instead of a constant

# --- debugging --------------------------------------------------------------------------------------
debug = os.environ.get("MINICOMPILE_DEBUG", "0") not in ("", "0")
debug_dir = os.environ.get("MINICOMPILE_DEBUG_DIR", os.path.join(os.getcwd(), "minicompile_debug"))
