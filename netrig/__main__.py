"""The `netrig` command (`entry`) and `python -m netrig`.

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
        from netrig.cli import main
    except KeyboardInterrupt:  # Ctrl-C while Python loads netrig: nothing was named yet
        raise SystemExit(130) from None
    main()


if __name__ == "__main__":
    entry()
