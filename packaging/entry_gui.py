"""Bundle entry point of `bgremover-gui` (windowed: no console, sys.stdout/stderr may be None)."""

import multiprocessing
import sys

if __name__ == "__main__":
    multiprocessing.freeze_support()
    from bgremover.gui import main

    sys.exit(main())
