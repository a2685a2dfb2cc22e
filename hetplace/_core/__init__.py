"""Compiled kernels of hetplace (private).

Kernels assume clean, typed, C-contiguous arrays and never validate: the public
modules (``hetplace.*``) validate every input before calling them.  Numba kernels
live in ``_*_nb.py`` modules (compiled lazily, on first call, with on-disk caching);
Cython kernels in ``_*.pyx`` modules (compiled by ``pip install``).  Single-source
kernels (``_market.py``, ``_polish.py``, ``_ordinal.py``) are written once in Cython's pure-Python mode and serve
all three backends (:mod:`._source`); :mod:`._registry` gives every backend the
same set of kernels.

When a Cython kernel module cannot be imported, its importer calls
:func:`warn_missing_compiled` (falling back to Numba) or raises with
:func:`missing_compiled_message` (``backend="cython"`` asked explicitly): the
one place that explains a compiled backend missing where one was expected --
typically a clone's source tree imported (Python puts the current folder first
on ``sys.path``) instead of the hetplace that ``pip install .`` built elsewhere --
naming the imported folder and the fix.
"""

import os
import sys
import warnings

__all__ = ["missing_compiled_message", "warn_missing_compiled"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = os.path.dirname(_HERE)
_warned = False


def _installed_elsewhere():
    """Folder of an installed hetplace whose compiled kernels exist, when it is not the imported one.

    Every ``hetplace`` distribution on ``sys.path`` is looked at: a clone's own
    ``hetplace.egg-info`` (left by ``pip install .``) comes first from the current
    folder and lists no compiled files.
    """
    from importlib.metadata import distributions

    for dist in distributions(name="hetplace"):
        for f in dist.files or ():
            parts = f.parts
            if len(parts) == 3 and parts[:2] == ("hetplace", "_core") and parts[2].endswith((".so", ".pyd")):
                located = os.path.abspath(str(dist.locate_file(f)))
                if os.path.isfile(located) and os.path.dirname(located) != _HERE:
                    return os.path.dirname(os.path.dirname(located))
    return None


def missing_compiled_message(name, error=None, what=None, instead="pass backend='numba'"):
    """Why ``hetplace._core.<name>`` (a Cython module) cannot be imported, and the fix.

    Parameters
    ----------
    name : str
        Module name inside ``hetplace._core``, e.g. ``"_openmp"``.
    error : ImportError, optional
        The import error, quoted in the message.
    what : str, optional
        What needs the module, e.g. ``"backend='cython'"``: the message then
        starts with it and ends with the alternative ``instead``.
    instead : str
        The alternative offered after the fix when ``what`` is given.

    Returns
    -------
    str
        Names the imported hetplace folder and, when another hetplace is
        installed with its compiled kernels, that one too.
    """
    cause = f" ({error})" if error is not None else ""
    root = os.path.dirname(_PACKAGE)
    module = f"the compiled extension hetplace._core.{name}"
    head = (f"{what} needs {module}, which cannot" if what else f"{module} cannot") + f" be imported from {_HERE}{cause}"
    build = f"`pip install -e .` in {root} (or `python setup.py build_ext --inplace` there; a C compiler is needed)"
    other = _installed_elsewhere()
    if other is not None:
        text = (
            f"{head}: Python imported the source tree {_PACKAGE} (the current folder comes first on sys.path), "
            f"not the hetplace installed with its compiled kernels at {other}. Fix: run from another folder, "
            f"or build the extensions in the source tree with {build}"
        )
    else:
        text = f"{head}: the Cython extensions of this hetplace are not built. Fix: build them with {build}"
    return text + (f"; or {instead}." if what else ".")


def _stacklevel():
    """Stack level of the first frame outside the hetplace package (where the user called it)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def warn_missing_compiled(name, error=None):
    """Warn, once per process, that ``hetplace._core.<name>`` is missing and Numba runs instead.

    Parameters
    ----------
    name, error
        As for :func:`missing_compiled_message`.

    Warns
    -----
    HetplaceWarning
        :func:`missing_compiled_message` plus the fallback; only the first
        call of a process warns (every backend resolution would repeat it).
    """
    global _warned
    if _warned:
        return
    from ..errors import HetplaceWarning

    _warned = True
    warnings.warn(
        missing_compiled_message(name, error) + " Meanwhile the slower Numba backend runs.",
        HetplaceWarning, stacklevel=_stacklevel(),
    )
