"""loom.compile / loom.load / loom.Module: results against ONNX Runtime,
every call form, zero copy (checked by data pointers), copies of what cannot
be read in place, outputs that later runs leave alone, errors, closing, and
several Python threads on one module."""

import os
import threading

import numpy as np
import pytest

import loom
from loom import _lib
from conftest import ort_run, rel_err

TOL = 1e-4


def _rand(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


class PointerSpy:
    """Records the data pointer of every DLTensor the package binds, by
    wrapping the two C functions on the loaded library."""

    def __init__(self, monkeypatch):
        self.inputs, self.outputs = [], []
        lib = _lib.lib()
        for name, sink in (("loom_model_bind_input", self.inputs), ("loom_model_bind_output", self.outputs)):
            real = getattr(lib, name)

            def spy(h, i, t, real=real, sink=sink):
                if t is not None:
                    sink.append(t._obj.data)  # t is ctypes.byref(DLTensor)
                return real(h, i, t)

            monkeypatch.setattr(lib, name, spy)


# ---- results ----

@pytest.mark.parametrize("name", ["mlp", "conv"])
def test_matches_onnxruntime(compiled, onnx_model, name):
    m = compiled(name)
    spec = m.inputs[0]
    for seed in range(3):
        x = _rand(spec.shape, seed)
        (ref,) = ort_run(onnx_model(name).SerializeToString(), {spec.name: x})
        assert rel_err(m(x), ref) <= TOL


def test_byoc_cblas_matches_onnxruntime(onnx_model):
    # the MLP's MatMuls go to OpenBLAS (docs/byoc.md); the profile says so
    m = loom.compile(onnx_model("mlp"), byoc="cblas")
    spec = m.inputs[0]
    x = _rand(spec.shape, 5)
    (ref,) = ort_run(onnx_model("mlp").SerializeToString(), {spec.name: x})
    assert rel_err(m(x), ref) <= TOL
    assert "cblas" in [row["backend"] for row in m.profile(x)]
    with pytest.raises(loom.LoomError, match="nosuchbackend"):
        loom.compile(onnx_model("mlp"), byoc="nosuchbackend")


def test_compile_from_path_bytes_and_proto(onnx_model, tmp_path):
    proto = onnx_model("mlp")
    path = tmp_path / "mlp.onnx"
    path.write_bytes(proto.SerializeToString())
    x = _rand((4, 16), 7)
    results = [loom.compile(src)(x) for src in (str(path), path, proto.SerializeToString(), proto)]
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def test_specs(compiled):
    m = compiled("two_io")
    assert [(s.name, s.shape, s.dtype) for s in m.inputs] == [("a", (2, 3), np.float32), ("b", (2, 3), np.float32)]
    assert [s.name for s in m.outputs] == ["s", "p"]
    assert not m.outputs[0].dynamic
    assert m.threads >= 1 and m.target
    assert "a: float32[2, 3]" in repr(m)


def test_call_forms(compiled):
    m = compiled("two_io")
    a, b = _rand((2, 3), 1), _rand((2, 3), 2)
    want = (a + b, a * b)
    for got in (m(a, b), m(a, b=b), m(b=b, a=a), tuple(m.run({"a": a, "b": b})), tuple(m.run(a, b))):
        assert isinstance(got, tuple) and len(got) == 2
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    assert isinstance(m.run(a, b), list)


def test_int64_and_bool_inputs(compiled, onnx_model):
    m = compiled("gather")
    idx = np.array([4, 0, 2], dtype=np.int64)
    (ref,) = ort_run(onnx_model("gather").SerializeToString(), {"idx": idx})
    np.testing.assert_array_equal(m(idx), ref)
    m = compiled("logical")
    mask = np.array([True, False, True, True, False, False])
    y = m(mask)
    assert y.dtype == np.bool_
    np.testing.assert_array_equal(y, ~mask)


def test_dynamic_output(compiled):
    m = compiled("nonzero")
    assert m.outputs[0].dynamic
    for seed in range(3):
        x = (_rand((3, 4), seed) > 0).astype(np.float32)
        y = m(x)
        np.testing.assert_array_equal(y, np.array(np.nonzero(x), dtype=np.int64))


def test_specialized_to_an_input(onnx_model):
    x = _rand((5, 8), 3)
    m = loom.compile(onnx_model("symbolic_batch"), inputs={"x": x})
    assert m.inputs[0].shape == (5, 8)
    np.testing.assert_allclose(m(x), np.maximum(x * 2, 0), rtol=1e-6)


# ---- zero copy ----

def test_numpy_zero_copy(compiled, monkeypatch):
    m = compiled("mlp")
    spy = PointerSpy(monkeypatch)
    x = loom.empty((4, 16), np.float32)
    x[...] = _rand((4, 16), 5)
    y = m(x)
    assert spy.inputs == [x.ctypes.data], "the aligned contiguous input was not bound in place"
    assert m.last_copied == ()
    assert spy.outputs == [y.ctypes.data], "the output is not the buffer the kernels wrote"
    assert y.ctypes.data % 64 == 0 and y.flags.c_contiguous and y.flags.writeable


def test_torch_zero_copy(compiled, onnx_model, monkeypatch, torch):
    m = compiled("mlp")
    spy = PointerSpy(monkeypatch)
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(0))
    assert x.data_ptr() % 64 == 0, "torch's CPU allocator aligns to 64 bytes"
    y = m(x)
    assert spy.inputs == [x.data_ptr()]
    assert m.last_copied == ()
    (ref,) = ort_run(onnx_model("mlp").SerializeToString(), {"x": x.numpy()})
    assert rel_err(y, ref) <= TOL
    ty = torch.from_dlpack(y)  # outputs into torch without a copy
    assert ty.data_ptr() == y.ctypes.data
    # a tensor that requires grad is detached (same memory), not refused
    w = x.clone().requires_grad_(True)
    assert rel_err(m(w), ref) <= TOL
    assert spy.inputs[-1] == w.data_ptr()


def test_torch_noncontiguous_is_copied(compiled, torch):
    m = compiled("mlp")
    x = torch.randn(16, 4).t()  # a transposed view
    assert not x.is_contiguous()
    np.testing.assert_array_equal(m(x), m(x.contiguous()))
    assert m.last_copied == ()  # the contiguous one was bound
    m(x)
    assert m.last_copied == ("x",)


def _misaligned(shape, seed):
    raw = np.empty(int(np.prod(shape)) * 4 + 128, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64 + 4  # 4 bytes past a 64-byte boundary
    a = raw[start:start + int(np.prod(shape)) * 4].view(np.float32).reshape(shape)
    a[...] = _rand(shape, seed)
    return a


def test_unusable_layouts_are_copied_never_misread(compiled):
    m = compiled("mlp")
    base = _rand((4, 16), 11)
    want = m(loom.aligned(base))
    views = {
        "transposed": np.ascontiguousarray(base.T).T,
        "strided": np.repeat(base, 2, axis=1)[:, ::2],
        "reversed": np.ascontiguousarray(base[::-1])[::-1],
        "fortran": np.asfortranarray(base),
        "misaligned": _misaligned((4, 16), 11),
        "list": base.tolist(),
    }
    for name, v in views.items():
        if name == "list":
            with pytest.raises(loom.InputError, match="float64"):  # lists become float64: never converted
                m(v)
            continue
        np.testing.assert_array_equal(v, base)
        np.testing.assert_array_equal(m(v), want, err_msg=name)
        assert m.last_copied == ("x",), name
    bcast = np.broadcast_to(base[0], (4, 16))
    np.testing.assert_array_equal(m(bcast), m(loom.aligned(np.tile(base[0], (4, 1)))))


def test_outputs_are_not_overwritten_by_later_runs(compiled):
    m = compiled("mlp")
    x1, x2 = _rand((4, 16), 1), _rand((4, 16), 2)
    y1 = m(x1)
    keep = y1.copy()
    y2 = m(x2)
    assert y1.ctypes.data != y2.ctypes.data
    np.testing.assert_array_equal(y1, keep)
    assert not np.array_equal(y1, y2)


def test_input_changed_after_run_changes_nothing(compiled):
    m = compiled("mlp")
    x = loom.aligned(_rand((4, 16), 3))
    y = m(x)
    keep = y.copy()
    x[...] = 0
    np.testing.assert_array_equal(y, keep)


# ---- errors ----

def test_input_errors(compiled):
    m = compiled("two_io")
    a = _rand((2, 3), 1)
    cases = [
        (lambda: m(a.astype(np.float64), a), r'input "a": expected dtype float32, got float64'),
        (lambda: m(a, a.astype(np.int32)), r'input "b": expected dtype float32, got int32'),
        (lambda: m(a.reshape(3, 2), a), r'input "a": expected shape \[2, 3\], got \[3, 2\]'),
        (lambda: m(a.reshape(6), a), r'input "a": expected rank 2 \(shape \[2, 3\]\), got rank 1'),
        (lambda: m(a[None], a), r"got rank 3"),
        (lambda: m(a, c=a), r'no input named "c" \(the model\'s inputs: \'a\', \'b\'\)'),
        (lambda: m(a), r"missing input 'b'"),
        (lambda: m(), r"missing inputs 'a', 'b'"),
        (lambda: m(a, a, a), r"at most 2 positional inputs"),
        (lambda: m(a, a, a=a), r'input "a" given twice'),
        (lambda: m(object(), a), r'input "a": expected a numpy array or a DLPack tensor, got object'),
        (lambda: m(a.astype(">f4"), a), r"expected dtype float32, got >f4"),
    ]
    for call, pattern in cases:
        with pytest.raises(loom.InputError, match=pattern):
            call()
    # InputError is a ValueError too, and the module still works afterwards
    with pytest.raises(ValueError):
        m(a.astype(np.float64), a)
    np.testing.assert_array_equal(m(a, a)[0], a + a)


def test_bad_paths_and_files(tmp_path, onnx_model):
    with pytest.raises(loom.FileError, match="nonexistent.loom"):
        loom.load(tmp_path / "nonexistent.loom")
    with pytest.raises(OSError):
        loom.load(tmp_path / "nonexistent.loom")
    junk = tmp_path / "junk.loom"
    junk.write_bytes(b"not an artifact at all" * 10)
    with pytest.raises(loom.LoomError) as e:
        loom.load(junk)
    assert "junk.loom" in str(e.value) or "magic" in str(e.value)
    with pytest.raises(loom.FileError, match="no such file"):
        loom.compile(tmp_path / "nonexistent.onnx")
    with pytest.raises(loom.ParseError, match=r"^<ONNX bytes>: protobuf"):
        loom.compile(b"\x08\x07garbage that is not a model")
    with pytest.raises(loom.InputError, match="empty ONNX bytes"):
        loom.compile(b"")
    with pytest.raises(TypeError, match="expected a path, ONNX bytes or an onnx.ModelProto"):
        loom.compile(12345)
    with pytest.raises(loom.InputError, match="opt_level"):
        loom.compile(onnx_model("mlp"), opt_level=7)
    with pytest.raises(loom.InputError, match="threads"):
        loom.compile(onnx_model("mlp"), threads=0)
    with pytest.raises(loom.UnsupportedError, match="pdp11"):
        loom.compile(onnx_model("mlp"), target="pdp11")
    with pytest.raises(loom.FileError, match="records"):
        loom.compile(onnx_model("mlp"), records=tmp_path / "none.db")


def test_save_load_and_damage(compiled, tmp_path):
    m = compiled("conv")
    x = _rand((1, 3, 16, 16), 4)
    path = tmp_path / "conv.loom"
    m.save(path)
    m.save(path)  # replaces atomically
    assert [p.name for p in tmp_path.iterdir()] == ["conv.loom"]  # no temporary left behind
    with loom.load(path, threads=1) as m2:
        assert m2.threads == 1
        np.testing.assert_array_equal(m2(x), m(x))
        m2.save(tmp_path / "copy.loom")
    assert (tmp_path / "copy.loom").read_bytes() == path.read_bytes()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad = tmp_path / "damaged.loom"
    bad.write_bytes(bytes(data))
    with pytest.raises(loom.ParseError, match="damaged|CRC|checksum"):
        loom.load(bad)
    with pytest.raises(loom.FileError):
        m.save(tmp_path / "no" / "such" / "dir" / "m.loom")


def test_closed_module(onnx_model):
    m = loom.compile(onnx_model("mlp"))
    x = _rand((4, 16), 1)
    y = m(x)
    m.close()
    m.close()  # twice is fine
    assert m.closed and "closed" in repr(m)
    np.testing.assert_array_equal(y, y.copy())  # outputs outlive the module
    for call in (lambda: m(x), lambda: m.run(x), lambda: m.profile(x), lambda: m.threads,
                 lambda: m.save("/tmp/never.loom")):
        with pytest.raises(loom.ClosedError, match="closed"):
            call()
    with loom.compile(onnx_model("mlp")) as m2:
        m2(x)
    assert m2.closed


def test_missing_c_compiler(onnx_model, compiled, tmp_path, monkeypatch):
    path = tmp_path / "m.loom"
    compiled("mlp").save(path)
    monkeypatch.setenv("LOOM_CC", "loom-test-no-such-compiler")
    assert loom.find_c_compiler() is None
    with pytest.raises(loom.CompilerNotFoundError, match="needs a C compiler.*loom-test-no-such-compiler"):
        loom.compile(onnx_model("mlp"))
    # running a compiled model needs none
    with loom.load(path) as m:
        m(_rand((4, 16), 1))


# ---- threads ----

def test_threads_share_one_module(compiled):
    m = compiled("mlp")
    xs = [_rand((4, 16), 100 + i) for i in range(8)]
    want = [m(x) for x in xs]
    errors = []

    def worker(k):
        try:
            for _ in range(25):
                np.testing.assert_array_equal(m(xs[k]), want[k])
        except Exception as e:  # reported below: a thread's exception would otherwise vanish
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_close_while_other_threads_run(onnx_model):
    m = loom.compile(onnx_model("mlp"))
    x = _rand((4, 16), 1)
    ends, started = [], threading.Barrier(5)

    def worker():
        started.wait()
        for _ in range(100000):  # until the module is closed under it
            try:
                m(x)
            except loom.ClosedError:
                ends.append("closed")
                return
        ends.append("never closed")

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    started.wait()
    m.close()
    for t in threads:
        t.join()
    assert ends == ["closed"] * 4


# ---- profile ----

def test_profile(compiled):
    m = compiled("mlp")
    rows = m.profile(_rand((4, 16), 1), repeat=5)
    assert rows and all(set(r) == {"name", "nodes", "time_ms", "share", "gflops", "peak_percent", "backend"} for r in rows)
    assert {"mm1", "mm2"} <= {n for r in rows for n in r["nodes"]}
    assert all(r["backend"] is None for r in rows)  # all Loom's own kernels
    assert all(r["time_ms"] >= 0 for r in rows)
    assert abs(sum(r["share"] for r in rows) - 100.0) < 1e-6
    rated = [r for r in rows if r["gflops"] is not None]
    assert rated, "the matmul kernels carry their FLOP counts"
    with pytest.raises(loom.InputError, match="repeat"):
        m.profile(_rand((4, 16), 1), repeat=0)
    np.testing.assert_array_equal(m(_rand((4, 16), 1)), m(_rand((4, 16), 1)))  # profiling is off again


def test_version_matches_the_library():
    assert loom.__version__ == _lib.text(_lib.lib().loom_runtime_version())
    assert os.path.isfile(os.path.join(_lib.library_dir(), _lib.LIB_NAME))
