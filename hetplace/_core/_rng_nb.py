"""Counter-based random numbers (docs/model.md §3.10), Numba kernels.

A draw is a pure function of ``(seed, stream, counter)``, so parallel loops can
draw without sharing state and every backend gets the same bits:

* ``splitmix64(x)``: the SplitMix64 output function (Steele, Lea & Flood, 2014):
  ``x += 0x9E3779B97F4A7C15``; ``z = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9``;
  ``z = (z ^ (z >> 27)) * 0x94D049BB133111EB``; return ``z ^ (z >> 31)``,
  all modulo 2**64.
* ``stream_key(seed, stream) = splitmix64(seed ^ (stream * 0xD1B54A32D192ED03))``.
* ``rand_u64(seed, stream, counter) = splitmix64(stream_key(seed, stream) +
  counter * 0x9E3779B97F4A7C15)``: the ``counter``-th output of a SplitMix64
  generator seeded with the stream key, so each stream is a full-quality
  SplitMix64 sequence and streams start at unrelated points.
* ``rand_u01 = (rand_u64 >> 11) * 2**-53`` in ``[0, 1)``;
  ``rand_open01 = rand_u01 + 2**-54`` in ``(0, 1)`` (exact: never 0 or 1, so
  ``log`` of it is always finite).
* ``rand_below(seed, stream, counter, n)``: unbiased integer in ``[0, n)`` by
  rejection: ``x = rand_u64(...)``; accept ``x % n`` unless ``x`` falls in the
  incomplete last block (``x - x % n > 2**64 - n``); a rejected ``x`` is
  replaced by ``splitmix64(x)`` (same counter).  It therefore consumes exactly
  one counter value; rejection happens with probability below ``n / 2**64``.

The ``*_k`` variants take the precomputed ``stream_key`` instead of
``(seed, stream)`` (the same numbers, one hash less per draw).

Every literal is a ``np.uint64``: Numba promotes ``uint64`` mixed with
``int64`` to ``float64``.  ``_rng.pxd`` (Cython) and ``_categories_py.py``
(plain Python) implement the same functions bit for bit.

Streams ``>= 2**63`` are reserved for ``hetplace.categories``; callers such as
the SMP driver use small stream ids (e.g. the sample index).

The wrap-around modulo 2**64 is intended.  Compiled, it is silent; with
``NUMBA_DISABLE_JIT=1`` the functions run as NumPy scalar code, which warns on
every uint64 overflow, so :func:`_kernel` then runs each one under
``np.errstate(over="ignore")`` (same bits; the compiled kernels are untouched).
"""

import functools

import numba
import numpy as np
from numba import njit
from ._jit import JIT

__all__ = [
    "splitmix64",
    "stream_key",
    "rand_u64",
    "rand_u64_k",
    "rand_u01",
    "rand_u01_k",
    "rand_open01_k",
    "rand_below",
    "rand_below_k",
    "rand_u01_fill",
]

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)
STREAM_MUL = np.uint64(0xD1B54A32D192ED03)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_ZERO = np.uint64(0)
_TWO_M53 = 1.0 / 9007199254740992.0  # 2**-53
_TWO_M54 = 0.5 / 9007199254740992.0  # 2**-54


def _kernel(f):
    """``njit(**JIT)(f)``; with the JIT disabled, ``f`` under ``np.errstate(over="ignore")``.

    Parameters
    ----------
    f : function
        A kernel whose uint64 arithmetic wraps around on purpose.

    Returns
    -------
    numba.core.registry.CPUDispatcher or function
        The compiled kernel, or (``NUMBA_DISABLE_JIT=1``) a plain-Python wrapper
        that silences NumPy's overflow warnings of the intended wrap-around.
    """
    compiled = njit(**JIT)(f)
    if not numba.config.DISABLE_JIT:
        return compiled

    @functools.wraps(f)
    def quiet(*args):
        with np.errstate(over="ignore"):
            return compiled(*args)

    return quiet


@_kernel
def splitmix64(x):
    """SplitMix64 output function of ``x`` (uint64 -> uint64)."""
    z = np.uint64(x) + GOLDEN
    z = (z ^ (z >> _S30)) * MIX1
    z = (z ^ (z >> _S27)) * MIX2
    return z ^ (z >> _S31)


@_kernel
def stream_key(seed, stream):
    """Key of stream ``stream`` under ``seed`` (uint64)."""
    return splitmix64(np.uint64(seed) ^ (np.uint64(stream) * STREAM_MUL))


@_kernel
def rand_u64_k(key, counter):
    """``counter``-th 64-bit draw of the stream with key ``key``."""
    return splitmix64(np.uint64(key) + np.uint64(counter) * GOLDEN)


@_kernel
def rand_u64(seed, stream, counter):
    """64-bit draw number ``counter`` of stream ``stream`` under ``seed`` (uint64)."""
    return rand_u64_k(stream_key(seed, stream), counter)


@_kernel
def rand_u01_k(key, counter):
    """Uniform double in ``[0, 1)`` with 53 random bits."""
    return np.float64(rand_u64_k(key, counter) >> _S11) * _TWO_M53


@_kernel
def rand_u01(seed, stream, counter):
    """Uniform double in ``[0, 1)``: ``(rand_u64 >> 11) * 2**-53``."""
    return rand_u01_k(stream_key(seed, stream), counter)


@_kernel
def rand_open01_k(key, counter):
    """Uniform double in ``(0, 1)``: ``rand_u01 + 2**-54`` (exact)."""
    return np.float64(rand_u64_k(key, counter) >> _S11) * _TWO_M53 + _TWO_M54


@_kernel
def rand_below_k(key, counter, n):
    """Unbiased integer in ``[0, n)`` (``n >= 1``), as int64; one counter value."""
    un = np.uint64(n)
    x = rand_u64_k(key, counter)
    limit = _ZERO - un  # 2**64 - n
    while True:
        r = x % un
        if x - r <= limit:
            return np.int64(r)
        x = splitmix64(x)


@_kernel
def rand_below(seed, stream, counter, n):
    """Unbiased integer in ``[0, n)`` (``1 <= n < 2**63``), as int64."""
    return rand_below_k(stream_key(seed, stream), counter, n)


@_kernel
def rand_u01_fill(seed, stream, out):
    """``out[c] = rand_u01(seed, stream, c)`` for every ``c`` (benchmarks, tests)."""
    key = stream_key(seed, stream)
    for c in range(out.shape[0]):
        out[c] = rand_u01_k(key, c)
