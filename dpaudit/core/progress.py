"""One progress bar for long runs (rich), shown on a terminal only.

Example:
    >>> from dpaudit.core.progress import progress_bar
    >>> with progress_bar("auditing", total=3, unit="chunks", show=False) as bar:
    ...     for _ in range(3):
    ...         bar.advance()
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

__all__ = ["ProgressBar", "progress_bar", "should_show"]


def should_show(progress: bool | None, total: int, threshold: int) -> bool:
    """Whether to draw a bar: as asked, or by default for long runs on a terminal.

    Args:
        progress: ``True``/``False`` to force; ``None`` for the default.
        total: number of steps of the run.
        threshold: default: show when ``total >= threshold`` and stderr is a terminal.

    Returns:
        True to draw the bar.
    """
    if progress is not None:
        return bool(progress)
    return total >= threshold and sys.stderr.isatty()


class ProgressBar:
    """A started rich bar with one task, or a no-op when not shown.

    Args:
        bar: a started ``rich.progress.Progress``, or ``None`` for a no-op.
        task: the task id in ``bar``.
    """

    def __init__(self, bar=None, task=None):
        self._bar, self._task = bar, task

    def advance(self, steps: int = 1) -> None:
        """Advance the bar by ``steps`` (no-op when not shown).

        Args:
            steps: the number of steps done since the last call.
        """
        if self._bar is not None:
            self._bar.advance(self._task, steps)


@contextlib.contextmanager
def progress_bar(
    title: str, *, total: int, unit: str, label: str = "", show: bool
) -> Iterator[ProgressBar]:
    """A transient progress bar on stderr for the duration of a ``with`` block.

    Args:
        title: bold text before the bar (``"auditing"``).
        total: number of steps.
        unit: the steps' name (``"chunks"``).
        label: the task's description after the title (a mechanism's name).
        show: draw the bar (see :func:`should_show`); otherwise a no-op.

    Yields:
        A :class:`ProgressBar`; the bar is removed when the block exits.
    """
    if not show:
        yield ProgressBar()
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn(f"[bold]{title}[/bold] {{task.description}}"),
        BarColumn(),
        TextColumn(f"{{task.completed}}/{{task.total}} {unit}"),
        TimeRemainingColumn(),
        transient=True,
    )
    task = bar.add_task(label, total=total)
    bar.start()
    try:
        yield ProgressBar(bar, task)
    finally:
        bar.stop()
