"""Reading an input file: the one helper every reader (cluster TOML, job CSV, Gavel JSON) reads through.

Only a regular file is read (a directory, a named pipe or a device such as ``/dev/zero`` is refused
before it is opened), of at most :data:`MAX_FILE_BYTES` bytes, in UTF-8 (a bad byte is reported with
its offset and line); a JSON document's huge integers and deep nesting are input errors too.  Every
failure is an :class:`InputFileError` naming the file, the line or field, and the fix.

Used by :mod:`hetplace.io` (which re-exports :class:`InputFileError` and :data:`MAX_FILE_BYTES`, their
documented home) and :mod:`hetplace.data` (:func:`~hetplace.data.load_gavel`), so neither imports the other.
"""

import json
import math
import os
import re
import stat
import sys
from pathlib import Path

from .errors import InvalidOptionError, InvalidProblemError

__all__ = ["InputFileError", "MAX_FILE_BYTES"]


class InputFileError(InvalidProblemError):
    """A cluster or job file cannot be read; the message names file, line/field and fix.

    Attributes
    ----------
    path : str
    line : int or None
        1-based line number (CSV lines, TOML syntax errors).
    field : str or None
        Column (CSV) or key path (TOML) at fault.
    """

    def __init__(self, path, problem, fix, line=None, field=None):
        self.path, self.line, self.field = str(path), line, field
        where = str(path)
        if line is not None:
            where += f", line {line}"
        if field is not None:
            where += f", {field}"
        super().__init__(f"{where}: {problem} Fix: {fix}")


#: Largest input file (cluster TOML, job CSV, Gavel JSON) the readers accept, in bytes:
#: 64 MiB, far above real inputs (a 1,000,000-worker cluster with a speed per worker is
#: about 20 MB, 50,000 jobs about 3 MB), and small enough to read into memory at once.
MAX_FILE_BYTES = 64 * 2**20

_KINDS = (
    (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
)


def _short(value, limit=60):
    """``repr(value)``, cut to about ``limit`` characters (messages quote user input, which can be huge)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 15]}...{text[-10:]} ({len(text)} characters)"


def _not_regular(mode):
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "not a regular file"


def _input_path(path, what):
    """``path`` as a Path: a str or path-like only (not None, an int taken as a descriptor, bytes)."""
    if isinstance(path, (bool, int)) or not isinstance(path, (str, os.PathLike)):
        raise InvalidOptionError(f"the {what} path must be a str or os.PathLike; got {_short(path)}.")
    try:
        return Path(path)
    except TypeError as exc:  # a path-like whose __fspath__ returns bytes
        raise InvalidOptionError(f"the {what} path must be a str or os.PathLike of str; got {_short(path)} ({exc}).") from None


def _read_input(path, what, example, encoding="utf-8", limit=None):
    """Text of the input file ``path``, or an :class:`InputFileError` naming the file and the fix.

    The one way every reader reads its file.  The path is checked with
    ``os.stat`` before it is opened: only a regular file is read (opening a
    FIFO blocks until a writer comes, ``/dev/zero`` never ends).  The file is
    then opened without blocking, checked again on the open descriptor (the
    path may have changed in between), and at most ``limit`` bytes are read.

    Parameters
    ----------
    path : pathlib.Path
    what : str
        The file's role in messages, e.g. ``"cluster file"``.
    example : str
        What to pass instead, e.g. ``"a cluster TOML file (see examples/cluster.toml)"``.
    encoding : {"utf-8", "utf-8-sig"}
    limit : int, optional
        Largest size accepted, in bytes (default :data:`MAX_FILE_BYTES`).

    Returns
    -------
    str
    """
    limit = MAX_FILE_BYTES if limit is None else limit
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputFileError(path, f"the {what} does not exist.", f"pass the path of {example}.") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputFileError(path, f"cannot read the {what} ({reason}).", "check the path and permissions.") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputFileError(path, f"the {what} is {_not_regular(st.st_mode)}, not a regular file.",
                             f"pass the path of {example}.")
    if st.st_size > limit:
        raise InputFileError(path, f"the {what} has {st.st_size:,} bytes; at most {limit:,} are read.",
                             f"pass {example}; an input this large is not a {what}.")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise InputFileError(path, f"cannot read the {what} ({exc.strerror}).", "check the path and permissions.") from None
    with os.fdopen(fd, "rb") as f:
        try:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise InputFileError(path, f"the {what} is {_not_regular(st.st_mode)}, not a regular file.",
                                     f"pass the path of {example}.")
            data = f.read(min(st.st_size, limit) + 1)  # not read(limit + 1): that allocates the whole cap
            if len(data) > st.st_size:  # the file grew since fstat
                data += f.read(limit + 1 - len(data))
        except OSError as exc:
            raise InputFileError(path, f"cannot read the {what} ({exc.strerror}).",
                                 "check the path and permissions.") from None
    if len(data) > limit:
        raise InputFileError(path, f"the {what} has more than {limit:,} bytes (it grew while being read).",
                             f"pass {example}; an input this large is not a {what}.")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputFileError(
            path, f"the {what} is not UTF-8 text: byte 0x{data[exc.start]:02x} at byte offset {exc.start} "
            f"({exc.reason}).", f"save it as UTF-8 text ({example}).", line=line) from None


def _line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def _digit_run(text, n, pattern=r"[0-9]+"):
    """Match of the first run of ``pattern`` with at least ``n`` digits (in linear time), or None."""
    return next((m for m in re.finditer(pattern, text) if len(m.group().replace("_", "")) >= n), None)


class _IntegerTooLarge(ValueError):
    pass


def _json_int(text):
    if len(text) <= 18:
        return int(text)
    value = float(text)
    if math.isinf(value):
        raise _IntegerTooLarge(text.lstrip("-"))
    return value


def _read_json(path, what, example):
    """The JSON document of ``path`` (through :func:`_read_input`); every failure an :class:`InputFileError`.

    Integers of more than 18 digits are read as float (the value is the
    same: every consumer converts to float), so a huge integer never reaches
    ``int()``'s digit limit nor overflows a later float conversion; one
    beyond float64's range is an error naming its line.
    """
    text = _read_input(path, what, example)
    try:
        return json.loads(text, parse_int=_json_int)
    except _IntegerTooLarge as exc:
        m = _digit_run(text, len(exc.args[0]))
        raise InputFileError(path, f"the {what} holds an integer of {len(exc.args[0]):,} digits, beyond the "
                             f"range of float64 (about 1.8e308).", f"pass {example}.",
                             line=_line_of(text, m.start()) if m else None) from None
    except json.JSONDecodeError as exc:
        raise InputFileError(path, f"the {what} is not valid JSON ({exc.msg}, column {exc.colno}).",
                             f"pass {example}.", line=exc.lineno) from None
    except RecursionError:
        raise InputFileError(path, f"the {what} nests arrays or objects deeper than Python's recursion limit "
                             f"({sys.getrecursionlimit()}).", f"pass {example}.") from None
