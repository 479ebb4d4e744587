"""The kernel set OpenBLAS (the BLAS Debian's python3-torch links) chose: shared by the
torch_*.py benchmark scripts, which print it next to their timings."""
import ctypes


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
