"""A progress bar for the facade's long calls (``add_many``, ``reindex``, ``learn_many``
with ``progress=True``): rich's, shown only when asked for and when there is work."""

from __future__ import annotations

from typing import Any


class ProgressBar:
    """A rich progress bar when ``enabled`` (and there is work), otherwise a no-op."""

    def __init__(self, enabled: bool, label: str, total: int) -> None:
        self._bar: Any = None
        if enabled and total:
            from rich.progress import Progress

            self._bar = Progress(transient=True)
            self._task = self._bar.add_task(label, total=total)

    def __enter__(self) -> "ProgressBar":
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def advance(self, n: int) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, n)
