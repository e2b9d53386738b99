"""``python -m rooflinelib``: the command line (see :mod:`rooflinelib.cli`)."""

import sys

from rooflinelib.cli import main

if __name__ == "__main__":
    sys.exit(main())
