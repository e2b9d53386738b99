"""Stop `make` with one line when the Python it was given is too old for the pinned toolchain."""

import sys

NEEDED = (3, 11)

if sys.version_info[:2] < NEEDED:
    found = ".".join(map(str, sys.version_info[:3]))
    sys.exit(
        f"Python {NEEDED[0]}.{NEEDED[1]} or newer is needed, found {found} at {sys.executable}; "
        f"run `make PYTHON=python3.11 ...` (or newer)."
    )
