"""Run the real ministat and `netrig stat` on the same case and return what each printed.

netrig runs in-process (netrig.cli.cmd_stat.run) so hundreds of cases stay fast; a few
tests in test_stat_cli.py check the installed command end to end.
"""

from __future__ import annotations

import difflib
import io
import itertools
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from netrig.cli.cmd_stat import load_datasets, parse_command_line, run
from netrig.stats.ministat import draw_plot

INSTALL_HINT = (
    "the real `ministat` is not installed, so netrig stat cannot be cross-checked: "
    "run `apt-get install -y ministat` (Debian package 20150715-1)"
)


@dataclass(frozen=True)
class Outcome:
    rc: int
    stdout: bytes
    stderr: bytes


@dataclass
class Case:
    """Files to create (name -> bytes), the argument list, and stdin."""

    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    stdin: bytes | None = b""
    posixly_correct: bool = False

    def materialise(self, where: Path) -> list[bytes]:
        """Write the files under `where`; file arguments become absolute paths."""
        where.mkdir(parents=True, exist_ok=True)
        for name, data in self.files.items():
            (where / name).write_bytes(data)
        return [os.fsencode(where / a) if a in self.files else os.fsencode(a) for a in self.argv]


def ministat_path() -> str | None:
    return shutil.which("ministat")


def run_ministat(binary: str, argv: list[bytes], case: Case) -> Outcome:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}
    if case.posixly_correct:
        env["POSIXLY_CORRECT"] = "1"
    p = subprocess.run(
        [b"ministat", *argv],
        executable=binary,
        input=case.stdin,
        stdin=subprocess.DEVNULL if case.stdin is None else None,
        capture_output=True,
        env=env,
        timeout=60,
    )
    return Outcome(p.returncode, p.stdout, p.stderr)


def run_netrig(argv: list[bytes], case: Case) -> Outcome:
    out, err = io.BytesIO(), io.BytesIO()
    stdin = io.BytesIO(case.stdin or b"")
    rc = run(argv, stdin=stdin, stdout=out, stderr=err, posixly_correct=case.posixly_correct)
    return Outcome(rc, out.getvalue(), err.getvalue())


def check_same(binary: str, case: Case, where: Path) -> Outcome:
    """Assert netrig == ministat byte for byte; where ministat crashes, netrig must refuse."""
    argv = case.materialise(where)
    real = run_ministat(binary, argv, case)
    ours = run_netrig(argv, case)
    if marks_left_out(argv, case):
        check_undefined_plot(argv, real, ours)
        return real
    if real.rc < 0:  # killed by a signal (SIGSEGV on inf/nan plots): nothing to copy
        assert ours.rc == 2, (argv, real, ours)
        assert ours.stdout == b""
        assert b"ministat crashes here" in ours.stderr
        return real
    assert ours.stderr == real.stderr, f"stderr differs for {argv}:\n" + diff(real, ours, "stderr")
    assert ours.stdout == real.stdout, f"stdout differs for {argv}:\n" + diff(real, ours, "stdout")
    assert ours.rc == real.rc, f"exit code differs for {argv}: ministat {real.rc}, netrig {ours.rc}"
    return real


def marks_left_out(argv: list[bytes], case: Case) -> list[bytes]:
    """The bar marks netrig's plot leaves out, where ministat writes past its bar."""
    try:
        inv = parse_command_line(argv, posixly_correct=case.posixly_correct)
        if inv.suppress_plot or inv.summary_only:
            return []
        datasets = load_datasets(inv, io.BytesIO(case.stdin or b""))
        return draw_plot(datasets, inv.width, inv.separate_bars).marks_left_out
    except Exception:  # bad usage, bad data or a refused plot: the plain comparison applies
        return []


def check_undefined_plot(argv: list[bytes], real: Outcome, ours: Outcome) -> None:
    """ministat's write past its bar is undefined: it crashes, or prints a plot that depends
    on its heap. netrig draws the plot without the mark; everything but the plot must match."""
    assert ours.rc == 0 and ours.stderr == b"", (argv, ours)
    assert b"+\n|" in ours.stdout, (argv, ours)  # a framed plot was drawn
    if real.rc < 0:
        return
    assert (real.rc, real.stderr) == (0, b""), (argv, real)
    assert without_plot(ours.stdout) == without_plot(real.stdout), (
        f"stdout differs outside the plot for {argv}:\n" + diff(real, ours, "stdout")
    )


def without_plot(stdout: bytes) -> list[bytes]:
    """The lines before the plot's top frame and after its bottom frame."""
    lines = stdout.splitlines()
    frames = [i for i, line in enumerate(lines) if line.startswith(b"+-")]
    return lines[: frames[0]] + lines[frames[-1] + 1 :] if frames else lines


def diff(real: Outcome, ours: Outcome, stream: str) -> str:
    """The first lines where the two outputs differ (outputs can be 10,000 lines long)."""
    a = getattr(real, stream).decode(errors="replace").splitlines()
    b = getattr(ours, stream).decode(errors="replace").splitlines()
    lines = difflib.unified_diff(a, b, "ministat", "netrig", lineterm="", n=1)
    return "\n".join(itertools.islice(lines, 30))
