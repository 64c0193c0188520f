"""A compiled model in memory: :class:`Module` (``loom.load``,
``loom.compile``), run on numpy arrays and DLPack tensors.

Zero copy, both ways. An input that is C-contiguous and 64-byte aligned
(torch CPU tensors are; ``loom.empty`` makes such numpy arrays) is bound:
the kernels read its memory in place (``loom_model_bind_input``). Any other
input is copied into the model's own buffer first, never misread. Each run
binds a fresh 64-byte aligned numpy array to every output
(``loom_model_bind_output``), so the kernels write the results straight into
the arrays returned: nothing is copied out, and a later run never touches
the arrays an earlier run returned (they are plain numpy arrays owned by
Python; ``torch.from_dlpack(y)`` shares them with torch).

Threads. A Module runs one inference at a time: calls from several Python
threads are serialized by a lock (the C library releases the GIL, so other
Modules run meanwhile; for parallel inference load one Module per thread).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import tempfile
import threading
from typing import IO, Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _lib
from ._tensors import DLView, aligned_empty, as_numpy, is_zero_copy, numpy_dtype
from .errors import ClosedError, FileError, InputError, make_error

PathLike = Union[str, "os.PathLike[str]"]


class TensorSpec(NamedTuple):
    """A graph input or output: name, shape, numpy dtype. ``dynamic``: an
    output whose extents depend on the data (NonZero...); its shape is the
    upper bound and each run returns the real one."""

    name: str
    shape: Tuple[int, ...]
    dtype: np.dtype
    dynamic: bool = False


def _threads_option(threads: Optional[int]) -> int:
    if threads is None:
        return 0
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise InputError(f"threads: expected None (the default: $LOOM_NUM_THREADS, else every CPU) "
                         f"or an int >= 1, got {threads!r}")
    return threads


class Module:
    """A compiled model (a ``.loom`` artifact) loaded and ready to run.

    ``m(x)`` returns the output (a tuple when the model has several);
    ``m.run(...)`` always returns a list. Inputs go by position (the order
    of ``m.inputs``), by name as keywords, or as one dict of names.
    Close with ``m.close()`` or a ``with`` block; the model is freed then (or
    when the object is collected)."""

    def __init__(self, path: PathLike, threads: Optional[int] = None, *, _owned_file: bool = False) -> None:
        """Loads the artifact at ``path`` (``loom.load`` is the same). A
        FileError when it cannot be read, ParseError when it is damaged,
        UnsupportedError for another Loom version or a CPU lacking the
        features it was built for."""
        self._handle: Optional[int] = None
        self._lock = threading.Lock()
        path = os.fspath(path)
        nthreads = _threads_option(threads)
        lib = _lib.lib()
        # The open file is what save() copies, so saving works after the file
        # was moved or deleted (loom.compile deletes its temporary one).
        try:
            self._file: Optional[IO[bytes]] = open(path, "rb")
        except OSError as e:
            raise FileError(f"cannot open \"{path}\": {e.strerror or e}") from None
        handle = ctypes.c_void_p()
        err = _lib.errbuf()
        opt = _lib.ModelOptions(nthreads)
        status = lib.loom_model_load(path.encode(), ctypes.byref(opt), ctypes.byref(handle), err, len(err))
        if status:
            self._file.close()
            self._file = None
            raise make_error(status, _lib.text(err.value))
        self._lib = lib
        self._handle = handle.value
        self.path: Optional[str] = None if _owned_file else os.path.abspath(path)
        self.inputs: List[TensorSpec] = [self._spec(i, True) for i in range(lib.loom_model_num_inputs(self._handle))]
        self.outputs: List[TensorSpec] = [self._spec(i, False) for i in range(lib.loom_model_num_outputs(self._handle))]
        self._input_index = {s.name: i for i, s in enumerate(self.inputs)}
        self._input_dl = [self._info(i, True).dtype for i in range(len(self.inputs))]
        self._output_dl = [self._info(i, False).dtype for i in range(len(self.outputs))]
        #: Names of the inputs the last run had to copy (not contiguous or not
        #: 64-byte aligned); empty when every input was read in place.
        self.last_copied: Tuple[str, ...] = ()

    # ---- description ----

    def _info(self, index: int, is_input: bool) -> _lib.TensorInfo:
        info = _lib.TensorInfo()
        fn = self._lib.loom_model_input_info if is_input else self._lib.loom_model_output_info
        _lib.check(fn(self._handle, index, ctypes.byref(info)), "tensor index out of range")
        return info

    def _spec(self, index: int, is_input: bool) -> TensorSpec:
        info = self._info(index, is_input)
        name = _lib.text(info.name)
        what = f"{'input' if is_input else 'output'} \"{name}\""
        return TensorSpec(name, tuple(info.shape[d] for d in range(info.ndim)), numpy_dtype(info.dtype, what),
                          bool(info.dynamic))

    @property
    def threads(self) -> int:
        """The threads the kernels' parallel loops use."""
        return int(self._lib.loom_model_num_threads(self._live()))

    @property
    def target(self) -> str:
        """The ISA the kernels were built for (e.g. "x86_64-avx2-fma")."""
        return _lib.text(self._lib.loom_model_target(self._live()))

    @property
    def closed(self) -> bool:
        return self._handle is None

    def __repr__(self) -> str:
        if self._handle is None:
            return "<loom.Module (closed)>"
        ins = ", ".join(f"{s.name}: {s.dtype}{list(s.shape)}" for s in self.inputs)
        outs = ", ".join(f"{s.name}: {s.dtype}{list(s.shape)}" for s in self.outputs)
        return f"<loom.Module ({ins}) -> ({outs}), {self.target}, {self.threads} threads>"

    # ---- running ----

    def _live(self) -> int:
        if self._handle is None:
            raise ClosedError("this loom.Module is closed (close() was called); load the model again")
        return self._handle

    def _error(self, status: int, what: str) -> None:
        if status:
            raise make_error(status, f"{what}: {_lib.text(self._lib.loom_model_error(self._handle))}")

    def _gather(self, args: Sequence[Any], named: Mapping[str, Any]) -> List[Any]:
        """The inputs in model order from positional and named arguments."""
        if len(args) == 1 and isinstance(args[0], Mapping) and not named:
            named, args = args[0], ()
        if len(args) > len(self.inputs):
            raise InputError(f"expected at most {len(self.inputs)} positional inputs "
                             f"({', '.join(s.name for s in self.inputs)}), got {len(args)}")
        values: List[Any] = list(args) + [None] * (len(self.inputs) - len(args))
        given = [True] * len(args) + [False] * (len(self.inputs) - len(args))
        for name, value in named.items():
            i = self._input_index.get(name)
            if i is None:
                raise InputError(f"no input named \"{name}\" (the model's inputs: "
                                 f"{', '.join(repr(s.name) for s in self.inputs)})")
            if given[i]:
                raise InputError(f"input \"{name}\" given twice (by position and by name)")
            values[i], given[i] = value, True
        missing = [s.name for s, g in zip(self.inputs, given) if not g]
        if missing:
            raise InputError(f"missing input{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(repr(n) for n in missing)} (the model's inputs: "
                             f"{', '.join(repr(s.name) for s in self.inputs)})")
        return values

    def _check_input(self, spec: TensorSpec, arr: np.ndarray) -> None:
        if arr.dtype != spec.dtype:
            raise InputError(f"input \"{spec.name}\": expected dtype {spec.dtype}, got {arr.dtype} "
                             f"(Loom never converts: cast it, e.g. .astype(np.{spec.dtype.name}))")
        if arr.ndim != len(spec.shape):
            raise InputError(f"input \"{spec.name}\": expected rank {len(spec.shape)} (shape {list(spec.shape)}), "
                             f"got rank {arr.ndim} (shape {list(arr.shape)})")
        if tuple(arr.shape) != spec.shape:
            raise InputError(f"input \"{spec.name}\": expected shape {list(spec.shape)}, got {list(arr.shape)}")

    def _bind_inputs(self, values: List[Any]) -> List[DLView]:
        """Binds (zero copy) or sets (copy) every input; returns the views,
        which must outlive the run."""
        keep: List[DLView] = []
        copied = []
        for i, (spec, value) in enumerate(zip(self.inputs, values)):
            arr = as_numpy(value, f"input \"{spec.name}\"")
            self._check_input(spec, arr)
            if is_zero_copy(arr):
                view = DLView(arr, self._input_dl[i])
                self._error(self._lib.loom_model_bind_input(self._handle, i, view.ref), f"input \"{spec.name}\"")
            else:
                view = DLView(np.ascontiguousarray(arr), self._input_dl[i])
                self._error(self._lib.loom_model_set_input(self._handle, i, view.ref), f"input \"{spec.name}\"")
                copied.append(spec.name)
            keep.append(view)
        self.last_copied = tuple(copied)
        return keep

    def _run_locked(self, values: List[Any]) -> List[np.ndarray]:
        h = self._live()
        keep: List[DLView] = []
        try:
            keep = self._bind_inputs(values)
            outs = [aligned_empty(s.shape, s.dtype) for s in self.outputs]
            for i, (spec, arr) in enumerate(zip(self.outputs, outs)):
                view = DLView(arr, self._output_dl[i])
                keep.append(view)
                self._error(self._lib.loom_model_bind_output(h, i, view.ref), f"output \"{spec.name}\"")
            self._error(self._lib.loom_model_run(h), "run")
            result = []
            for i, (spec, arr) in enumerate(zip(self.outputs, outs)):
                if spec.dynamic:
                    t = _lib.DLTensor()
                    self._error(self._lib.loom_model_get_output(h, i, ctypes.byref(t)), f"output \"{spec.name}\"")
                    shape = tuple(t.shape[d] for d in range(t.ndim))
                    n = int(np.prod(shape, dtype=np.int64))
                    arr = arr.reshape(-1)[:n].reshape(shape)  # the data is compact for the real shape
                result.append(arr)
            return result
        finally:
            # No pointer into Python memory stays in the model after a run.
            for i in range(len(self.outputs)):
                self._lib.loom_model_bind_output(h, i, None)
            for i in range(len(self.inputs)):
                self._lib.loom_model_bind_input(h, i, None)
            del keep

    def run(self, *inputs: Any, **named: Any) -> List[np.ndarray]:
        """Runs the model once; returns every output, in ``self.outputs``
        order, as numpy arrays the kernels wrote in place (no copy).

        Inputs: numpy arrays, DLPack tensors (torch) or anything
        ``np.asarray`` takes, of exactly the input's dtype and shape (no
        conversion: InputError naming the input and what was expected)."""
        with self._lock:
            values = self._gather(inputs, named)
            return self._run_locked(values)

    def __call__(self, *inputs: Any, **named: Any) -> Union[np.ndarray, Tuple[np.ndarray, ...]]:
        """``run`` returning the output itself when there is one, else a tuple."""
        outs = self.run(*inputs, **named)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def profile(self, *inputs: Any, repeat: int = 10, **named: Any) -> List[Dict[str, Any]]:
        """Runs the model ``repeat`` times with profiling on and returns one
        row per kernel (plan step) in call order: ``name`` (the kernel),
        ``nodes`` (the ONNX nodes fused into it), ``time_ms`` (mean per run),
        ``share`` (percent of the kernels' total time), ``gflops`` and
        ``peak_percent`` (percent of this machine's fp32 peak for the ISA the
        kernels were built for, times the thread count; both None when the
        FLOPs or the clock are unknown), ``backend`` (the external back end
        that generated the kernel, e.g. "cblas", or None for Loom's own).
        ``loom run --profile`` prints the
        same table."""
        if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
            raise InputError(f"repeat: expected an int >= 1, got {repeat!r}")
        with self._lock:
            h = self._live()
            values = self._gather(inputs, named)
            self._lib.loom_model_profile_reset(h)
            self._lib.loom_model_set_profiling(h, True)
            try:
                for _ in range(repeat):
                    self._run_locked(values)
            finally:
                self._lib.loom_model_set_profiling(h, False)
            peak = _lib.lib().loom_peak_gflops_per_core(self._lib.loom_model_target(h)) * max(self.threads, 1)
            rows = []
            entry = _lib.ProfileEntry()
            for i in range(self._lib.loom_model_profile_count(h)):
                _lib.check(self._lib.loom_model_profile_entry(h, i, ctypes.byref(entry)), "profile entry")
                ms = entry.total_ms / entry.calls if entry.calls else 0.0
                gflops = entry.flops / (ms * 1e6) if entry.flops and ms > 0 else None
                rows.append({
                    "name": _lib.text(entry.kernel),
                    "nodes": [_lib.text(entry.nodes[k]) for k in range(entry.num_nodes)],
                    "time_ms": ms,
                    "gflops": gflops,
                    "peak_percent": 100.0 * gflops / peak if gflops is not None and peak > 0 else None,
                    "backend": _lib.text(entry.backend) if entry.backend else None,
                })
            total = sum(r["time_ms"] for r in rows)
            for r in rows:
                r["share"] = 100.0 * r["time_ms"] / total if total > 0 else 0.0
            self._lib.loom_model_profile_reset(h)
            return rows

    # ---- files and lifetime ----

    def save(self, path: PathLike) -> None:
        """Writes the artifact (a ``.loom`` file ``loom.load`` and ``loom run``
        take) to ``path``, atomically: a complete file or none."""
        with self._lock:
            self._live()
            assert self._file is not None
            path = os.fspath(path)
            directory = os.path.dirname(os.path.abspath(path))
            try:
                fd, tmp = tempfile.mkstemp(prefix=".loom-save-", dir=directory)
            except OSError as e:
                raise FileError(f"cannot write \"{path}\": {e.strerror or e}") from None
            try:
                with os.fdopen(fd, "wb") as out:
                    self._file.seek(0)
                    shutil.copyfileobj(self._file, out)
                os.replace(tmp, path)
            except OSError as e:
                os.unlink(tmp)
                raise FileError(f"cannot write \"{path}\": {e.strerror or e}") from None

    def close(self) -> None:
        """Frees the model (its kernels, buffers and threads). Arrays returned
        by earlier runs stay valid (they are Python's). Using the Module
        afterwards raises ClosedError; closing twice is fine."""
        with self._lock:
            if self._handle is not None:
                self._lib.loom_model_free(self._handle)
                self._handle = None
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> "Module":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None:
            try:
                self.close()
            except Exception:  # interpreter shutdown: nothing left to report to
                pass
        elif getattr(self, "_file", None) is not None:
            self._file.close()


def load(path: PathLike, threads: Optional[int] = None) -> Module:
    """Loads a compiled model (a ``.loom`` file from ``loom compile`` or
    ``Module.save``). ``threads``: the kernels' parallel loops (None:
    ``$LOOM_NUM_THREADS``, else every CPU). Needs no C compiler."""
    return Module(path, threads)
