"""Zoo models (scripts/export-zoo writes them to models/, or
$LOOM_MODELS_DIR) compiled and run from Python against ONNX Runtime and the
PyTorch reference stored beside them. Skipped, with the reason, when the
zoo is not there. By default only the smallest model present (a full
compile of the large ones takes minutes); LOOM_TEST_ZOO=all runs each."""

import glob
import os

import numpy as np
import pytest

import loom
from conftest import ROOT, ort_run, rel_err

ZOO = os.environ.get("LOOM_MODELS_DIR", os.path.join(ROOT, "models"))


def _zoo_models():
    found = sorted(glob.glob(os.path.join(ZOO, "*.onnx")), key=os.path.getsize)
    found = [p for p in found if os.path.isfile(p[:-len(".onnx")] + ".input.npy")]
    if os.environ.get("LOOM_TEST_ZOO") != "all":
        found = found[:1]
    return found or [pytest.param(None, marks=pytest.mark.skip(
        reason=f"no zoo model in {ZOO} (scripts/export-zoo writes them; LOOM_MODELS_DIR points elsewhere)"))]


@pytest.mark.parametrize("path", _zoo_models(), ids=lambda p: os.path.basename(p) if p else "none")
def test_zoo_model_matches_ort_and_torch(path):
    stem = path[:-len(".onnx")]
    x = np.load(stem + ".input.npy")
    m = loom.compile(path)
    y = m.run(x)[0]
    with open(path, "rb") as f:
        (ref_ort,) = ort_run(f.read(), {m.inputs[0].name: x})[:1]
    assert rel_err(y, ref_ort) <= 1e-4
    if os.path.isfile(stem + ".ref.npy"):
        assert rel_err(y, np.load(stem + ".ref.npy")) <= 1e-4
