"""Loom's runtime (build/libloomrt.so, include/loom/loom_runtime.h) from
Python through ctypes: load an artifact, set its inputs from numpy arrays,
run, read the outputs. bench/models.py uses it to time Loom and ONNX Runtime
in one process, one inference of each in turn."""
import ctypes
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class ModelOptions(ctypes.Structure):
    _fields_ = [("num_threads", ctypes.c_int32)]


# DLPack type codes (kDLInt, kDLUInt, kDLFloat, kDLBool) by numpy kind.
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}
_DTYPES = {(0, 8): np.int8, (0, 16): np.int16, (0, 32): np.int32, (0, 64): np.int64, (1, 8): np.uint8,
           (1, 16): np.uint16, (1, 32): np.uint32, (1, 64): np.uint64, (2, 16): np.float16,
           (2, 32): np.float32, (2, 64): np.float64, (6, 8): np.bool_}


class LoomError(Exception):
    pass


def _lib(path):
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise LoomError(f"cannot load Loom's runtime library {path} ({e}); build it: "
                        "cmake --build build --target loomrt") from None
    lib.loom_model_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(ModelOptions), ctypes.POINTER(ctypes.c_void_p),
                                    ctypes.c_char_p, ctypes.c_size_t]
    lib.loom_model_free.argtypes = [ctypes.c_void_p]
    lib.loom_model_error.argtypes = [ctypes.c_void_p]
    lib.loom_model_error.restype = ctypes.c_char_p
    lib.loom_model_input_index.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.loom_model_num_outputs.argtypes = [ctypes.c_void_p]
    lib.loom_model_set_input.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(DLTensor)]
    lib.loom_model_run.argtypes = [ctypes.c_void_p]
    lib.loom_model_get_output.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(DLTensor)]
    return lib


class Model:
    """A loaded artifact. run() is one inference of the inputs set last."""

    def __init__(self, artifact, threads, lib_path=None):
        self._lib = _lib(lib_path or os.environ.get("LOOM_RT", os.path.join(ROOT, "build", "libloomrt.so")))
        self._m = ctypes.c_void_p()
        err = ctypes.create_string_buffer(1024)
        opt = ModelOptions(threads)
        if self._lib.loom_model_load(artifact.encode(), ctypes.byref(opt), ctypes.byref(self._m), err, len(err)):
            raise LoomError(err.value.decode(errors="replace"))

    def _check(self, status, what):
        if status:
            raise LoomError(f"{what}: {self._lib.loom_model_error(self._m).decode(errors='replace')}")

    def set_input(self, name, array):
        index = self._lib.loom_model_input_index(self._m, name.encode())
        if index < 0:
            raise LoomError(f"the model has no input named {name!r}")
        a = np.ascontiguousarray(array)
        shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
        t = DLTensor(a.ctypes.data, DLDevice(1, 0), a.ndim, DLDataType(_CODES[a.dtype.kind], a.dtype.itemsize * 8, 1),
                     shape, None, 0)
        # The runtime copies the input: a and shape need only outlive the call.
        self._check(self._lib.loom_model_set_input(self._m, index, ctypes.byref(t)), f"input {name}")

    def run(self):
        self._check(self._lib.loom_model_run(self._m), "run")

    def outputs(self):
        """Copies of every output, in order."""
        out = []
        for i in range(self._lib.loom_model_num_outputs(self._m)):
            t = DLTensor()
            self._check(self._lib.loom_model_get_output(self._m, i, ctypes.byref(t)), f"output {i}")
            shape = tuple(t.shape[d] for d in range(t.ndim))
            dtype = np.dtype(_DTYPES[(t.dtype.code, t.dtype.bits)])
            n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            buf = ctypes.string_at(t.data + t.byte_offset, n)
            out.append(np.frombuffer(buf, dtype=dtype).reshape(shape).copy())
        return out

    def close(self):
        if self._m:
            self._lib.loom_model_free(self._m)
            self._m = ctypes.c_void_p()

    def __del__(self):
        self.close()
