"""Sphinx configuration for the efvi documentation site.

Build from the repository root with ``python -m sphinx -W -b html docs docs/_build/html``
(after ``python -m pip install ".[docs]"``).  The Markdown pages are read by
myst-parser, the API reference is generated from the numpydoc docstrings by
autodoc + autosummary (napoleon reads the numpydoc sections), and the gallery
is written by the small extension in ``_ext/gallery.py``, which runs every
example in quick mode.
"""

import re
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


# Class pages list inherited members too (``:inherited-members:`` in
# _templates/autosummary/class.rst), so that an estimator's page shows ``save``,
# ``load`` and scikit-learn's ``score``.  Of the methods a class inherits from
# outside efvi only these are efvi's API; the rest (``tuple.count``, PyTorch's
# Optimizer hooks, scikit-learn's metadata routing) are left out.
FOREIGN_API = {"score", "get_params", "set_params"}


def _skip_member(app, what, name, obj, skip, options):
    """Leave out what is not efvi's own API: methods inherited from outside efvi
    other than ``FOREIGN_API``, scikit-learn's generated ``set_*_request``
    methods and namedtuple fields ("Alias for field number")."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    if (getattr(obj, "__doc__", None) or "").startswith("Alias for field number"):
        return True
    if what == "class" and callable(obj) and name not in FOREIGN_API \
            and not (getattr(obj, "__module__", None) or "").startswith("efvi"):
        return True
    return skip


_FOREIGN_REFERENCE = re.compile(r":(?:ref|term):`([^`<]*?)\s*(?:<[^`>]*>)?`")


def _plain_foreign_references(app, what, name, obj, options, lines):
    """Turn ``:ref:`` and ``:term:`` roles in scikit-learn's docstrings (its own
    user guide's labels, unknown here) into their plain text."""
    if (getattr(obj, "__module__", None) or "").startswith("sklearn"):
        lines[:] = [_FOREIGN_REFERENCE.sub(r"\1", line) for line in lines]


def setup(app):
    app.connect("autodoc-skip-member", _skip_member)
    app.connect("autodoc-process-docstring", _plain_foreign_references)
