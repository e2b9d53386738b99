"""``python -m grading``: see :mod:`grading.cli`."""

import sys

from grading.cli import main

sys.exit(main())
