"""Build the Cython kernels in ``hetplace/_core``: the ``_*.pyx`` modules and the
single-source ``_*.py`` kernels written in Cython's pure-Python mode.

Metadata lives in ``pyproject.toml``; this file only declares the extensions.
Set ``HETPLACE_CYTHON_DEBUG=1`` at build time to compile with bounds checks and
wraparound on (slower, for hunting kernel bugs).
"""
import glob
import os
import re
import sys

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("HETPLACE_CYTHON_DEBUG", "0") not in ("", "0")

directives = {
    "language_level": "3",
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "nonecheck": False,
}

# -ffp-contract=off keeps floating-point results bit-identical to the Numba and
# pure-Python backends (no fused multiply-add contraction).
compile_args = ["-O3", "-ffp-contract=off"]
link_args = []
if sys.platform.startswith("linux"):
    compile_args.append("-fopenmp")
    link_args.append("-fopenmp")


def _single_source(path):
    """A ``.py`` kernel in Cython's pure-Python mode (hetplace/_core/_source.py): it has ``import cython``."""
    with open(path, encoding="utf-8") as f:
        return re.search(r"^import cython\s*$", f.read(), re.M) is not None


sources = sorted(glob.glob(os.path.join("hetplace", "_core", "_*.pyx")))
sources += sorted(p for p in glob.glob(os.path.join("hetplace", "_core", "_*.py")) if _single_source(p))

extensions = [
    Extension(
        "hetplace._core." + os.path.splitext(os.path.basename(path))[0],
        [path],
        include_dirs=[numpy.get_include()],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for path in sources
]

setup(ext_modules=cythonize(extensions, compiler_directives=directives))
