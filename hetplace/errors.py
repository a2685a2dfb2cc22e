"""Exception hierarchy of hetplace.

Every user-facing error is a subclass of :class:`HetplaceError` and of the
built-in ``ValueError`` or ``TypeError`` so existing ``except ValueError``
code keeps working.  Messages name the parameter, the value received and the fix.
"""

__all__ = [
    "HetplaceError",
    "InvalidProblemError",
    "InvalidProblemTypeError",
    "InvalidPlacementError",
    "InvalidOptionError",
    "SolverError",
    "MissingDependencyError",
    "BackendUnavailableError",
    "HiddenInformationError",
    "SessionError",
]


class HetplaceError(Exception):
    """Base class of every error raised on purpose by hetplace."""


class InvalidProblemError(HetplaceError, ValueError):
    """A problem input has a wrong value or shape."""


class InvalidProblemTypeError(HetplaceError, TypeError):
    """A problem input has a wrong type (e.g. a string where numbers belong)."""


class InvalidPlacementError(HetplaceError, ValueError):
    """A ``worker_job`` assignment is not a feasible placement of the problem."""


class InvalidOptionError(HetplaceError, ValueError):
    """An option (method, backend, solver, ...) is unknown or out of range."""


class SolverError(HetplaceError, RuntimeError):
    """A solver failed in a way the caller cannot fix by changing inputs."""


class MissingDependencyError(HetplaceError, ImportError):
    """An optional dependency is not installed; the message says how to install it."""


class BackendUnavailableError(InvalidOptionError, MissingDependencyError):
    """``backend="cython"`` was asked for but its compiled extensions are not built.

    One error for that case everywhere (:func:`hetplace.place`,
    :func:`hetplace.deferred_acceptance`, :func:`hetplace.sample_categories`,
    ...): both an invalid option for this install and a missing compiled
    dependency, so ``except InvalidOptionError`` and ``except
    MissingDependencyError`` both catch it.  The message says how to build them.
    """


class HiddenInformationError(HetplaceError, AttributeError):
    """A policy read what a scheduler cannot know (a job's true length) without being declared an oracle.

    The online simulator hands a policy whose class does not set ``oracle = True`` job
    views without ``total_steps`` / ``duration`` (docs/online.md §3.1); reading them raises
    this error.  An ``AttributeError``, so ``hasattr(job, "total_steps")`` is False there.
    """


class SessionError(HetplaceError, ValueError):
    """A bad event or argument of a :class:`hetplace.Session`; the session is unchanged.

    The message names the job (or node), the field, the value received and the fix.

    Attributes
    ----------
    field : str or None
        The field at fault where one is known (``"batch"``, ``"events[2].iterations_left"``).
    """

    def __init__(self, message, field=None):
        super().__init__(message)
        self.field = field


class HetplaceWarning(UserWarning):
    """Something works but not as expected (e.g. the compiled kernels are missing and a slower backend runs)."""


__all__.append("HetplaceWarning")
