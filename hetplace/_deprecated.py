"""Old public names kept importable for a while, with a ``DeprecationWarning`` (private)."""

import warnings

__all__ = ["renamed"]


def renamed(module, names):
    """A module ``__getattr__`` serving the renamed attributes ``names`` (``{old: new}``) of ``module``.

    ``module.<old>`` returns ``module.<new>`` (the same object) and warns
    ``DeprecationWarning`` naming both; any other missing name raises ``AttributeError``.
    Use as ``__getattr__ = renamed(__name__, {"Old": "New"})``; keep the old names out of ``__all__``.
    """

    def __getattr__(name):
        if name in names:
            import sys

            new = names[name]
            warnings.warn(
                f"{module}.{name} is deprecated; use {module}.{new} (the same object).",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(sys.modules[module], new)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
