"""loom.build: compile loom.te functions (scheduled or not) to native code
and call the kernels on numpy arrays (loom_build / loom_module_run).

    f = loom.build(s)             # a Schedule, a Func, or a list of them
    f(a, b, c)                    # numpy arrays, in the function's parameter order

A kernel checks every argument before it runs: the count, each array's
dtype and shape against the function's parameters (InputError, a
ValueError, naming the parameter), that outputs are writable and share no
memory with other arguments. C-contiguous arrays aligned as the parameter
needs are used in place (outputs are written where they are); others are
copied into aligned scratch arrays and the outputs copied back. Objects
that speak DLPack on the CPU (torch tensors) are viewed without a copy;
an input may also be a list or a scalar (converted to the parameter's
dtype), an output may not."""

from __future__ import annotations

import ctypes
from typing import Any, Dict, List, Sequence, Tuple, Union

import numpy as np

from . import _context
from ._lib import DLTensor
from ._tensors import DLView, aligned_empty, as_numpy
from .errors import ClosedError, InputError
from .schedule import Schedule
from .te import Func, Param

__all__ = ["build", "KernelModule", "Kernel"]


def build(funcs: Union[Schedule, Func, Sequence[Union[Schedule, Func]]]) -> "KernelModule":
    """Lowers the functions (a Schedule stands for its current program),
    generates one C source for all of them, compiles it with the system C
    compiler (cached by content hash, see loom.te.Context) and loads it.
    Function names must be distinct. Raises CompileError (the compiler's
    output in the message) or CompilerNotFoundError."""
    items = list(funcs) if isinstance(funcs, (list, tuple)) else [funcs]
    if not items:
        raise TypeError("build: expected a Schedule, a Func, or a non-empty list of them")
    fs: List[Func] = []
    for i, x in enumerate(items):
        if isinstance(x, Schedule):
            x = x.func
        if not isinstance(x, Func):
            raise TypeError(f"build: item {i} is {type(x).__name__}, expected a loom.Schedule or "
                            "a loom.te.Func")
        fs.append(x)
    ctx = fs[0]._ctx
    for i, f in enumerate(fs):
        if f._ctx is not ctx:
            raise ValueError(f"build: function {i} ({f.name}) belongs to another Context")
    arr = (ctypes.c_void_p * len(fs))(*[f._h for f in fs])
    h = ctx.call(ctx.lib.loom_build, ctx.h, arr, len(fs))
    return KernelModule(ctx, h, fs)


class KernelModule:
    """Built and loaded kernels, one per function. Call it directly when it
    holds one function; m["name"] is each function's Kernel. close()
    unloads it early (otherwise garbage collection does)."""

    def __init__(self, ctx: "_context.Context", h: int, funcs: Sequence[Func]) -> None:
        self._ctx = ctx
        self._h = h
        self._release = ctx.release_later(self, ctx.lib.loom_module_free, h)
        self._kernels: Dict[str, Kernel] = {f.name: Kernel(self, f.name, f.params) for f in funcs}

    def _live(self) -> int:
        if not self._release.alive:
            raise ClosedError("the kernel module was closed")
        return self._h

    def close(self) -> None:
        """Unloads the kernels now; calling them afterwards raises
        ClosedError. Calling close again does nothing."""
        self._release()

    @property
    def names(self) -> List[str]:
        return list(self._kernels)

    @property
    def source(self) -> str:
        """The generated C source of all the kernels."""
        h = self._live()
        return self._ctx.text(self._ctx.lib.loom_module_source, h)

    def __getitem__(self, name: str) -> "Kernel":
        if name not in self._kernels:
            raise KeyError(f"the module has no kernel named {name!r} (it has "
                           f"{', '.join(self._kernels)})")
        return self._kernels[name]

    def __call__(self, *args: Any) -> None:
        if len(self._kernels) != 1:
            raise TypeError(f"the module holds {len(self._kernels)} kernels "
                            f"({', '.join(self._kernels)}); call m[name](...)")
        next(iter(self._kernels.values()))(*args)

    def __repr__(self) -> str:
        state = "" if self._release.alive else " (closed)"
        return f"<loom.KernelModule {', '.join(self._kernels)}{state}>"


def _writable(arr: np.ndarray, x: Any) -> np.ndarray:
    """numpy before 1.25 makes DLPack views read-only (DLPack 0.x cannot say
    whether writing is allowed); torch's .numpy() shares the memory
    writably, so an output tensor is still written in place."""
    t = x.detach() if hasattr(x, "detach") else x
    if (not arr.flags.writeable and callable(getattr(t, "numpy", None))
            and getattr(getattr(t, "device", None), "type", "cpu") == "cpu"):
        return t.numpy()
    return arr


class Kernel:
    """One function of a KernelModule; call it with one array per
    parameter (its params, in order)."""

    def __init__(self, module: KernelModule, name: str, params: Tuple[Param, ...]) -> None:
        self._module = module
        self.name = name
        self.params = params
        self._np = [np.dtype(p.dtype) for p in params]

    def _array(self, i: int, x: Any) -> np.ndarray:
        p = self.params[i]
        what = f"{self.name}: argument {i} ({p.name})"
        if p.written and not isinstance(x, np.ndarray):
            # An output must be memory the caller sees: no np.asarray copy.
            if not hasattr(x, "__dlpack__"):
                raise TypeError(f"{what}: the kernel writes it: expected a numpy array or a "
                                f"DLPack tensor of {p.dtype}{list(p.shape)}, got {type(x).__name__}")
            x = _writable(as_numpy(x, what), x)
        elif isinstance(x, np.ndarray) or hasattr(x, "__dlpack__"):
            x = as_numpy(x, what)
        else:  # a list, a scalar...: converted to the parameter's dtype
            try:
                x = np.asarray(x, dtype=self._np[i])
            except (TypeError, ValueError) as e:
                raise InputError(f"{what}: cannot be a {p.dtype} array ({e})") from None
        if x.dtype != self._np[i]:
            raise InputError(f"{what}: dtype {x.dtype}, expected {p.dtype}")
        if tuple(x.shape) != p.shape:
            raise InputError(f"{what}: shape {list(x.shape)}, expected {list(p.shape)}")
        if p.written and not x.flags.writeable:
            raise InputError(f"{what}: the kernel writes it, but the array is read-only")
        return x

    def __call__(self, *args: Any) -> None:
        """Runs the kernel on args (one per parameter), writing its outputs
        into the output arrays."""
        n = len(self.params)
        if len(args) != n:
            raise TypeError(f"{self.name} takes {n} arrays "
                            f"({', '.join(p.name for p in self.params)}), got {len(args)}")
        arrays = [self._array(i, x) for i, x in enumerate(args)]
        for i, p in enumerate(self.params):
            if not p.written:
                continue
            for j, y in enumerate(arrays):
                if j != i and np.may_share_memory(arrays[i], y):
                    raise InputError(f"{self.name}: argument {i} ({p.name}) shares memory with "
                                     f"argument {j} ({self.params[j].name}); outputs must not "
                                     "alias other arguments")
        # Arrays the kernel cannot take in place run through aligned copies.
        direct: List[np.ndarray] = []
        copies: List[Tuple[np.ndarray, np.ndarray]] = []
        for p, x in zip(self.params, arrays):
            if x.flags.c_contiguous and x.ctypes.data % p.align == 0:
                direct.append(x)
            else:
                tmp = aligned_empty(x.shape, x.dtype)
                np.copyto(tmp, x)
                direct.append(tmp)
                if p.written:
                    copies.append((x, tmp))
        views = [DLView(x) for x in direct]
        ptrs = (ctypes.POINTER(DLTensor) * max(n, 1))(*[ctypes.pointer(v.tensor) for v in views])
        module = self._module
        ctx = module._ctx
        with ctx.lock:
            h = module._live()
            ctx.check(ctx.lib.loom_module_run(h, self.name.encode(), ptrs, n))
        for x, tmp in copies:
            np.copyto(x, tmp)

    def __repr__(self) -> str:
        ps = ", ".join(f"{p.name}: {p.dtype}{list(p.shape)}" for p in self.params)
        return f"<loom.Kernel {self.name}({ps})>"
