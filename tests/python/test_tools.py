"""loom.tune and loom.export_c: the CLI's tune and export-c from Python, on
a generated model; and their errors."""

import os
import re
import subprocess

import numpy as np
import pytest

import loom
from conftest import ort_run, rel_err


def test_tune_then_compile_with_records(onnx_model, tmp_path):
    model = onnx_model("mlp")
    records = tmp_path / "tune.db"
    result = loom.tune(model, records, trials=4, threads=1, seed=1)
    assert set(result) == {"measured", "failed", "model_ms_default", "model_ms_tuned"}
    assert result["measured"] >= 1 and result["failed"] >= 0
    assert 0 < result["model_ms_tuned"] <= result["model_ms_default"]
    assert records.is_file()
    m = loom.compile(model, records=records, threads=1)
    x = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    (ref,) = ort_run(model.SerializeToString(), {"x": x})
    assert rel_err(m(x), ref) <= 1e-4


def test_tune_errors(onnx_model, tmp_path):
    with pytest.raises(loom.InputError, match="trials"):
        loom.tune(onnx_model("mlp"), tmp_path / "t.db", trials=-1)
    with pytest.raises(loom.InputError, match="time"):
        loom.tune(onnx_model("mlp"), tmp_path / "t.db", time=0)
    with pytest.raises(loom.FileError, match="no such file"):
        loom.tune(tmp_path / "none.onnx", tmp_path / "t.db")
    not_db = tmp_path / "not.db"
    not_db.write_text("this is not an SQLite database\n" * 100)
    with pytest.raises(loom.LoomError, match="not.db"):
        loom.tune(onnx_model("mlp"), not_db, trials=1)


def test_export_c(onnx_model, tmp_path):
    out = tmp_path / "proj"
    assert loom.export_c(onnx_model("conv"), out, name="convnet") == str(out)
    files = set(os.listdir(out))
    assert {"convnet.h", "convnet.c", "Makefile", "example_main.c"} <= files
    header = (out / "convnet.h").read_text()
    assert "convnet_run" in header
    # an existing non-empty directory is kept unless force
    with pytest.raises(loom.LoomError, match="force|exists|not empty"):
        loom.export_c(onnx_model("conv"), out, name="convnet")
    loom.export_c(onnx_model("mlp"), out, name="mlpnet", force=True)
    assert "mlpnet.h" in os.listdir(out) and "convnet.h" not in os.listdir(out)
    if loom.find_c_compiler():
        build = subprocess.run(["make", "-C", str(out)], capture_output=True, text=True)
        assert build.returncode == 0, build.stdout + build.stderr


def test_export_c_options(onnx_model, tmp_path):
    # the CLI's --weights file --threads 2 --bench, from Python
    out = tmp_path / "opts"
    loom.export_c(onnx_model("mlp"), out, name="mlpnet", weights="file", threads=2, bench=True)
    files = set(os.listdir(out))
    assert {"mlpnet.weights", "mlpnet_bench.c"} <= files
    assert "mlpnet_context_init" in (out / "mlpnet.h").read_text()
    with pytest.raises(loom.LoomError, match="weights"):
        loom.export_c(onnx_model("mlp"), tmp_path / "bad", weights="nowhere")


def test_export_c_inputs(onnx_model, tmp_path):
    # inputs= as `loom export-c --input`: shape's value is compiled in, x stays
    out = tmp_path / "bound"
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    loom.export_c(onnx_model("reshape_input"), out, name="rs", inputs={"x": x, "shape": np.array([3, 4])})
    header = (out / "rs.h").read_text()
    assert "#define RS_NUM_INPUTS 1\n" in header and '#define RS_INPUT_0_NAME "x"' in header
    assert "#define RS_OUTPUT_0_SHAPE {3, 4}" in header and "*shape;" not in header
    assert re.search(r'compiled in.*\n.*\n \*   "shape"\n', header)
    if loom.find_c_compiler():
        assert subprocess.run(["make", "-C", str(out)], capture_output=True).returncode == 0
        np.save(tmp_path / "x.npy", x)
        r = subprocess.run([str(out / "example_main"), str(tmp_path / "x.npy"), str(tmp_path)], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), x.reshape(3, 4))
    # an input given for its shape only
    loom.export_c(onnx_model("symbolic_batch"), tmp_path / "sym", inputs={"x": np.zeros((5, 8), np.float32)})
    assert "#define MODEL_INPUT_0_SHAPE {5, 8}" in (tmp_path / "sym" / "model.h").read_text()
    with pytest.raises(loom.LoomError, match='"nope"'):
        loom.export_c(onnx_model("reshape_input"), tmp_path / "bad", inputs={"nope": np.array([3, 4])})
    assert not (tmp_path / "bad").exists()


def test_export_errors(onnx_model, tmp_path):
    with pytest.raises(loom.LoomError, match="not-an-identifier|identifier"):
        loom.export_c(onnx_model("mlp"), tmp_path / "p", name="not-an-identifier")
    assert not (tmp_path / "p").exists()
    with pytest.raises(loom.UnsupportedError, match="vax"):
        loom.export_c(onnx_model("mlp"), tmp_path / "q", target="vax")
    assert not (tmp_path / "q").exists()
