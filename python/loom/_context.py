"""The C ``loom_ctx`` behind loom.te, loom.Schedule and loom.build.

A context owns every tensor, expression, function, schedule and module made
in it (they live in its arena until ``loom_ctx_destroy``). Every Python
object wrapping one of those handles holds a reference to its Context, so
the context outlives them all and is destroyed only when the last one is
gone; schedules and modules are released earlier by their own finalizers,
which hold the context too. Nothing can be freed twice: each release is a
``weakref.finalize``, which runs at most once.

The C context is not thread-safe, so every call into it takes the
context's lock (re-entrant: loom_compute calls back into Python, which
builds expressions in the same context)."""

from __future__ import annotations

import ctypes
import threading
import weakref
from typing import Any, Callable, List, Optional

from . import _lib
from .errors import LoomError, OutOfMemoryError, make_error

# loom_dtype (include/loom/loom.h), by value.
F32, F64, I8, I32, I64, U8, BOOL = range(7)
DTYPE_NAMES = ("float32", "float64", "int8", "int32", "int64", "uint8", "bool")
_ALIASES = {"f32": F32, "f64": F64, "i8": I8, "i32": I32, "i64": I64, "u8": U8, "bool_": BOOL}
FLOATS = (F32, F64)
INTS = (I8, I32, I64, U8)


def dtype_code(dtype: Any, arg: str = "dtype") -> int:
    """The loom_dtype of a dtype given as "float32" / "f32" / numpy dtype."""
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
    if name is None:
        try:
            import numpy as np
            name = np.dtype(dtype).name
        except TypeError:
            name = None
    if isinstance(name, str):
        if name in DTYPE_NAMES:
            return DTYPE_NAMES.index(name)
        if name in _ALIASES:
            return _ALIASES[name]
    raise TypeError(f"{arg}: {dtype!r} is not a Loom dtype; expected one of "
                    f"{', '.join(DTYPE_NAMES)}")


class _Param(ctypes.Structure):
    """loom_param (loom.h)."""
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("align", ctypes.c_int),
                ("written", ctypes.c_int)]


def _declare_extra(lib: ctypes.CDLL) -> None:
    # loom_func_param is newer than _lib's table; declared here, once.
    fn = lib.loom_func_param
    if fn.argtypes is None:
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(_Param)]


_local = threading.local()


class Context:
    """A Loom compiler context: where loom.te definitions, schedules and
    built kernels live.

    Most code never names one: loom.te uses the current thread's default
    context. ``with loom.te.Context(num_threads=2):`` makes a fresh one
    current for the definitions inside the block; its memory is released
    when the last tensor, function, schedule or module made in it is gone.
    Objects of different contexts cannot be combined.

    num_threads: threads for parallel loops of built kernels (default
    $LOOM_NUM_THREADS, else all CPUs); cache_dir: where compiled kernels are
    cached (default $LOOM_CACHE_DIR, else ~/.cache/loom); cflags: extra C
    compiler flags for loom.build (e.g. "-Wall -Werror")."""

    def __init__(self, *, num_threads: Optional[int] = None, cache_dir: Optional[str] = None,
                 cflags: Optional[str] = None) -> None:
        self.lib = _lib.lib()
        _declare_extra(self.lib)
        h = self.lib.loom_ctx_create()
        if not h:
            raise OutOfMemoryError("loom_ctx_create: out of memory")
        self.h: int = h
        self.lock = threading.RLock()
        self._default_names: dict = {}
        fin = weakref.finalize(self, self.lib.loom_ctx_destroy, h)
        fin.atexit = False  # at exit the process frees it; objects may still be alive
        if num_threads is not None:
            if isinstance(num_threads, bool) or not isinstance(num_threads, int):
                raise TypeError(f"num_threads: expected an int, got {type(num_threads).__name__}")
            self.check(self.lib.loom_ctx_set_num_threads(h, num_threads))
        if cache_dir is not None:
            self.check(self.lib.loom_ctx_set_cache_dir(h, encode(cache_dir, "cache_dir")))
        if cflags is not None:
            self.check(self.lib.loom_ctx_set_cflags(h, encode(cflags, "cflags")))

    # ---- the current context ----

    def __enter__(self) -> "Context":
        _stack().append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        stack = _stack()
        if stack and stack[-1] is self:
            stack.pop()

    # ---- calls into C ----

    def error(self) -> LoomError:
        """The failure the last call left in the C context, as an exception
        (and the context's error cleared)."""
        msg = _lib.text(self.lib.loom_ctx_error(self.h))
        status = self.lib.loom_ctx_status(self.h)
        self.lib.loom_ctx_clear_error(self.h)
        return make_error(status or 8, msg or "failed without a message")  # 8: LOOM_ERR_INTERNAL

    def check(self, status: int) -> None:
        """Raises the context's error for a non-zero loom_status."""
        if status:
            raise self.error()

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """fn(*args) under the lock; raises the context's error when it
        returns NULL (handles, strings) or a negative count or handle."""
        with self.lock:
            r = fn(*args)
            if r is None or (type(r) is int and r < 0):  # NULL, or -1 for counts and handles
                raise self.error()
            return r

    def call_status(self, fn: Callable[..., int], *args: Any) -> None:
        """fn(*args) under the lock; raises the context's error for a
        non-zero loom_status."""
        with self.lock:
            self.check(fn(*args))

    def text(self, fn: Callable[..., Optional[bytes]], *args: Any) -> str:
        return self.call(fn, *args).decode("utf-8", errors="replace")

    def default_name(self, base: str) -> str:
        """base, then base_1, base_2...: tensor names must be unique in a
        function, so unnamed tensors get distinct names."""
        n = self._default_names.get(base, 0)
        self._default_names[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def release_later(self, owner: Any, free: Callable[[int], None], h: int) -> weakref.finalize:
        """Calls free(h) (under the lock, once) when owner is collected or
        the returned finalizer is called; the finalizer keeps this context
        alive until then."""
        def release(ctx: Context, handle: int) -> None:
            with ctx.lock:
                free(handle)
        fin = weakref.finalize(owner, release, self, h)
        fin.atexit = False
        return fin


def _stack() -> List[Context]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def current_context() -> Context:
    """The innermost ``with Context():`` of this thread, else the thread's
    default context (made on first use). One per thread: a C context must
    not be used by two threads at once."""
    stack = _stack()
    if stack:
        return stack[-1]
    ctx = getattr(_local, "default", None)
    if ctx is None:
        ctx = _local.default = Context()
    return ctx


def encode(s: Any, arg: str) -> bytes:
    if not isinstance(s, str):
        raise TypeError(f"{arg}: expected a str, got {type(s).__name__}")
    if "\0" in s:
        raise ValueError(f"{arg}: contains a NUL character")
    return s.encode()

