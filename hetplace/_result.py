"""One base for the result objects of hetplace's solvers (issue 9: one result base).

Every result has the same four fields -- ``status`` (a word from the class's
:attr:`Result.STATUSES`), ``success`` (``status`` is one of
:attr:`Result.SUCCESS`), ``message`` (a sentence for people) and ``info`` (a
dict of method-specific details) -- plus the fixed fields its class lists in
:attr:`Result.FIELDS`.  A result is built with exactly those fields: a missing
or unknown one is a programming error (``TypeError``), never a silent
attribute.
"""

__all__ = ["Result"]


class Result:
    """Base of :class:`~hetplace.ExactResult`, :class:`~hetplace.MatchingResult` and :class:`~hetplace.MarketResult`.

    Attributes
    ----------
    status : str
        One of the class's ``STATUSES``.
    success : bool
        ``status in SUCCESS``.
    message : str
        Human-readable account of the outcome.
    info : dict
        Method-specific details.
    """

    #: Fields of every result.
    COMMON = ("status", "success", "message", "info")
    #: The class's own fields (besides :attr:`COMMON`).
    FIELDS = ()
    #: Statuses the class reports, and those that count as ``success``.
    STATUSES = ()
    SUCCESS = ()
    #: Fields shown by ``repr``.
    SHOWN = ("status",)

    def __init__(self, status, message, info=None, **fields):
        if status not in self.STATUSES:
            raise ValueError(f"{type(self).__name__}: status {status!r} is not one of {self.STATUSES}")
        missing = [f for f in self.FIELDS if f not in fields]
        unknown = [f for f in fields if f not in self.FIELDS]
        if missing or unknown:
            raise TypeError(f"{type(self).__name__}: missing fields {missing}, unknown fields {unknown}")
        self.status = status
        self.success = status in self.SUCCESS
        self.message = message
        self.info = dict(info or {})
        for name, value in fields.items():
            setattr(self, name, value)

    def to_dict(self):
        """The common and the class's fields as a dict (arrays and placements as they are)."""
        return {name: getattr(self, name) for name in self.COMMON + self.FIELDS}

    def __repr__(self):
        def fmt(v):
            if isinstance(v, float):
                return f"{v:.6g}"
            return repr(v)

        return f"{type(self).__name__}(" + ", ".join(f"{k}={fmt(getattr(self, k))}" for k in self.SHOWN) + ")"
