"""The progress bar of `netrig run`: runs done / total, the current sweep point, ETA.

Drawn on stderr with rich, so stdout carries only the summary table; a failed run gets a
line of its own above the bar, with its reason. When stderr is not a terminal (a log file,
CI), there is no bar: each finished run is one plain line instead.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from netrig.plan.experiment import ExperimentPlan
from netrig.plan.runs import PlannedRun


class RichReporter:
    """Progress on `console`; `quiet` shows nothing but failures."""

    def __init__(self, console: Console, quiet: bool = False) -> None:
        self.console = console
        self.quiet = quiet
        self.progress: Progress | None = None
        self.task: TaskID | None = None
        self.total = 0
        self.done = 0

    def begin(self, exp: ExperimentPlan, runs: list[PlannedRun], stored: int) -> None:
        if stored:
            self.note(f"resuming {exp.name}: {stored} runs stored before, {len(runs)} to go")
        self.total, self.done = len(runs), 0
        if self.quiet or not runs or not self.console.is_terminal:
            return
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TextColumn("runs ·"),
            TimeElapsedColumn(),
            TextColumn("· ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self.progress.start()
        self.task = self.progress.add_task(exp.name, total=len(runs))

    def run_started(self, exp: ExperimentPlan, run: PlannedRun) -> None:
        if self.progress is None or self.task is None:
            return
        point = exp.points[run.point]
        what = (
            f"warm-up {run.repetition}/{exp.warmup}"
            if run.warmup
            else f"rep {run.repetition}/{exp.repeat}"
        )
        label = f" · {escape(point.label)}" if exp.vary else ""  # a value may hold [brackets]
        self.progress.update(self.task, description=f"{exp.name}{label} · {what}")

    def run_ended(self, exp: ExperimentPlan, run: PlannedRun, status: str, reason: str | None) -> None:
        self.done += 1
        point = exp.points[run.point]
        kind = "warm-up" if run.warmup else "run"
        where = f"{escape(point.label)} " if exp.vary else ""
        if status != "ok":  # a tool's words, as they are (haproxy's "[/etc/…:11]" is no markup)
            self.note(f"[red]✘[/] {kind} {where}rep {run.repetition} {status}: {escape(str(reason))}")
        elif self.progress is None and not self.quiet:
            self.note(f"[{self.done}/{self.total}] {kind} {where}rep {run.repetition}: ok")
        if self.progress is not None and self.task is not None:
            self.progress.advance(self.task)

    def note(self, message: str) -> None:
        if self.quiet and not message.startswith("[red]"):
            return
        target = self.progress.console if self.progress is not None else self.console
        target.print(message, soft_wrap=True, highlight=False)

    def end(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
