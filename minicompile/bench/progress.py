"""A progress bar on stderr while the benchmark runs (tqdm's when installed, else a simple one)."""

from __future__ import annotations

import sys

try:
    from tqdm import tqdm
    # no monitor thread: the process stays single-threaded, as the cases would run without
    # the benchmark (small CPU matrix products run on one thread only then: library_threads)
    tqdm.monitor_interval = 0
except ImportError:
    tqdm = None


class Progress:
    """``progress(step_description)`` advances one step of ``total``."""

    def __init__(self, total: int, width: int = 24):
        self.total, self.width, self.done = total, width, 0
        self.bar = tqdm(total=total, file=sys.stderr, leave=False) if tqdm else None

    def __call__(self, what: str) -> None:
        self.done = min(self.done + 1, self.total)
        if self.bar is not None:
            self.bar.set_description_str(what[:48])
            self.bar.update(1)
            return
        filled = self.width * self.done // max(self.total, 1)
        line = f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} {what}"
        sys.stderr.write("\r" + line[:110].ljust(110))
        sys.stderr.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        else:
            sys.stderr.write("\r" + " " * 110 + "\r")
            sys.stderr.flush()
