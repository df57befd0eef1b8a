"""The families of lowerings (mirrors the sections of torch/_inductor/lowering.py); importing this
package fills ``minicompile.inductor.lowering.lowerings``."""

from . import (conv, creation, extern, mutation, nn, pointwise, pooling, reductions,  # noqa: F401
               scans, scatter, views)
from . import foreach  # noqa: F401 (after the pointwise rows its items use)
