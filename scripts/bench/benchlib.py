"""Shared by the torch_*.py benchmark scripts: the kernel set OpenBLAS (the BLAS Debian's
python3-torch links) chose, and torch.mm's throughput measured the way cmd/bench measures
toolret's (four chained n x n products per call, best of 3 rounds of 0.5 s)."""
import ctypes
import time

import torch


def blas_core():
    """OpenBLAS's core name, e.g. SkylakeX or Prescott; "unknown" without OpenBLAS."""
    for name in ("libblas.so.3", "libopenblas.so.0"):
        try:
            f = ctypes.CDLL(name).openblas_get_corename
        except (OSError, AttributeError):
            continue
        f.restype = ctypes.c_char_p
        return f().decode()
    return "unknown"


def mm_peak(n=1024, dtype=torch.float32, chain=4):
    """GFLOP/s of torch.mm on n x n matrices of dtype at the current thread count."""
    a = torch.randn(n, n).to(dtype)
    b = (torch.randn(n, n) / n).to(dtype)  # keeps the chained products' magnitude ~1
    torch.mm(a, b)
    best = 0.0
    for _ in range(3):
        calls, t0 = 0, time.perf_counter()
        while calls == 0 or time.perf_counter() - t0 < 0.5:
            x = a
            for _ in range(chain):
                x = torch.mm(x, b)
            calls += 1
        best = max(best, calls * chain * 2 * n ** 3 / (time.perf_counter() - t0) / 1e9)
    return best
