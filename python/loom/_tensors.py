"""Arrays at the boundary between Python and the C library: any input
(numpy array, an object with ``__dlpack__`` such as a torch tensor, a nested
list) as a numpy array viewing the same memory where it can, numpy dtypes
against DLPack's, DLTensor views of numpy arrays, and 64-byte aligned
allocation (the generated kernels' vector code needs that alignment)."""

from __future__ import annotations

import ctypes
from typing import Any, Optional, Tuple

import numpy as np

from . import _lib
from .errors import InputError, UnsupportedError

ALIGNMENT = 64

# DLPack type codes: kDLInt, kDLUInt, kDLFloat, kDLBfloat, bool.
_KDL_INT, _KDL_UINT, _KDL_FLOAT, _KDL_BOOL = 0, 1, 2, 6
_BY_DL = {
    (_KDL_FLOAT, 32): np.dtype(np.float32), (_KDL_FLOAT, 64): np.dtype(np.float64),
    (_KDL_FLOAT, 16): np.dtype(np.float16),
    (_KDL_INT, 8): np.dtype(np.int8), (_KDL_INT, 16): np.dtype(np.int16),
    (_KDL_INT, 32): np.dtype(np.int32), (_KDL_INT, 64): np.dtype(np.int64),
    (_KDL_UINT, 8): np.dtype(np.uint8), (_KDL_UINT, 16): np.dtype(np.uint16),
    (_KDL_UINT, 32): np.dtype(np.uint32), (_KDL_UINT, 64): np.dtype(np.uint64),
    (_KDL_BOOL, 8): np.dtype(np.bool_),
}
_TO_DL = {dt: code_bits for code_bits, dt in _BY_DL.items()}


def numpy_dtype(dl: _lib.DLDataType, what: str) -> np.dtype:
    """The numpy dtype of a DLPack dtype; UnsupportedError naming `what`
    (e.g. 'output "y"') for one numpy lacks (bfloat16, float8...)."""
    dt = _BY_DL.get((dl.code, dl.bits)) if dl.lanes == 1 else None
    if dt is None:
        raise UnsupportedError(f"{what}: DLPack dtype (code {dl.code}, {dl.bits} bits, {dl.lanes} lanes) "
                               "has no numpy dtype")
    return dt


def dl_dtype(dt: np.dtype) -> _lib.DLDataType:
    dt = np.dtype(dt)
    code_bits = _TO_DL.get(dt) if dt.isnative else None
    if code_bits is None:
        raise InputError(f"dtype {dt} has no Loom equivalent")
    return _lib.DLDataType(code_bits[0], code_bits[1], 1)


def as_numpy(x: Any, what: str) -> np.ndarray:
    """x as a numpy array, sharing its memory when x is a numpy array or a
    CPU tensor with ``__dlpack__`` (torch: ``requires_grad`` tensors are
    detached, which shares memory too). Anything else goes through
    ``np.asarray``. InputError naming `what` for what cannot be an array
    here (a GPU tensor, an object dtype)."""
    if isinstance(x, np.ndarray):
        arr = x
    elif hasattr(x, "__dlpack__"):
        if getattr(x, "requires_grad", False) and hasattr(x, "detach"):
            x = x.detach()
        try:
            arr = np.from_dlpack(x)
        except (TypeError, ValueError, BufferError, RuntimeError) as e:
            # numpy older than DLPack's bool code: torch's .numpy() shares memory too.
            numpy_method = getattr(x, "numpy", None)
            device = getattr(x, "device", None)
            if numpy_method is not None and getattr(device, "type", "cpu") == "cpu":
                arr = numpy_method()
            else:
                raise InputError(f"{what}: cannot read this {type(x).__name__} through DLPack: {e} "
                                 "(Loom runs on the CPU: move it there first, e.g. .cpu())") from None
    else:
        try:
            arr = np.asarray(x)
        except (TypeError, ValueError) as e:
            raise InputError(f"{what}: expected a numpy array or a DLPack tensor, got {type(x).__name__} ({e})") from None
    if arr.dtype == object:
        raise InputError(f"{what}: expected a numpy array or a DLPack tensor, got {type(x).__name__} "
                         "(numpy made an object array of it)")
    return arr


def is_zero_copy(arr: np.ndarray) -> bool:
    """Whether the kernels can read arr's memory in place: compact row-major
    and 64-byte aligned (else the runtime copies it)."""
    return arr.flags.c_contiguous and arr.ctypes.data % ALIGNMENT == 0


def aligned_empty(shape: Tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An uninitialized C-contiguous array whose data is 64-byte aligned."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    start = (-raw.ctypes.data) % ALIGNMENT
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def empty(shape: Tuple[int, ...], dtype: Any = np.float32) -> np.ndarray:
    """A 64-byte aligned, C-contiguous numpy array (uninitialized): an input
    Loom reads without a copy."""
    return aligned_empty(tuple(int(d) for d in shape), np.dtype(dtype))


def aligned(arr: Any) -> np.ndarray:
    """arr itself when Loom can read it in place, else an aligned
    C-contiguous copy."""
    a = as_numpy(arr, "loom.aligned")
    if is_zero_copy(a):
        return a
    out = aligned_empty(a.shape, a.dtype)
    out[...] = a
    return out


class DLView:
    """A DLTensor describing a C-contiguous numpy array (and keeping the
    array and the shape buffer alive while it is in use)."""

    def __init__(self, arr: np.ndarray, dtype: Optional[_lib.DLDataType] = None) -> None:
        assert arr.flags.c_contiguous
        self.array = arr
        self.shape = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
        self.tensor = _lib.DLTensor()
        self.tensor.data = arr.ctypes.data
        self.tensor.device = _lib.DLDevice(_lib.KDL_CPU, 0)
        self.tensor.ndim = arr.ndim
        self.tensor.dtype = dtype if dtype is not None else dl_dtype(arr.dtype)
        self.tensor.shape = ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64))
        self.tensor.strides = None
        self.tensor.byte_offset = 0

    @property
    def ref(self) -> Any:
        return ctypes.byref(self.tensor)
