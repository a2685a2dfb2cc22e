"""Compile a single-source kernel module for the Numba and plain-Python backends.

A single-source module (e.g. ``_polish.py``) is written in Cython's pure-Python
mode.  ``cythonize`` compiles it at install into the extension of the same
name (``backend="cython"``).  :func:`load` runs the same file two more ways:

``"python"``
    executed as plain Python in a private module;
``"numba"``
    the same, then every function decorated ``@cython.cfunc`` or
    ``@cython.ccall`` is replaced by ``numba.njit(**JIT, _nrt=False)`` of itself
    (``parallel=True`` when its body calls ``prange``; ``inline="always"``
    when it is ``@cython.inline``: inlined in Numba's IR, which made the class
    polish faster than calls to it; ``_nrt=False``: no reference counting,
    as kernels never allocate), so calls between kernels resolve to the
    compiled ones.  Numba's ``prange`` takes no
    options, so ``prange(n, nogil=True, ...)`` is compiled as ``prange(n)``.

In both, ``import cython`` and ``from cython.parallel import prange`` are
served by a stand-in of the few names a kernel source may use (decorators and
``with cython.nogil`` do nothing, ``cython.compiled`` is False): Cython is
needed to build hetplace, not to run it.  Annotations are not evaluated (the
sources use ``from __future__ import annotations``).  The C types
``ulonglong``, ``longlong``, ``Py_ssize_t`` and ``double`` also convert, so
``cython.cast(type, x)`` and ``cython.declare(type, value)`` give a value of
that type (and so do ``int64_t`` and ``uint64_t`` of
``cython.cimports.libc.stdint``): a NumPy scalar under Numba (where ``uint64`` mixed with ``int64``
would silently become ``float64``), and a Python int masked to 64 bits (or a
float) as plain Python (:data:`_SHIM`), so unsigned arithmetic wraps the same
way in every backend.  ``from cython.cimports.libc.math import log, ...`` is
served by the C library's functions as Python's :mod:`math` has them (``floor``
returning a float, as C's does).

Called from Python, a Numba kernel receives the arrays of its ``cython.const``
parameters as read-only views (:func:`_read_only`): Numba types a read-only
array apart from a writable one, and would compile the kernel again for each
mix.

Numba's on-disk cache keys on the source file, which is the real ``.py``; the
compiled namespace is registered as ``hetplace._core.<name>_numba`` because
Numba re-imports a function's module by name when it loads a cached kernel.
"""

import ast
import builtins
import math
import os
import sys
import types

__all__ = ["load"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_KERNEL_DECORATORS = ("cfunc", "ccall")


class _NoOp:
    """A decorator (with or without arguments) and a context manager that does nothing."""

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return self

    def __getitem__(self, item):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _prange(*args, **options):
    """``prange`` of the plain-Python run: a ``range`` (options ignored)."""
    return range(*args)


class _CType:
    """A C type of the shim: named in annotations, a conversion in ``cython.cast`` and ``cython.declare``."""

    def __init__(self, convert):
        self.convert = convert

    def __call__(self, value):
        return self.convert(value)

    def __getitem__(self, item):  # cython.double[::1] outside an annotation
        return self


_MASK64 = (1 << 64) - 1
#: C types as plain Python: integers wrap to 64 bits as C's do.
_PY_TYPES = {
    "ulonglong": lambda x: int(x) & _MASK64,
    "longlong": lambda x: ((int(x) + (1 << 63)) & _MASK64) - (1 << 63),
    "double": float,
}
_PY_TYPES["Py_ssize_t"] = _PY_TYPES["int64_t"] = _PY_TYPES["longlong"]
_PY_TYPES["uint64_t"] = _PY_TYPES["ulonglong"]
#: The C types of ``cython.cimports.libc.stdint`` (the rest are ``cython.<name>``).
_STDINT = ("int64_t", "uint64_t")


def _c_floor(x):
    """C's ``floor``: a float (Python's returns an int, and raises on inf and nan)."""
    return x if math.isinf(x) or math.isnan(x) else float(math.floor(x))


def _libc(floor, ctypes):
    """``cython.cimports.libc.math`` and ``.stdint`` of a backend: C's math functions as :mod:`math` has them, and its int types."""
    libm = types.ModuleType("cython.cimports.libc.math", "C math functions of a single-source kernel (see _source).")
    for name in ("log", "log1p", "exp", "sqrt", "fabs"):
        setattr(libm, name, getattr(math, name))
    libm.floor, libm.INFINITY, libm.NAN = floor, math.inf, math.nan
    stdint = types.ModuleType("cython.cimports.libc.stdint", "C integer types of a single-source kernel (see _source).")
    for name in _STDINT:
        setattr(stdint, name, ctypes[name])
    return {"cython.cimports.libc.math": libm, "cython.cimports.libc.stdint": stdint}


def _make_shim(ctypes=None, cast=None):
    shim = types.ModuleType("cython", "Stand-in for Cython's names in single-source kernels (see _source).")
    noop = _NoOp()
    for name in ("cfunc", "ccall", "inline", "nogil", "gil", "exceptval", "boundscheck", "wraparound",
                 "cdivision", "initializedcheck", "locals", "returns", "final"):
        setattr(shim, name, noop)
    def other_type(name):  # other C types (cython.uchar, ...): only ever named, never used
        if name.startswith("_"):  # not a C type: e.g. Numba's _numba_type_ probe of a global it compiles
            raise AttributeError(name)
        return noop

    shim.__getattr__ = other_type
    ctypes = {k: _CType(f) for k, f in _PY_TYPES.items()} if ctypes is None else ctypes
    for name, ctype in ctypes.items():
        if name not in _STDINT:
            setattr(shim, name, ctype)
    known = tuple(ctypes.values())
    shim.compiled = False
    shim.declare = lambda ctype=None, value=None, **kw: ctype(value) if value is not None and any(
        ctype is t for t in known) else value
    shim.cast = cast if cast is not None else (lambda ctype, value, typecheck=False: ctype(value))
    shim.parallel = types.ModuleType("cython.parallel")
    shim.parallel.prange = _prange
    shim.libc = _libc(_c_floor, ctypes)
    return shim


_SHIM = _make_shim()


def _numba_shim(numba, np):
    """The shim of the Numba compilation: C types are NumPy's, ``cython.cast`` a jitted conversion."""
    ctypes = {"ulonglong": np.uint64, "longlong": np.int64, "Py_ssize_t": np.intp, "double": np.float64,
              "uint64_t": np.uint64, "int64_t": np.int64}

    @numba.njit(inline="always")
    def cast(ctype, value):
        return ctype(value)

    shim = _make_shim(ctypes, cast)
    shim.libc = _libc(np.floor, ctypes)
    return shim


def _importer(shim, parallel_module, backend):
    """``__import__`` of a single-source module: ``cython`` names from the shim, the rest as usual.

    ``from cython.cimports.hetplace._core.<name> import f`` (a kernel of another
    single-source module, declared in its ``.pxd`` for Cython) imports ``f`` from
    :func:`load` ``(<name>, backend)``: the same backend's compilation.
    """
    real = builtins.__import__
    cimports = "cython.cimports." + __package__ + "."

    def _import(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and name == "cython":
            return shim
        if level == 0 and name.startswith(cimports) and fromlist:
            return load(name[len(cimports):], backend)
        if level == 0 and name == "cython.parallel":
            return parallel_module if fromlist else shim
        if level == 0 and name in shim.libc:
            return shim.libc[name]
        return real(name, globals, locals, fromlist, level)

    return _import


def _is_kernel(node):
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                and target.value.id == "cython" and target.attr in _KERNEL_DECORATORS:
            return True
    return False


def _is_inline(node):
    return any(isinstance(d, ast.Attribute) and isinstance(d.value, ast.Name) and d.value.id == "cython"
               and d.attr == "inline" for d in node.decorator_list)


def _calls_prange(node):
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "prange"
               for n in ast.walk(node))


class _PlainPrange(ast.NodeTransformer):
    """``prange(n, nogil=True, num_threads=t, ...)`` -> ``prange(n)`` (Numba's takes no options)."""

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "prange":
            node.keywords = []
        return node


def _const_positions(node):
    """Positions of the parameters of kernel ``node`` annotated ``cython.const[...]`` (its inputs)."""
    return tuple(i for i, a in enumerate(node.args.args)
                 if a.annotation is not None and "const" in ast.unparse(a.annotation))


def _read_only(kernel, positions):
    """``kernel`` called from Python with the arrays at ``positions`` passed as read-only views.

    Numba compiles a kernel once per argument type, and a read-only array is
    another type than a writable one: an input that is sometimes a frozen
    :class:`~hetplace.problem.Problem` array and sometimes a fresh one compiled
    the same kernel two to sixteen times (minutes of compilation on a cold
    cache, and a first-call stall of seconds in an embedding scheduler).
    Every input a kernel declares ``cython.const`` reaches it read-only, so
    each kernel compiles once per real signature.
    """
    import numpy as np

    ndarray = np.ndarray

    def entry(*args, **kwargs):
        args = list(args)
        for i in positions:
            if i < len(args):
                a = args[i]
                if type(a) is ndarray and a.flags.writeable:
                    a = a.view()
                    a.flags.writeable = False
                    args[i] = a
        return kernel(*args, **kwargs)

    entry.__name__, entry.__qualname__, entry.__doc__ = kernel.__name__, kernel.__qualname__, kernel.__doc__
    entry.kernel = kernel
    return entry


class _Globals(dict):
    """The globals of a module's plain Python functions: its read-only entries, then the module."""

    __slots__ = ("module",)

    def __missing__(self, name):
        return self.module[name]


def _read_only_entries(module, const, plain):
    """Give ``module``'s plain Python functions read-only entries to its kernels (see :func:`_read_only`).

    Kernels calling kernels keep the compiled functions (Numba resolves those
    at compilation, from the module); only the calls from Python go through an
    entry.  The module's attributes stay the compiled kernels, which other
    single-source modules import.
    """
    scope = _Globals((name, _read_only(getattr(module, name), pos)) for name, pos in const.items() if pos)
    scope.module = module.__dict__
    scope["__builtins__"] = module.__dict__["__builtins__"]  # read when a function is made, not via __missing__
    for name in plain:
        fn = module.__dict__[name]
        new = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
        new.__kwdefaults__, new.__doc__, new.__qualname__ = fn.__kwdefaults__, fn.__doc__, fn.__qualname__
        new.__module__ = fn.__module__
        module.__dict__[name] = new


_loaded = {}


def _with_serial(numba, fn, parallel, options):
    """A ``prange`` kernel that runs its serial compilation when Numba has one thread.

    On one thread the parallel compilation still goes through Numba's threading
    layer, which on a machine whose cores are busy costs many times the serial
    time (docs/results.md §2); ``hetplace.smp`` sets the thread count per
    decision.  The serial copy gets its own name, so its own cache file.
    Kernels with ``prange`` are drivers called from Python, so a Python
    dispatcher in front of them is fine.
    """
    serial_fn = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_serial", fn.__defaults__)
    serial_fn.__qualname__ = fn.__qualname__ + "_serial"
    serial = numba.njit(**options)(serial_fn)
    get = numba.get_num_threads

    def kernel(*args):
        return (serial if get() == 1 else parallel)(*args)

    kernel.__name__, kernel.__qualname__, kernel.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    kernel.parallel, kernel.serial = parallel, serial
    return kernel


def load(name, backend):
    """The kernels of ``hetplace/_core/<name>.py`` compiled for ``backend`` ("numba" or "python").

    Parameters
    ----------
    name : str
        Single-source module inside ``hetplace._core``, e.g. ``"_polish"``.
    backend : {"numba", "python"}

    Returns
    -------
    module
        A private module holding every name of the source; loaded once per
        process and backend.  Compiling nothing heavy: Numba compiles (or
        loads from its cache) each kernel on its first call.
    """
    key = (name, backend)
    if key in _loaded:
        return _loaded[key]
    path = os.path.join(_HERE, name + ".py")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    kernels = {node.name: (_calls_prange(node), _is_inline(node)) for node in tree.body
               if isinstance(node, ast.FunctionDef) and _is_kernel(node)}
    const = {node.name: _const_positions(node) for node in tree.body
             if isinstance(node, ast.FunctionDef) and _is_kernel(node)}
    plain = [node.name for node in tree.body if isinstance(node, ast.FunctionDef) and not _is_kernel(node)]
    if backend == "numba":
        import numba
        import numpy as np

        from ._jit import JIT

        tree = ast.fix_missing_locations(_PlainPrange().visit(tree))
        # with the JIT off the kernels run as Python: Python's ints then wrap as C's do, without
        # NumPy's overflow warnings of the intended uint64 wrap-around
        shim = _SHIM if numba.config.DISABLE_JIT else _numba_shim(numba, np)
        parallel = types.ModuleType("cython.parallel")
        parallel.prange = numba.prange
    else:
        shim = _SHIM
        parallel = _SHIM.parallel
    module = types.ModuleType(f"{__package__}.{name}_{backend}", f"{name}.py compiled for backend={backend!r} (see _source).")
    module.__file__ = path
    module.__dict__["__builtins__"] = dict(builtins.__dict__, __import__=_importer(shim, parallel, backend))
    exec(compile(tree, path, "exec"), module.__dict__)
    if backend == "numba":
        for fname, (par, inline) in kernels.items():
            # _nrt=False: no reference counting of the arrays a kernel passes to the kernels it
            # calls.  Kernels never allocate (the rule above; Numba refuses to compile one that
            # does without its runtime), and the counting slowed the class polish (docs/results.md §4)
            # (atomic increments the inlined helpers' array arguments could not be pruned of)
            options = dict(JIT, parallel=True, _nrt=False) if par else dict(JIT, _nrt=False)
            if inline:
                options["inline"] = "always"
            fn = getattr(module, fname)
            compiled = numba.njit(**options)(fn)
            if par:
                compiled = _with_serial(numba, fn, compiled, dict(options, parallel=False))
            setattr(module, fname, compiled)
        if not numba.config.DISABLE_JIT:
            _read_only_entries(module, const, plain)
        sys.modules[module.__name__] = module
    _loaded[key] = module
    return module
