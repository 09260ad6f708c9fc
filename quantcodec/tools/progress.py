"""The progress bar of the commands' long runs (``quantcodec demo``, ``quantcodec report``): tqdm's
when it is installed (``pip install 'quantcodec[tools]'``), else plain lines on stderr, one every
tenth of the way. Either way only on a terminal, and the same calls: ``update``, ``reset``,
``set_description``, ``close``.
"""

import sys

__all__ = ["progress_bar", "PlainProgress"]


def progress_bar(total, desc, *, unit="tick", enabled=True, file=None):
    """A progress bar of `total` units on `file` (stderr), drawn only when `enabled` and `file` is
    a terminal."""
    file = sys.stderr if file is None else file
    try:
        from tqdm import tqdm
    except ImportError:
        return PlainProgress(total, desc, unit=unit, file=file, enabled=enabled)
    return tqdm(total=total, desc=desc, unit=unit, file=file, disable=None if enabled else True,
                leave=False, dynamic_ncols=True)


class PlainProgress:
    """Progress without tqdm: ``desc: 40% (120/300 ticks)`` on a line of its own at each tenth."""

    def __init__(self, total, desc, *, unit="tick", file=None, enabled=True):
        self.file = sys.stderr if file is None else file
        isatty = getattr(self.file, "isatty", None)
        self.enabled = bool(enabled) and isatty is not None and isatty()
        self.unit, self.desc = unit, desc
        self.reset(total)

    def reset(self, total=None):
        if total is not None:
            self.total = total
        self.n = 0
        self._shown = 0                 # tenths written so far

    def set_description(self, desc):
        self.desc = desc

    def update(self, k=1):
        self.n += k
        if not self.enabled or not self.total:
            return
        tenth = min(10, self.n * 10 // self.total)
        if tenth > self._shown:
            self._shown = tenth
            print(f"{self.desc}: {tenth * 10}% ({self.n}/{self.total} {self.unit}s)", file=self.file, flush=True)

    def close(self):
        pass
