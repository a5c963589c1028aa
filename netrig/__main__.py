"""The `netrig` command (`entry`) and `python -m netrig`.

`netrig down LAB…` and a plain `netrig up FILE` run without click (netrig.cli.quick); every
other command line goes to click's group (netrig.cli.group).

Before anything else is imported, `netrig up` with a command line run before starts making
the namespaces it will need (netrig.rig.ahead), so the kernel works while Python imports
click and the command.
"""


def entry() -> None:
    import sys

    try:
        if sys.argv[1:2] == ["up"]:
            from netrig.rig import ahead

            ahead.start(sys.argv[1:])
        from netrig.cli import quick

        if quick.is_plain_down(sys.argv[1:]):
            quick.down(sys.argv[1:])
        if (line := quick.plain_up(sys.argv[1:])) is not None:
            quick.up(line, sys.argv[1:])
        from netrig.cli.group import main

        main()  # its own handler takes Ctrl-C once the command runs
    except KeyboardInterrupt:  # Ctrl-C while Python loads netrig (or `signal`, before
        raise SystemExit(130) from None  # main's handler is in place): nothing was named yet


if __name__ == "__main__":
    entry()
