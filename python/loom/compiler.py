"""``loom.compile``, ``loom.tune`` and ``loom.export_c``: the CLI's compile,
tune and export-c (include/loom/loom_compile.h, loom_tools.h) on a model
given as a path, ONNX bytes or an ``onnx.ModelProto``."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import tempfile
from typing import Any, Dict, Iterator, List, Mapping, Optional, Union

import numpy as np

from . import _lib
from ._tensors import DLView, as_numpy
from .errors import CompilerNotFoundError, FileError, InputError, make_error
from .module import Module, PathLike, _threads_option

ModelLike = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Any]


def find_c_compiler() -> Optional[str]:
    """The C compiler Loom builds kernels with, as it picks it ($LOOM_CC,
    else clang, else cc; src/target/build.c), resolved on PATH; None when
    there is none."""
    cc = os.environ.get("LOOM_CC", "").split()
    names = [cc[0]] if cc else ["clang", "cc"]
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


def _require_c_compiler(what: str) -> None:
    if find_c_compiler() is None:
        wanted = f"$LOOM_CC ({os.environ['LOOM_CC']!r})" if os.environ.get("LOOM_CC", "").strip() else "clang or cc"
        raise CompilerNotFoundError(
            f"{what} needs a C compiler to build the kernels: {wanted} is not on PATH. Install one "
            "(Debian: apt-get install clang) or set LOOM_CC. Running a compiled .loom file "
            "(loom.load) needs none.")


@contextlib.contextmanager
def _model_file(model: ModelLike) -> Iterator[str]:
    """A path to the ONNX model: the path given, or a temporary file of the
    bytes / the serialized ModelProto (removed afterwards; messages naming
    it name "<ONNX bytes>" instead: _raise)."""
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise FileError(f"cannot open \"{path}\": " + ("is a directory" if os.path.isdir(path)
                                                             else "no such file"))
        yield path
        return
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
    elif hasattr(model, "SerializeToString"):
        data = model.SerializeToString()
    else:
        raise TypeError(f"model: expected a path, ONNX bytes or an onnx.ModelProto, got {type(model).__name__}")
    if not data:
        raise InputError("model: empty ONNX bytes")
    with tempfile.TemporaryDirectory(prefix="loom-") as d:
        path = os.path.join(d, "model.onnx")
        with open(path, "wb") as f:
            f.write(data)
        yield path


def _raise(status: int, err: Any, onnx_path: str, model: ModelLike) -> None:
    """The LoomError for a failed call on the model at onnx_path."""
    msg = _lib.text(err.value)
    if not isinstance(model, (str, os.PathLike)):
        what = "<ONNX bytes>" if isinstance(model, (bytes, bytearray, memoryview)) else "<onnx.ModelProto>"
        msg = msg.replace(onnx_path, what)
    raise make_error(status, msg)


def _c(s: Optional[str]) -> Optional[bytes]:
    return None if s is None else os.fsencode(s) if isinstance(s, os.PathLike) else str(s).encode()


def _opt_level(opt_level: int) -> int:
    if not isinstance(opt_level, int) or isinstance(opt_level, bool) or not 0 <= opt_level <= 3:
        raise InputError(f"opt_level: expected 0, 1, 2 or 3, got {opt_level!r}")
    return opt_level


def _records(records: Optional[PathLike], must_exist: bool) -> Optional[str]:
    if records is None:
        return None
    path = os.fspath(records)
    if must_exist and not os.path.isfile(path):
        raise FileError(f"records: cannot open \"{path}\": no such file (loom.tune writes one)")
    return path


class _Options:
    """A loom_compile_options and what its pointers point at."""

    def __init__(self, target: Optional[str], target_options: Optional[str], opt_level: int,
                 records: Optional[str], inputs: Optional[Mapping[str, Any]] = None,
                 byoc: Optional[str] = None) -> None:
        self.views: List[DLView] = []
        self.c = _lib.CompileOptions()
        self.c.target = _c(target)
        self.c.target_options = _c(target_options)
        self.c.opt_level = _opt_level(opt_level)
        self.c.records = _c(records)
        self.c.byoc = _c(byoc)
        if inputs:
            values = (_lib.InputValue * len(inputs))()
            for k, (name, value) in enumerate(inputs.items()):
                arr = as_numpy(value, f"inputs[{name!r}]")
                view = DLView(np.ascontiguousarray(arr))
                self.views.append(view)
                values[k].name = str(name).encode()
                values[k].tensor = ctypes.pointer(view.tensor)
            self.values = values
            self.c.inputs = ctypes.cast(values, ctypes.POINTER(_lib.InputValue))
            self.c.num_inputs = len(inputs)


def compile(model: ModelLike, target: str = "host", opt_level: int = 2, records: Optional[PathLike] = None,
            threads: Optional[int] = None, *, target_options: Optional[str] = None,
            inputs: Optional[Mapping[str, Any]] = None, byoc: Optional[str] = None) -> Module:
    """Compiles an ONNX model (a path, the file's bytes or an
    ``onnx.ModelProto``) into a loaded :class:`Module`, as ``loom compile``
    does (``m.save(path)`` writes the ``.loom`` file).

    target: "host"/"x86_64" (this machine), "x86_64-sse2", "x86_64-avx2",
    "x86_64-avx512"; target_options: "key=value,..." overrides (l2=1MiB,
    cores=8...); opt_level 0..3; records: a tuning database from
    ``loom.tune`` (each kernel with a record takes its fastest schedule);
    threads: the Module's thread count (None: $LOOM_NUM_THREADS, else every
    CPU); inputs: {name: array} to specialize the model to (its shapes, and
    values the shapes depend on, as ``loom run MODEL.onnx`` does); byoc:
    external back ends, comma-separated, as ``loom compile --byoc``
    ("cblas", "dnnl" or a plugin's .so path; docs/byoc.md).

    Needs a C compiler ($LOOM_CC, clang or cc): CompilerNotFoundError
    otherwise. Errors name the file, node or option at fault."""
    nthreads = _threads_option(threads)
    if not isinstance(target, str):
        raise InputError(f"target: expected a string such as \"host\" or \"x86_64-avx2\", got {target!r}")
    opts = _Options(target, target_options, opt_level, _records(records, True), inputs, byoc)
    _require_c_compiler("loom.compile")
    lib = _lib.lib()
    with _model_file(model) as onnx_path, tempfile.TemporaryDirectory(prefix="loom-") as d:
        out = os.path.join(d, "model.loom")
        err = _lib.errbuf(16384)
        status = lib.loom_compile_onnx(_c(onnx_path), _c(out), ctypes.byref(opts.c), err, len(err))
        if status:
            _raise(status, err, onnx_path, model)
        # The Module keeps the file open: it is deleted here, saved from there.
        return Module(out, nthreads if nthreads else None, _owned_file=True)


def tune(model: ModelLike, records: PathLike, *, trials: int = 0, time: Optional[float] = None,
         target: str = "host", target_options: Optional[str] = None, opt_level: int = 2,
         threads: Optional[int] = None, seed: int = 0) -> Dict[str, float]:
    """Searches schedules for the model's kernels, as ``loom tune`` does,
    keeping every measurement in ``records`` (an SQLite file, created when
    missing and resumed when there; ``loom.compile(..., records=...)`` uses
    it). trials: candidates to measure in all (0: 64 per kernel task); time:
    seconds to stop after (None: no limit); threads: the thread count to
    tune for. Returns {"measured", "failed", "model_ms_default",
    "model_ms_tuned"} (the last two: the kernels' estimated time per run).
    Needs a C compiler."""
    if not isinstance(trials, int) or isinstance(trials, bool) or trials < 0:
        raise InputError(f"trials: expected an int >= 0 (0: 64 per task), got {trials!r}")
    if time is not None and (not isinstance(time, (int, float)) or isinstance(time, bool) or time <= 0):
        raise InputError(f"time: expected seconds > 0 or None, got {time!r}")
    if not isinstance(seed, int) or seed < 0:
        raise InputError(f"seed: expected an int >= 0, got {seed!r}")
    nthreads = _threads_option(threads)
    opts = _Options(target, target_options, opt_level, None)
    rec = os.fspath(records)
    _require_c_compiler("loom.tune")
    lib = _lib.lib()
    measured, failed = ctypes.c_int(0), ctypes.c_int(0)
    ms_default, ms_tuned = ctypes.c_double(0), ctypes.c_double(0)
    with _model_file(model) as onnx_path:
        err = _lib.errbuf(16384)
        status = lib.loom_tune_onnx(_c(onnx_path), _c(rec), ctypes.byref(opts.c), trials, float(time or 0), nthreads,
                                    seed, ctypes.byref(measured), ctypes.byref(failed), ctypes.byref(ms_default),
                                    ctypes.byref(ms_tuned), err, len(err))
        if status:
            _raise(status, err, onnx_path, model)
    return {"measured": measured.value, "failed": failed.value, "model_ms_default": ms_default.value,
            "model_ms_tuned": ms_tuned.value}


def export_c(model: ModelLike, out_dir: PathLike, *, target: Optional[str] = None,
             target_options: Optional[str] = None, name: Optional[str] = None, records: Optional[PathLike] = None,
             weights: Optional[str] = None, threads: Optional[int] = None, bench: bool = False,
             force: bool = False, inputs: Optional[Mapping[str, Any]] = None) -> str:
    """Writes the model as a dependency-free C project into ``out_dir``, as
    ``loom export-c`` does (docs/export.md): target "generic" (default),
    "host", "x86_64...", "aarch64" or "riscv64"; name: the C prefix
    ("model"); weights "embed" or "file" (None: by size, as the CLI);
    threads: a pthread pool of that many (None: single-threaded); bench:
    also write PREFIX_bench.c; force: replace a non-empty out_dir; inputs:
    {name: array} to specialize the model to, as ``loom export-c --input``
    (each fixes its input's shape; one whose value decides a shape or what
    runs is compiled in and leaves the project's inputs). Returns out_dir.
    Nothing is left there on failure."""
    records = _records(records, True)
    nthreads = _threads_option(threads)
    values = _Options(None, None, 2, None, inputs)  # only its input values
    lib = _lib.lib()
    with _model_file(model) as onnx_path:
        err = _lib.errbuf(16384)
        status = lib.loom_export_c(_c(onnx_path), _c(os.fspath(out_dir)), _c(target), _c(target_options), _c(name),
                                   _c(records), _c(weights), nthreads, bool(bench), bool(force),
                                   values.c.inputs, values.c.num_inputs, err, len(err))
        if status:
            _raise(status, err, onnx_path, model)
    return os.fspath(out_dir)
