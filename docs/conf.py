"""Sphinx configuration of the hetplace API reference.

Build (warnings are errors, as in CI)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The pages are Markdown (myst-parser) except ``api.rst``; docstrings are numpydoc.
"""

import os
import sys

# the package from this checkout, whether or not it is installed
sys.path.insert(0, os.path.abspath(".."))

project = "hetplace"
author = "hetplace developers"
copyright = "hetplace developers"
release = version = "0.1.0"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
# the Markdown pages start at "##" (they read well on GitHub that way)
suppress_warnings = ["myst.header"]

# autodoc: documented members in source order; `hetplace.torch` needs PyTorch only
# to be imported, so a machine without it builds the same pages from a mock.
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True}
try:
    import torch  # noqa: F401  (autodoc imports it for hetplace.torch anyway)
except ImportError:
    autodoc_mock_imports = ["torch"]

# autosummary: tables only, no generated stub pages (the entries are on api.rst)
autosummary_generate = False

# numpydoc: methods and attributes come from autodoc's :members:, not from numpydoc's
# own autosummary tables (those would need one generated page per member).
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# myst: README-style Markdown (pipe tables are built in; headings get anchors)
myst_heading_anchors = 3

html_theme = "alabaster"
html_title = "hetplace"
html_static_path = []
