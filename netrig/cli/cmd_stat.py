"""`netrig stat`: Debian's ministat, same command line, same bytes out, same exit codes.

ministat parses its options with GNU getopt and reports mistakes with its own usage text,
so this command takes its arguments raw (click parses nothing but ``--help``) and replays
getopt here. The statistics and the text live in netrig.stats.ministat.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO

import click

from netrig.cli.group import cli
from netrig.cli.terminal import terminal_width

if TYPE_CHECKING:
    from netrig.stats.ministat import Dataset

OPTSTRING = b"AC:c:d:snw:"
PROG = b"ministat"  # the name ministat's messages carry (err(3), getopt(3))

HELP = """Summarise data sets and compare them with Student's t, exactly like ministat.

Each FILE (or stdin, or "-") holds one number per line; "#" starts a comment.
The first data set is the reference; every other one is tested against it.

\b
ministat's options (parsed like getopt: clusters such as -As, -w80):
  -A             print statistics only, suppress the graph
  -C column      column number to extract (starts and defaults to 1)
  -c confidence  80, 90, 95 (default), 98, 99 or 99.5
  -d delims      field delimiter characters, default " \\t"
  -n             print summary statistics only, no graph/test
  -s             print avg/median/stddev bars on separate lines
  -w width       width of the graph (default 74 or terminal width)

Output, error messages and exit codes are byte-identical to Debian's ministat
20150715 (exit 2: bad usage or data; 1: a file cannot be opened). Where ministat
itself crashes (plotting inf or nan values, -w 1) this says why and exits 2.
Where a set's stddev is nan and its rounded average lies beyond its points,
ministat writes that "A" past its bar (it crashes or drops the mark); this
draws the plot without it.

\b
Example:
  netrig stat -c 99 before.txt after.txt

\b
On a stored experiment (netrig run), one ministat block per sweep point:
  netrig stat --experiment NAME|ID[:PARAM=VALUE,...] [--by PARAM]
              [--metric M] [--intervals] [-A] [-n] [-s] [-c level] [-w width]
              [--db PATH]
--by PARAM compares PARAM's values in one block per combination of the other
parameters (the first value is the reference, like ministat's first file).
"""


class UsageError(Exception):
    """ministat's usage(whine), optionally preceded by getopt's own complaint."""

    def __init__(self, whine: bytes, getopt_message: bytes = b"") -> None:
        super().__init__(whine.decode(errors="replace"))
        self.whine = whine
        self.getopt_message = getopt_message


# -- GNU getopt ------------------------------------------------------------------------------


@dataclass
class GnuGetopt:
    """glibc getopt(3) for short options: clusters, attached or separate arguments, "--",
    and argument permutation (operands may come before options) unless POSIXLY_CORRECT.

    Iterate to get (option, argument) pairs in order; an error yields (ord("?"), message).
    After iteration, `operands` holds the non-option arguments in their original order.
    """

    argv: Sequence[bytes]
    optstring: bytes = OPTSTRING
    posixly_correct: bool = False
    operands: list[bytes] = field(default_factory=list)

    def _takes_argument(self, c: int) -> bool | None:
        """None if `c` is not an option at all."""
        i = self.optstring.find(bytes([c]))
        if c == ord(":") or i < 0:
            return None
        return self.optstring[i + 1 : i + 2] == b":"

    def __iter__(self) -> Iterator[tuple[int, bytes | None]]:
        args = list(self.argv)
        k = 0
        while k < len(args):
            arg = args[k]
            k += 1
            if arg == b"--":
                self.operands.extend(args[k:])
                return
            if not arg.startswith(b"-") or arg == b"-":
                self.operands.append(arg)
                if self.posixly_correct:
                    self.operands.extend(args[k:])
                    return
                continue
            rest = arg[1:]
            while rest:
                c, rest = rest[0], rest[1:]
                wants = self._takes_argument(c)
                if wants is None:
                    yield ord("?"), self._message(b"invalid option", c)
                    continue
                if not wants:
                    yield c, None
                    continue
                if rest:
                    yield c, rest
                elif k < len(args):
                    k += 1
                    yield c, args[k - 1]
                else:
                    yield ord("?"), self._message(b"option requires an argument", c)
                break

    @staticmethod
    def _message(what: bytes, c: int) -> bytes:
        return PROG + b": " + what + b" -- '" + bytes([c]) + b"'\n"


# -- the command line ------------------------------------------------------------------------


@dataclass
class Invocation:
    """A validated ministat command line."""

    files: list[bytes]
    column: int = 1
    delimiters: bytes = b" \t"
    width: int = 74
    confidence_index: int = 2
    separate_bars: bool = False
    suppress_plot: bool = False
    summary_only: bool = False


def parse_command_line(
    argv: Sequence[bytes], *, default_width: int = 74, posixly_correct: bool = False
) -> Invocation:
    """ministat's main() option loop: each option is checked as getopt returns it."""
    from netrig.stats.ministat import MAX_DATASETS, STUDENT_PCT, c_int, strtod, strtol

    inv = Invocation(files=[], width=default_width)
    ci = -1
    getopt = GnuGetopt(argv, posixly_correct=posixly_correct)
    for c, optarg in getopt:
        arg = optarg or b""
        if c == ord("A"):
            inv.suppress_plot = True
        elif c == ord("C"):
            value, used = strtol(arg)
            if used != len(arg):
                raise UsageError(b"Invalid column number.")
            inv.column = c_int(value)
            if inv.column <= 0:
                raise UsageError(b"Column number should be positive.")
        elif c == ord("c"):
            a, used = strtod(arg)
            if used != len(arg):
                raise UsageError(b"Not a floating point number")
            ci = next((i for i, p in enumerate(STUDENT_PCT) if a == p), ci)
            if ci == -1:
                raise UsageError(b"No support for confidence level")
        elif c == ord("d"):
            if not arg:
                raise UsageError(b"Can't use empty delimiter string")
            inv.delimiters = arg
        elif c == ord("n"):
            inv.summary_only = True
        elif c == ord("s"):
            inv.separate_bars = True
        elif c == ord("w"):
            value, used = strtol(arg)
            if used != len(arg):
                raise UsageError(b"Invalid width, not a number.")
            inv.width = c_int(value)
            if inv.width < 0:
                raise UsageError(b"Unable to move beyond left margin.")
        else:
            raise UsageError(b"Unknown option", optarg or b"")
    inv.confidence_index = 2 if ci == -1 else ci
    inv.files = getopt.operands
    if len(inv.files) > MAX_DATASETS:
        raise UsageError(b"Too many datasets.")
    return inv


def _read(path: bytes, stdin: _Stdin) -> tuple[bytes, bytes]:
    """(data set name, contents); a directory opens but reads as empty, as with fopen."""
    if path == b"-":
        return b"<stdin>", stdin.read()
    try:
        with open(path, "rb") as f:
            return path, f.read()
    except IsADirectoryError:
        return path, b""
    except OSError as e:
        reason = (e.strerror or "").encode()
        raise _Exit(1, PROG + b": Cannot open " + path + b": " + reason + b"\n") from e


def _load(path: bytes, inv: Invocation, stdin: _Stdin) -> Dataset:
    """ReadSet: read, parse and sort one data set, or stop like ministat does."""
    from netrig.stats.ministat import InvalidData, make_dataset, parse_values

    name, data = _read(path, stdin)
    try:
        values = parse_values(data, inv.column, inv.delimiters)
    except InvalidData as e:
        msg = b"%s: Invalid data on line %d in %s\n" % (PROG, e.line, name)
        raise _Exit(2, msg) from e
    if len(values) < 3:
        raise _Exit(2, b"Dataset %s must contain at least 3 data points\n" % name)
    return make_dataset(name, values)


def load_datasets(inv: Invocation, stdin: BinaryIO | None) -> list[Dataset]:
    """Every data set of the command line, in order (stdin once), or stop like ministat."""
    source = _Stdin(stdin)
    return [_load(p, inv, source) for p in (inv.files or [b"-"])]


def run(
    argv: Sequence[bytes],
    *,
    stdin: BinaryIO | None,
    stdout: BinaryIO,
    stderr: BinaryIO,
    default_width: int = 74,
    posixly_correct: bool = False,
) -> int:
    """ministat's main(), with the streams passed in; returns the exit code."""
    from netrig.stats.ministat import PlotError, RenderOptions, render, usage_text

    try:
        inv = parse_command_line(argv, default_width=default_width, posixly_correct=posixly_correct)
        datasets = load_datasets(inv, stdin)
        opts = RenderOptions(
            width=inv.width,
            confidence_index=inv.confidence_index,
            separate_bars=inv.separate_bars,
            suppress_plot=inv.suppress_plot,
            summary_only=inv.summary_only,
        )
        try:
            text = render(datasets, opts)
        except PlotError as e:
            msg = f"netrig stat: cannot draw the plot: {e} (ministat crashes here); "
            raise _Exit(2, msg.encode() + b"use -A or -n to skip the plot\n") from e
    except UsageError as e:
        stderr.write(e.getopt_message + usage_text(e.whine))
        return 2
    except _Exit as e:
        stderr.write(e.message)
        return e.code
    stdout.write(text)
    return 0


# -- running it -------------------------------------------------------------------------------


class _Exit(Exception):
    """Stop with ministat's exit code after its message went to stderr."""

    def __init__(self, code: int, message: bytes) -> None:
        super().__init__(code)
        self.code = code
        self.message = message


@dataclass
class _Stdin:
    """ministat fcloses stdin after reading it; a second "-" then reads nothing."""

    stream: BinaryIO | None
    used: bool = False

    def read(self) -> bytes:
        if self.used or self.stream is None:
            return b""
        self.used = True
        return self.stream.read()


def stored_mode(argv: Sequence[str], posixly_correct: bool = False) -> bool:
    """Does this command line ask for a stored experiment (--experiment)?

    Only where ministat would read --experiment as an option, which it rejects: not after
    "--", not as the argument of -C/-c/-d/-w, not after an operand under POSIXLY_CORRECT.
    So every command line ministat accepts keeps its meaning and its bytes.
    """
    wants_argument = False
    for arg in argv:
        if wants_argument:
            wants_argument = False
        elif arg == "--":
            return False
        elif arg == "--experiment" or arg.startswith("--experiment="):
            return True
        elif arg.startswith("-") and arg != "-":
            for i, c in enumerate(arg[1:], start=1):
                if c in "Ccdw":  # the options of OPTSTRING that take an argument
                    wants_argument = i == len(arg) - 1
                    break
        elif posixly_correct:
            return False
    return False


class _RawArgsCommand(click.Command):
    """A click command that leaves its arguments alone: ministat's getopt parses them."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        before_dashdash = args[: args.index("--")] if "--" in args else args
        if "--help" in before_dashdash:
            click.echo(ctx.get_help(), color=ctx.color)
            ctx.exit()
        ctx.params["argv"] = list(args)
        ctx.args = []
        return []


@cli.command(
    "stat",
    cls=_RawArgsCommand,
    context_settings={"help_option_names": ["--help"]},  # -h is an unknown option to ministat
    help=HELP,
    short_help="Summarise and compare data sets, exactly like ministat.",
    options_metavar="[-C column] [-c confidence] [-d delimiter(s)] [-Ans] [-w width]"
    " [file [file ...]]",
)
@click.pass_context
def stat_command(ctx: click.Context, argv: list[str]) -> None:
    if stored_mode(argv, "POSIXLY_CORRECT" in os.environ):
        from netrig.cli.cmd_compare import stat_stored_main

        stat_stored_main(argv)  # exits
    stdout = sys.stdout.buffer
    code = run(
        [os.fsencode(a) for a in argv],
        stdin=sys.stdin.buffer if sys.stdin is not None else None,
        stdout=stdout,
        stderr=sys.stderr.buffer,
        default_width=terminal_width(stdout, os.environ),
        posixly_correct="POSIXLY_CORRECT" in os.environ,
    )
    stdout.flush()
    ctx.exit(code)
