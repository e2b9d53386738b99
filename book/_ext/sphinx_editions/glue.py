"""``{glue:text}`` and ``{glue:}`` inside a translated paragraph.

Sphinx's i18n parses a translated paragraph on its own, after myst-nb has finished reading the
notebook, so myst-nb's lookup of the page's glued values (:func:`myst_nb.ext.glue.utils.retrieve_glue_data`)
finds nothing there. These roles point such a lookup at the page itself (``/<page>::<key>``), which
myst-nb resolves from the values it saved for the page, as it does for a value glued on another page.
"""

from __future__ import annotations

from typing import Any

from myst_nb.ext.glue.roles import PasteRoleAny, PasteTextRole
from myst_nb.ext.glue.utils import RetrievalError, retrieve_glue_data
from sphinx.application import Sphinx


def _own_page(role: Any) -> None:
    """Point a glue role at its own page when the paragraph was parsed away from the notebook."""
    env = getattr(role.document.settings, "env", None)
    if env is None or "::" in role.text:
        return
    try:
        retrieve_glue_data(role.document, role.text.split(":", 1)[0])
        return  # the page's own notebook is at hand: the usual lookup works
    except RetrievalError:
        role.text = f"/{env.doc2path(env.docname, False)}::{role.text}"


class TranslatedPasteText(PasteTextRole):
    """``{glue:text}`` that also works inside a translated paragraph."""

    def run(self) -> Any:
        if ":" not in self.text:
            self.text += ":s"  # the role reads a format after the last colon; "s" is its default
        _own_page(self)
        return super().run()


class TranslatedPasteAny(PasteRoleAny):
    """``{glue:}`` / ``{glue:any}`` that also works inside a translated paragraph."""

    def run(self) -> Any:
        _own_page(self)
        return super().run()


def setup(app: Sphinx) -> None:
    app.setup_extension("myst_nb")  # its glue domain first, then these roles over it
    app.add_role_to_domain("glue", "text", TranslatedPasteText(), override=True)
    app.add_role_to_domain("glue", "", TranslatedPasteAny(), override=True)
    app.add_role_to_domain("glue", "any", TranslatedPasteAny(), override=True)
