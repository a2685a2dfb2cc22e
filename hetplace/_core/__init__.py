"""Compiled kernels of hetplace (private).

Kernels assume clean, typed, C-contiguous arrays and never validate: the public
modules (``hetplace.*``) validate every input before calling them.  Numba kernels
live in ``_*_nb.py`` modules (compiled lazily, on first call, with on-disk caching);
Cython kernels in ``_*.pyx`` modules (compiled by ``pip install``).
"""
