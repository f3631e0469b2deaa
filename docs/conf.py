"""Sphinx configuration for the efvi documentation site.

Build from the repository root with ``python -m sphinx -W -b html docs docs/_build/html``
(after ``python -m pip install ".[docs]"``).  The Markdown pages are read by
myst-parser, the API reference is generated from the numpydoc docstrings by
autodoc + autosummary (napoleon reads the numpydoc sections), and the gallery
is written by the small extension in ``_ext/gallery.py``, which runs every
example in quick mode.
"""

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

import efvi  # noqa: E402  (after the path set-up above, for the version)

project = "efvi"
author = "the efvi authors"
copyright = "the efvi authors, MIT licence"
version = release = efvi.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx.ext.mathjax",
    "gallery",
]

root_doc = "index"
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_templates", "gallery/_output", "**/.ipynb_checkpoints"]
templates_path = ["_templates"]

# Markdown pages: ``$...$`` maths, ``:::`` fences, and headings as link targets.
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

# API reference: one page per public module, listing its ``__all__``.
autosummary_generate = True
autosummary_ignore_module_all = False
autosummary_imported_members = True
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"
autoclass_content = "class"

# numpydoc renders the Parameters / Returns / Attributes sections.  Types stay
# plain text (a word such as "shape" is not a cross-reference), attributes are
# listed like parameters (autodoc documents the members themselves), and the
# class pages list their members once, through autodoc.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = True

html_theme = "furo"
html_title = f"efvi {release}"
html_static_path = ["_static"]
html_css_files = ["gallery.css"]
html_show_sourcelink = False

# The gallery: every examples/*.py not starting with "_".
gallery_examples_dir = str(DOCS.parent / "examples")


def _skip_member(app, what, name, obj, skip, options):
    """Leave out what is not efvi's own API: scikit-learn's generated
    ``set_*_request`` methods and namedtuple fields ("Alias for field number")."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    if (getattr(obj, "__doc__", None) or "").startswith("Alias for field number"):
        return True
    return skip


def setup(app):
    app.connect("autodoc-skip-member", _skip_member)
