"""`netrig down LAB…` and a plain `netrig up FILE` without click.

Loading click takes ~15 ms: a sixth of `netrig down` of 100 nodes (issue 12: <= 0.1 s), a
tenth of `netrig up --no-check` of a 100-node ring built before (>= 2x the iproute2-batch
build). A command line of `down` and names only, or of `up`, one file and the options
-q/--quiet, --no-check and --name NAME, is read here; click reads such a line the same way.
Anything else (another option such as --cluster or --help, `--`, a FILE that is a folder
or looks like an option, shell completion) goes to click's group (netrig.cli.group), as
every other command does.
"""

from __future__ import annotations

import os

# FILE, --no-check, --quiet, --name
UpLine = tuple[str, bool, bool, "str | None"]
UP_FLAGS = {"-q": "quiet", "--quiet": "quiet", "--no-check": "no_check"}


def is_plain_down(args: list[str]) -> bool:
    """ARGS (the words after `netrig`) are `down` and one or more names, nothing else."""
    return (
        len(args) > 1
        and args[0] == "down"
        and not any(word.startswith("-") for word in args[1:])
        and "_NETRIG_COMPLETE" not in os.environ  # click's shell completion asks
    )


def down(args: list[str]) -> None:
    """Run `netrig down NAME…` (is_plain_down(args)) and exit as the click command would."""
    from netrig.cli.ending import run_command
    from netrig.cli.removal import down_labs

    run_command(lambda: down_labs(args[1:]), args)


def plain_up(args: list[str]) -> UpLine | None:
    """FILE, --no-check, --quiet and --name of `netrig up` if ARGS (the words after
    `netrig`) are a plain command line of it (see the module's docstring), else None:
    click's to read."""
    if args[:1] != ["up"] or "_NETRIG_COMPLETE" in os.environ:
        return None
    flags: set[str] = set()
    name: str | None = None
    files: list[str] = []
    words = iter(args[1:])
    for word in words:
        if word in UP_FLAGS:
            flags.add(UP_FLAGS[word])
        elif word == "--name" or word.startswith("--name="):
            value = word[len("--name=") :] if "=" in word else next(words, "")
            if not value or value.startswith("-") or name is not None:
                return None  # no value, or one click may read otherwise: click says
            name = value
        elif word.startswith("-"):
            return None
        else:
            files.append(word)
    if len(files) != 1 or os.path.isdir(files[0]):  # click's usage error, or its Path check
        return None
    return files[0], "no_check" in flags, "quiet" in flags, name


def up(line: UpLine, args: list[str]) -> None:
    """Run `netrig up` as plain_up(args) read it, and exit as the click command would."""
    from netrig.cli.bringup import up_lab
    from netrig.cli.ending import run_command, without_pydantic_plugins
    from netrig.cli.output import reports_errors

    without_pydantic_plugins()  # before pydantic is imported, as click's group does
    run_command(lambda: reports_errors(up_lab)(*line), args)
