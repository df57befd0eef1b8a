"""``MINICOMPILE_DEBUG=1``: write every stage's artifact of every compile into a folder
(mirrors TORCH_COMPILE_DEBUG's torch_compile_debug/ tree, written by torch/_inductor/debug.py).

Layout: ``<debug_dir>/run_<pid>/<NNN>_<artifact>.txt``, numbered in the order produced, so
reading the folder top to bottom replays the pipeline.
"""

from __future__ import annotations

import itertools
import os
import re

from . import config

_counter = itertools.count()


def run_dir() -> str:
    path = os.path.join(config.debug_dir, f"run_{os.getpid()}")
    os.makedirs(path, exist_ok=True)
    return path


def dump_artifact(name: str, text: str, title: str = "") -> str:
    slug = re.sub(r"[^A-Za-z0-9_]+", "_", title)[:40].strip("_")
    fname = f"{next(_counter):03d}_{name}{'_' + slug if slug else ''}.txt"
    path = os.path.join(run_dir(), fname)
    with open(path, "w") as f:
        f.write(text if text.endswith("\n") else text + "\n")
    return path
