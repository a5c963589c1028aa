"""`netrig down LAB…` without click.

Loading click takes ~15 ms, a sixth of `netrig down` of 100 nodes (issue 12: <= 0.1 s).
A command line of `down` and names only is read here; click reads such a line the same
way (every word a LABS argument). Anything else (an option such as --cluster or --help,
shell completion) goes to click's group (netrig.cli.group), as every other command does.
"""

from __future__ import annotations

import os


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
