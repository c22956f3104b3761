"""``python -m bgremover``: the app when run without arguments, else the command line."""

import sys


def run() -> int:
    if len(sys.argv) == 1:
        from .gui import main as gui_main

        return gui_main([])
    from .cli import main

    return main()


if __name__ == "__main__":
    sys.exit(run())
