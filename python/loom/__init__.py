"""Loom from Python: compile ONNX models and run them on numpy arrays and
DLPack tensors (torch) without copies, tune them, export them as C; define
and schedule kernels with the tensor-expression layer (loom.te).

    import loom, numpy as np
    m = loom.compile("model.onnx")            # or loom.load("model.loom")
    y = m(np.zeros(m.inputs[0].shape, m.inputs[0].dtype))

docs/python.md is the guide."""

from . import errors
from ._tensors import aligned, empty
from .compiler import compile, export_c, find_c_compiler, tune
from .errors import (ClosedError, CompileError, CompilerNotFoundError, FileError, InputError, InternalError,
                     LoomError, OutOfMemoryError, ParseError, RunError, ScheduleError, UnsupportedError)
from .module import Module, TensorSpec, load

__version__ = "0.2.0"  # LOOM_VERSION_STRING (src/runtime/artifact.h); tests/python checks they agree

__all__ = [
    "compile", "load", "Module", "TensorSpec", "tune", "export_c", "empty", "aligned", "find_c_compiler",
    "errors", "LoomError", "InputError", "ParseError", "ScheduleError", "UnsupportedError", "FileError",
    "CompileError", "CompilerNotFoundError", "RunError", "InternalError", "OutOfMemoryError", "ClosedError",
]

# The tensor-expression layer (te.py, schedule.py, kernel.py), imported on
# first use: `loom.te`, `loom.Schedule`, `loom.build`.
_LAZY = {"te": ("te", None), "Schedule": ("schedule", "Schedule"), "build": ("kernel", "build")}


def __getattr__(name: str):  # PEP 562
    if name not in _LAZY:
        raise AttributeError(f"module 'loom' has no attribute {name!r}")
    import importlib

    module_name, attr = _LAZY[name]
    module = importlib.import_module(f".{module_name}", __name__)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value
