"""The C library behind the package: ``libloom.so`` (the compiler, the
runtime and the public C API in one shared object: include/loom/loom.h,
loom_compile.h, loom_runtime.h, loom_tools.h), loaded once through ctypes with
every function's argument and result types declared here.

Where it is looked for, first match wins:

1. ``$LOOM_LIBRARY_DIR`` (a directory holding ``libloom.so``);
2. the package directory (an installed wheel: ``loom/libloom.so``, with
   ``loom/include`` for the kernels' headers and ``loom/bin/loom-measure``
   for the tuner);
3. the build tree of the source checkout this file is in (development:
   ``build/python/libloom.so`` after ``cmake --build build --target
   loom_python``).

Everything here is private to the package; ``lib()`` and ``check()`` are the
interface the other modules (module.py, te.py, schedule.py) use."""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Callable, Optional, Union

from .errors import FileError, make_error

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_SOURCE_ROOT = os.path.dirname(os.path.dirname(_PKG_DIR))  # python/loom -> the checkout
LIB_NAME = "libloom.so"

c_void_p = ctypes.c_void_p
c_char_p = ctypes.c_char_p
c_int = ctypes.c_int
c_int32 = ctypes.c_int32
c_int64 = ctypes.c_int64
c_uint64 = ctypes.c_uint64
c_size_t = ctypes.c_size_t
c_double = ctypes.c_double
c_bool = ctypes.c_bool
P = ctypes.POINTER


# ---- DLPack (dlpack/dlpack.h) ----

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int32), ("dtype", DLDataType),
                ("shape", P(c_int64)), ("strides", P(c_int64)), ("byte_offset", c_uint64)]


KDL_CPU = 1

# ---- loom_runtime.h ----

class ModelOptions(ctypes.Structure):
    _fields_ = [("num_threads", c_int32)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("dtype", DLDataType), ("ndim", c_int32), ("shape", P(c_int64)),
                ("dynamic", c_bool)]


class ProfileEntry(ctypes.Structure):
    _fields_ = [("kernel", c_char_p), ("num_nodes", c_int32), ("nodes", P(c_char_p)), ("calls", c_int64),
                ("total_ms", c_double), ("flops", c_uint64), ("backend", c_char_p)]


# ---- loom_compile.h ----

class InputValue(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("tensor", P(DLTensor))]


class CompileOptions(ctypes.Structure):
    _fields_ = [("target", c_char_p), ("target_options", c_char_p), ("opt_level", c_int),
                ("inputs", P(InputValue)), ("num_inputs", c_int), ("records", c_char_p),
                ("dump_before", c_char_p), ("dump_after", c_char_p), ("byoc", c_char_p)]


class PassInfo(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("level", c_char_p), ("condition", c_char_p)]


# loom.h's callback for loom_compute: loom_expr *(*)(loom_ctx *, loom_expr *const *axes, void *user).
COMPUTE_FN = ctypes.CFUNCTYPE(c_void_p, c_void_p, P(c_void_p), c_void_p)

st = c_int  # loom_status
rv = c_int32  # loom_rv

# name: (result type, argument types). One row per public C function.
_PROTOTYPES = {
    # ---- loom.h: context ----
    "loom_ctx_create": (c_void_p, []),
    "loom_ctx_destroy": (None, [c_void_p]),
    "loom_ctx_error": (c_char_p, [c_void_p]),
    "loom_ctx_status": (st, [c_void_p]),
    "loom_ctx_clear_error": (None, [c_void_p]),
    "loom_ctx_set_num_threads": (st, [c_void_p, c_int]),
    "loom_ctx_set_cache_dir": (st, [c_void_p, c_char_p]),
    "loom_ctx_set_include_dir": (st, [c_void_p, c_char_p]),
    "loom_ctx_set_cflags": (st, [c_void_p, c_char_p]),
    "loom_dtype_name": (c_char_p, [c_int]),
    # tensors
    "loom_placeholder": (c_void_p, [c_void_p, c_char_p, c_int, c_int, P(c_int64)]),
    "loom_compute": (c_void_p, [c_void_p, c_char_p, c_int, P(c_int64), COMPUTE_FN, c_void_p]),
    "loom_tensor_ndim": (c_int, [c_void_p]),
    "loom_tensor_dim": (c_int64, [c_void_p, c_void_p, c_int]),
    "loom_tensor_dtype": (c_int, [c_void_p]),
    "loom_tensor_name": (c_char_p, [c_void_p]),
    # expressions
    "loom_int": (c_void_p, [c_void_p, c_int, c_int64]),
    "loom_float": (c_void_p, [c_void_p, c_int, c_double]),
    "loom_index": (c_void_p, [c_void_p, c_int64]),
    "loom_reduce_axis": (c_void_p, [c_void_p, c_char_p, c_int64]),
    "loom_load": (c_void_p, [c_void_p, c_void_p, P(c_void_p), c_int]),
    **{f"loom_{op}": (c_void_p, [c_void_p, c_void_p, c_void_p])
       for op in ("add", "sub", "mul", "div", "mod", "floordiv", "floormod", "min", "max",
                  "eq", "ne", "lt", "le", "gt", "ge", "and", "or")},
    "loom_not": (c_void_p, [c_void_p, c_void_p]),
    "loom_select": (c_void_p, [c_void_p, c_void_p, c_void_p, c_void_p]),
    "loom_cast": (c_void_p, [c_void_p, c_int, c_void_p]),
    "loom_call": (c_void_p, [c_void_p, c_char_p, P(c_void_p), c_int]),
    "loom_sum": (c_void_p, [c_void_p, c_void_p, P(c_void_p), c_int]),
    "loom_max_reduce": (c_void_p, [c_void_p, c_void_p, P(c_void_p), c_int]),
    "loom_min_reduce": (c_void_p, [c_void_p, c_void_p, P(c_void_p), c_int]),
    "loom_reduce_where": (c_void_p, [c_void_p, c_int, c_void_p, P(c_void_p), c_int, c_void_p]),
    "loom_expr_dtype": (c_int, [c_void_p]),
    "loom_expr_text": (c_char_p, [c_void_p, c_void_p]),
    # functions
    "loom_func_create": (c_void_p, [c_void_p, c_char_p, P(c_void_p), c_int]),
    "loom_func_parse": (c_void_p, [c_void_p, c_char_p]),
    "loom_func_text": (c_char_p, [c_void_p, c_void_p]),
    "loom_func_c_source": (c_char_p, [c_void_p, c_void_p]),
    "loom_func_name": (c_char_p, [c_void_p]),
    "loom_func_num_params": (c_int, [c_void_p]),
    # schedules
    "loom_sched_create": (c_void_p, [c_void_p, c_void_p, c_uint64]),
    "loom_sched_free": (None, [c_void_p]),
    "loom_sched_func": (c_void_p, [c_void_p]),
    "loom_sched_trace": (c_char_p, [c_void_p]),
    "loom_sched_apply_trace": (st, [c_void_p, c_char_p]),
    "loom_sched_get_block": (rv, [c_void_p, c_char_p]),
    "loom_sched_get_loops": (c_int, [c_void_p, rv, P(rv), c_int]),
    "loom_sched_split": (st, [c_void_p, rv, P(c_int64), c_int, P(rv)]),
    "loom_sched_fuse": (rv, [c_void_p, P(rv), c_int]),
    "loom_sched_reorder": (st, [c_void_p, P(rv), c_int]),
    "loom_sched_tile": (st, [c_void_p, P(rv), c_int, P(c_int64), c_int, P(rv)]),
    "loom_sched_vectorize": (st, [c_void_p, rv]),
    "loom_sched_parallel": (st, [c_void_p, rv]),
    "loom_sched_unroll": (st, [c_void_p, rv]),
    "loom_sched_compute_at": (st, [c_void_p, rv, rv]),
    "loom_sched_reverse_compute_at": (st, [c_void_p, rv, rv]),
    "loom_sched_compute_inline": (st, [c_void_p, rv]),
    "loom_sched_reverse_compute_inline": (st, [c_void_p, rv]),
    "loom_sched_cache_read": (rv, [c_void_p, rv, c_int, c_int]),
    "loom_sched_cache_write": (rv, [c_void_p, rv, c_int, c_int]),
    "loom_sched_storage_align": (st, [c_void_p, rv, c_int, c_int, c_int, c_int]),
    "loom_sched_decompose_reduction": (rv, [c_void_p, rv, rv]),
    "loom_sched_rfactor": (rv, [c_void_p, rv]),
    "loom_sched_sample_perfect_tile": (st, [c_void_p, rv, c_int, c_int64, P(c_int64)]),
    "loom_sched_sample_categorical": (st, [c_void_p, P(c_int64), P(c_double), c_int, P(c_int64)]),
    # build and run
    "loom_build": (c_void_p, [c_void_p, P(c_void_p), c_int]),
    "loom_module_free": (None, [c_void_p]),
    "loom_module_source": (c_char_p, [c_void_p]),
    "loom_module_run": (st, [c_void_p, c_char_p, P(P(DLTensor)), c_int]),
    # ---- loom_compile.h ----
    "loom_compile_pass_info": (c_int, [c_int, P(PassInfo)]),
    "loom_compile_check_pass_list": (st, [c_char_p, c_char_p, c_size_t]),
    "loom_compile_onnx": (st, [c_char_p, c_char_p, P(CompileOptions), c_char_p, c_size_t]),
    # ---- loom_tools.h ----
    "loom_tune_onnx": (st, [c_char_p, c_char_p, P(CompileOptions), c_int, c_double, c_int, c_uint64,
                            P(c_int), P(c_int), P(c_double), P(c_double), c_char_p, c_size_t]),
    "loom_export_c": (st, [c_char_p, c_char_p, c_char_p, c_char_p, c_char_p, c_char_p, c_char_p, c_int,
                           c_bool, c_bool, P(InputValue), c_int, c_char_p, c_size_t]),
    "loom_peak_gflops_per_core": (c_double, [c_char_p]),
    # ---- loom_runtime.h ----
    "loom_model_load": (st, [c_char_p, P(ModelOptions), P(c_void_p), c_char_p, c_size_t]),
    "loom_model_free": (None, [c_void_p]),
    "loom_model_error": (c_char_p, [c_void_p]),
    "loom_model_num_inputs": (c_int32, [c_void_p]),
    "loom_model_num_outputs": (c_int32, [c_void_p]),
    "loom_model_input_info": (st, [c_void_p, c_int32, P(TensorInfo)]),
    "loom_model_output_info": (st, [c_void_p, c_int32, P(TensorInfo)]),
    "loom_model_input_index": (c_int32, [c_void_p, c_char_p]),
    "loom_model_output_index": (c_int32, [c_void_p, c_char_p]),
    "loom_model_num_threads": (c_int32, [c_void_p]),
    "loom_model_target": (c_char_p, [c_void_p]),
    "loom_model_set_input": (st, [c_void_p, c_int32, P(DLTensor)]),
    "loom_model_set_input_by_name": (st, [c_void_p, c_char_p, P(DLTensor)]),
    "loom_model_bind_input": (st, [c_void_p, c_int32, P(DLTensor)]),
    "loom_model_bind_output": (st, [c_void_p, c_int32, P(DLTensor)]),
    "loom_model_run": (st, [c_void_p]),
    "loom_model_get_output": (st, [c_void_p, c_int32, P(DLTensor)]),
    "loom_model_set_profiling": (None, [c_void_p, c_bool]),
    "loom_model_profile_reset": (None, [c_void_p]),
    "loom_model_profile_count": (c_int32, [c_void_p]),
    "loom_model_profile_entry": (st, [c_void_p, c_int32, P(ProfileEntry)]),
    "loom_runtime_version": (c_char_p, []),
}

_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None
_dir: Optional[str] = None


def _candidates() -> list:
    dirs = []
    env = os.environ.get("LOOM_LIBRARY_DIR")
    if env:
        dirs.append(env)
    dirs.append(_PKG_DIR)
    dirs.append(os.path.join(_SOURCE_ROOT, "build", "python"))
    return dirs


def installed() -> bool:
    """True when the library is the one inside the package (a pip install),
    False for ``$LOOM_LIBRARY_DIR`` or a source checkout's build tree."""
    lib()
    return _dir == _PKG_DIR


def library_dir() -> str:
    """The directory the library was loaded from."""
    lib()
    assert _dir is not None
    return _dir


def _setup_installed_env(pkg: str) -> None:
    """An installed package carries the header generated kernels include
    (loom/loom_kernel.h and DLPack's) and the tuner's measurer; point the
    library at them unless the user already did."""
    inc = os.path.join(pkg, "include")
    if os.path.isfile(os.path.join(inc, "loom", "loom_kernel.h")):
        os.environ.setdefault("LOOM_INCLUDE_DIR", inc)
    measure = os.path.join(pkg, "bin", "loom-measure")
    if os.access(measure, os.X_OK):
        os.environ.setdefault("LOOM_MEASURE", measure)


def lib() -> ctypes.CDLL:
    """The loaded ``libloom.so`` with every prototype declared (loaded on the
    first call, then cached). Raises FileError naming every place searched
    when there is none."""
    global _lib, _dir
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for d in _candidates():
            path = os.path.join(d, LIB_NAME)
            if not os.path.isfile(path):
                tried.append(f"{path} (missing)")
                continue
            try:
                handle = ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{path} ({e})")
                continue
            if not hasattr(handle, "loom_ctx_create") or not hasattr(handle, "loom_model_load"):
                tried.append(f"{path} (not Loom's library)")
                continue
            # A function an older build lacks stays undeclared: using it
            # raises AttributeError naming it.
            for name, (res, args) in _PROTOTYPES.items():
                fn = getattr(handle, name, None)
                if fn is not None:
                    fn.restype = res
                    fn.argtypes = args
            if d == _PKG_DIR:
                _setup_installed_env(d)
            _dir = d
            _lib = handle
            return handle
        raise FileError("cannot load Loom's C library; tried " + "; ".join(tried) +
                        ". Install the package (pip install .) or build it in the checkout: "
                        "cmake --build build --target loom_python")


def text(b: Optional[bytes]) -> str:
    """A C string result as str ('' for NULL)."""
    return b.decode("utf-8", errors="replace") if b else ""


def check(status: int, message: Union[str, Callable[[], str]]) -> None:
    """Raises the LoomError subclass matching a non-zero ``loom_status``
    (errors.error_class) with ``message`` (a string, or a callable giving
    one, e.g. ``lambda: text(lib().loom_ctx_error(ctx))``, evaluated only on
    failure). Does nothing for LOOM_OK."""
    if status == 0:
        return
    msg = message() if callable(message) else message
    raise make_error(status, msg)


def errbuf(size: int = 4096) -> ctypes.Array:
    """A buffer for the C API's (errbuf, errlen) arguments."""
    return ctypes.create_string_buffer(size)
