"""`python -m emulator`: the local emulator's command line (emulator/cli.py); `clock ACTION` alone
runs without it (emulator/clock/cli.py), answering at once."""

import sys

if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments[:1] == ["clock"]:
        from emulator.clock.cli import main as clock_main

        sys.exit(clock_main(arguments))
    from emulator.cli import main

    sys.exit(main(arguments))
