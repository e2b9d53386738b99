"""Serve MathJax from the built book instead of a CDN, so math renders offline.

MathJax 3 comes from the npm registry (``package.json``; installed into
``node_modules/mathjax`` by ``make book``, which runs ``npm ci``). This extension
points Sphinx's ``mathjax_path`` at ``vendor/mathjax/tex-chtml.js`` and copies
the ``es5`` bundle there when the HTML build finishes. It is deliberately not
under ``_static``: the theme links every ``.js`` file in ``_static`` from every
page, and MathJax's lazily-loaded components must not be.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

VENDOR_DIR = "vendor/mathjax"
_ROOT = Path(__file__).resolve().parents[2]
SOURCE = _ROOT / "node_modules" / "mathjax" / "es5"


def _point_at_vendored_copy(app: Sphinx, config) -> None:
    if not (SOURCE / "tex-chtml.js").is_file():
        raise ExtensionError(
            f"MathJax not found at {SOURCE}; run `npm ci` in the repository root (`make book` does it)"
        )
    # Sphinx resolves a relative mathjax_path against _static/; step out of it.
    config.mathjax_path = f"../{VENDOR_DIR}/tex-chtml.js"


def _copy_mathjax(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / VENDOR_DIR
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(SOURCE, target, ignore=shutil.ignore_patterns("sre", "*.map"))


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("config-inited", _point_at_vendored_copy, priority=900)
    app.connect("build-finished", _copy_mathjax)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
