"""Repository-wide pytest set-up.

Notebooks are re-executed by nbval (``--nbval-lax`` in ``pyproject.toml``): the
nbgrader sources under ``solutions/``. The book's chapters are MyST Markdown
notebooks that ``make book`` already executes, failing on any error (``-W`` and
``nb_execution_raise_on_error``); ``make test`` builds the book first, so they
are not run a second time here.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # doctests and tests never open a window

pytest_plugins = ["pytester"]  # tests/test_nbval_wiring.py runs pytest on a throw-away tree
