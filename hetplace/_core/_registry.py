"""The backend registry: the same set of kernels for every backend, in one place.

``kernels(backend)`` returns a :class:`Kernels` record, one explicitly named
field per kernel, for each of :data:`BACKENDS`; the public modules call kernels
through it (``k.market_category_kernel(...)``) instead of importing a module
per backend.  A single-source kernel module (see
:mod:`hetplace._core._source`) appears as the extension ``cythonize`` built
(``"cython"``), compiled by Numba (``"numba"``) or as plain Python
(``"python"``).

``"cython"`` is available only when every extension it needs imports *and* is
compiled: when a build failed, Python silently imports a single-source
module's ``.py`` instead of the missing extension, which :func:`unavailable`
detects from its ``COMPILED`` flag, so ``"cython"`` never quietly means plain
Python.  :func:`kernels` raises :class:`~hetplace.errors.InvalidOptionError`
with :func:`~hetplace._core.missing_compiled_message` for a backend that is
not available -- the one error and message for that case.
"""

import importlib
import sys
from dataclasses import dataclass, fields
from typing import Callable

__all__ = ["BACKENDS", "BACKEND_CHOICES", "KERNEL_NAMES", "Kernels", "kernels", "resolve", "unavailable"]

#: Every backend, in the order "auto" tries them.
BACKENDS = ("cython", "numba", "python")
#: What a ``backend=`` option accepts (SMP, the matching, the categories, the CLI): ``"auto"``, then
#: :data:`BACKENDS`.  The one definition; ``hetplace.smp.BACKENDS`` and ``hetplace.matching.BACKENDS``
#: re-export it.
BACKEND_CHOICES = ("auto",) + BACKENDS

#: Single-source modules (hetplace/_core/<name>.py), each a source of :class:`Kernels` fields.
_SINGLE_SOURCE = ("_polish", "_ordinal", "_market", "_categories", "_topo")
#: Cython-only extensions the compiled backend also needs: ``_openmp`` holds OpenMP's thread
#: limit (``max_threads``), which Cython's pure-Python mode cannot reach portably.
_CYTHON_EXTRAS = ("_openmp",)



@dataclass(frozen=True)
class Kernels:
    """The kernels of one backend: the same fields, with the same signatures, on every backend.

    Each field is the function (or constant) of that name in the single-source module named
    beside it, as the backend compiled it; see that module for its signature and contract.
    """

    backend: str
    # hetplace/_core/_polish.py
    polish: Callable
    polish_rows: Callable
    polish_classes: Callable
    polish_rows_classes: Callable
    keep_rows: Callable
    expand_keep: Callable
    # hetplace/_core/_ordinal.py
    ordinal_match: Callable
    # hetplace/_core/_market.py
    FORM_PRICE: int
    FORM_ORDINAL: int
    auction_workspace_size: Callable
    market_workspace_size: Callable
    class_market_workspace_size: Callable
    auction_kernel: Callable
    ordinal_preferences: Callable
    market_category_kernel: Callable
    class_market_kernel: Callable
    run_samples: Callable
    run_samples_classes: Callable
    fit_max: Callable
    # hetplace/_core/_categories.py
    rank_category: Callable
    unrank_category: Callable
    unrank_categories: Callable
    enumerate_categories: Callable
    sample_uniform_reservoir: Callable
    sample_uniform_direct: Callable
    sample_weighted_enum: Callable
    sample_weighted_perturb: Callable
    # hetplace/_core/_topo.py
    topo_polish_rows: Callable
    topo_pack_rows: Callable
    topo_dp: Callable


#: The kernel fields of every :class:`Kernels` record (all but ``backend``).
KERNEL_NAMES = tuple(f.name for f in fields(Kernels) if f.name != "backend")

_cache = {}


def _cython_module(name):
    # the imported module straight from sys.modules when it is there (a dict look-up; an
    # import_module call costs microseconds, and a decision asks for every extension);
    # an entry set to None (an import that must fail) goes through import_module, which raises
    module = sys.modules.get(f"{__package__}.{name}")
    if module is None:
        module = importlib.import_module(f"{__package__}.{name}")
    if name in _SINGLE_SOURCE and not getattr(module, "COMPILED", False):
        raise ImportError(f"{module.__file__} was imported as plain Python: its extension is not built")
    return module


#: ``(sys.modules key, module)`` of every extension the last full check of "cython" found compiled.
_verified = ()


def unavailable(backend):
    """Why ``backend`` cannot run here: ``(module name, ImportError)``, or None when it can.

    Only ``"cython"`` can be unavailable (its extensions are built at install).
    While ``sys.modules`` holds the very modules the last full check found
    compiled, they are not looked at again (a decision asks several times).
    """
    global _verified
    if backend != "cython":
        return None
    modules = sys.modules
    if _verified and all(modules.get(key) is module for key, module in _verified):
        return None
    found = []
    for name in _CYTHON_EXTRAS + tuple(_SINGLE_SOURCE):
        try:
            found.append((f"{__package__}.{name}", _cython_module(name)))
        except ImportError as exc:
            return name, exc
    _verified = tuple(found)
    return None


def kernels(backend):
    """The kernels of ``backend``, one of :data:`BACKENDS` (already validated by the caller).

    Returns
    -------
    Kernels
        ``backend`` plus every kernel of :data:`KERNEL_NAMES`, with the same
        signatures on every backend.

    Raises
    ------
    BackendUnavailableError
        ``backend`` is ``"cython"`` and its extensions are not built (or a
        build failed and left plain Python in their place).
    """
    missing = unavailable(backend)  # every time (a few dict look-ups): an extension can go missing
    if missing is not None:
        from ..errors import BackendUnavailableError
        from . import missing_compiled_message

        raise BackendUnavailableError(missing_compiled_message(missing[0], missing[1], what=f"backend={backend!r}"))
    if backend in _cache:
        return _cache[backend]
    if backend == "cython":
        modules = {name: _cython_module(name) for name in _SINGLE_SOURCE}
    else:
        from ._source import load

        modules = {name: load(name, backend) for name in _SINGLE_SOURCE}
    table = _record(backend, modules["_polish"], modules["_ordinal"], modules["_market"], modules["_categories"],
                    modules["_topo"])
    _cache[backend] = table
    return table


def _record(backend, polish, ordinal, market, categories, topo):
    """The :class:`Kernels` of ``backend`` from its compilation of each single-source module."""
    return Kernels(
        backend=backend,
        polish=polish.polish,
        polish_rows=polish.polish_rows,
        polish_classes=polish.polish_classes,
        polish_rows_classes=polish.polish_rows_classes,
        keep_rows=polish.keep_rows,
        expand_keep=polish.expand_keep,
        ordinal_match=ordinal.ordinal_match,
        FORM_PRICE=market.FORM_PRICE,
        FORM_ORDINAL=market.FORM_ORDINAL,
        auction_workspace_size=market.auction_workspace_size,
        market_workspace_size=market.market_workspace_size,
        class_market_workspace_size=market.class_market_workspace_size,
        auction_kernel=market.auction_kernel,
        ordinal_preferences=market.ordinal_preferences,
        market_category_kernel=market.market_category_kernel,
        class_market_kernel=market.class_market_kernel,
        run_samples=market.run_samples,
        run_samples_classes=market.run_samples_classes,
        fit_max=market.fit_max,
        rank_category=categories.rank_category,
        unrank_category=categories.unrank_category,
        unrank_categories=categories.unrank_categories,
        enumerate_categories=categories.enumerate_categories,
        sample_uniform_reservoir=categories.sample_uniform_reservoir,
        sample_uniform_direct=categories.sample_uniform_direct,
        sample_weighted_enum=categories.sample_weighted_enum,
        sample_weighted_perturb=categories.sample_weighted_perturb,
        topo_polish_rows=topo.topo_polish_rows,
        topo_pack_rows=topo.topo_pack_rows,
        topo_dp=topo.topo_dp,
    )


def resolve(backend):
    """``(name, kernels(name))`` for a validated ``backend`` of ``BACKENDS`` or ``"auto"``.

    ``"auto"`` is ``"cython"`` when its extensions are built, else ``"numba"``
    with the package's one warning (:func:`hetplace._core.warn_missing_compiled`);
    an explicit ``"cython"`` that is not built raises
    :class:`~hetplace.errors.BackendUnavailableError` (from :func:`kernels`).
    The one backend resolution of the package: SMP, the categories and the
    matching all call it.
    """
    name = backend
    if backend == "auto":
        missing = unavailable("cython")
        if missing is None:
            name = "cython"
        else:
            from . import warn_missing_compiled

            warn_missing_compiled(*missing)
            name = "numba"
    return name, kernels(name)
