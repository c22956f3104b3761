"""Bundle entry point of `bgremover` (console): the command line; the app with no arguments."""

import multiprocessing
import sys

if __name__ == "__main__":
    multiprocessing.freeze_support()
    from bgremover.__main__ import run

    sys.exit(run())
