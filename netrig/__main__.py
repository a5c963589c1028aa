from netrig.cli import main

main()
