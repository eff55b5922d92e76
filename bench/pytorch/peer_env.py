"""The peer's own environment: OpenBLAS without the machine-wide handicap.

The development and CI machines set OPENBLAS_CORETYPE=Haswell and OPENBLAS_L2_SIZE=512
(a workaround for older OpenBLAS builds on newer CPUs). OpenBLAS reads both when it is
loaded, and PyTorch 1.13's torch.mm calls OpenBLAS, so a peer started with them runs
AVX2 kernels on CPUs with AVX-512 (1.8x slower on the suite's transformer). Every
script that times PyTorch imports this module first, before torch and numpy:

    import peer_env  # noqa: F401  (before torch: OpenBLAS reads its environment on load)
    import torch
    ...
    print(peer_env.describe())  # "OpenBLAS core: Cooperlake (OPENBLAS_CORETYPE=Haswell ...)"

Importing it removes both variables from this process's environment (and so from the
processes it starts); tests, CI and weft's own processes keep them. The C++ side is
runtime/cpu/openblas_peer.h (the suite starts run.py without them too). Standard library
only.
"""

import ctypes
import os

# The variables removed, in the order runtime/cpu/openblas_peer.h lists them.
HANDICAP = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")

# OpenBLAS's query, under the names its builds export it with (plain, 64-bit-integer
# openblas64, and the scipy-openblas wheels' prefixed one).
_CORENAME_SYMBOLS = ("openblas_get_corename", "openblas_get_corename64_",
                     "scipy_openblas_get_corename64_")


def _mapped_openblas():
    """The paths of the OpenBLAS libraries mapped into this process ("openblas" in the
    path: Debian's openblas-pthread/libblas.so.3, libopenblasp-r0.3.21.so, openblas64)."""
    paths = []
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split(None, 5)
            if len(fields) == 6:
                path = fields[5].strip()
                if "openblas" in path.lower() and path not in paths:
                    paths.append(path)
    return paths


def _remove_handicap():
    loaded = _mapped_openblas()
    removed = {v: os.environ.pop(v) for v in HANDICAP if v in os.environ}
    if removed and loaded:
        raise ImportError(
            "peer_env must be imported before torch and numpy: OpenBLAS (%s) is already "
            "loaded and has read %s" % (loaded[0], ", ".join("%s=%s" % kv for kv in removed.items())))
    return removed


# What this process's environment held before the import: {"OPENBLAS_CORETYPE": "Haswell", ...}.
REMOVED = _remove_handicap()


def openblas_corename():
    """The kernel OpenBLAS chose in this process ("Cooperlake", "SkylakeX", "Haswell"),
    or None when no OpenBLAS is loaded (import torch first)."""
    for path in _mapped_openblas():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for symbol in _CORENAME_SYMBOLS:
            fn = getattr(lib, symbol, None)
            if fn is not None:
                fn.restype = ctypes.c_char_p
                fn.argtypes = []
                name = fn()
                return name.decode().strip() if name else None
    return None


def describe():
    """One line for a benchmark's output: the kernel OpenBLAS runs and what was removed."""
    core = openblas_corename()
    removed = (" (%s removed from this process's environment)" %
               ", ".join("%s=%s" % kv for kv in REMOVED.items())) if REMOVED else ""
    return "OpenBLAS core: %s%s" % (core or "none (no OpenBLAS loaded)", removed)
