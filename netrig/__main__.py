try:
    from netrig.cli import main
except KeyboardInterrupt:  # Ctrl-C while Python loads netrig: nothing was created yet
    raise SystemExit(130) from None

main()
