"""Shared fixtures of the Python package tests (tests/python, run by
scripts/test with the .venv interpreter scripts/setup makes: Debian's
python3 with its numpy, onnx and torch, plus onnxruntime and pytest from
PyPI; docs/python.md, "Tests").

The package under test is the checkout's (python/loom, with the library from
$LOOM_LIBRARY_DIR or build/python) unless LOOM_TEST_INSTALLED=1, which tests
the `pip install`ed one."""

import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.environ.get("LOOM_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(ROOT, "python"))

import loom  # noqa: E402

from onnx_models import MODELS  # noqa: E402


def rel_err(out, ref):
    """max|out - ref| / max(1, max|ref|) in float64 (README's metric)."""
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert out.shape == ref.shape, f"shape {out.shape} != {ref.shape}"
    return float(np.max(np.abs(out - ref), initial=0.0) / max(1.0, float(np.max(np.abs(ref), initial=0.0))))


def ort_run(model_bytes, feeds):
    """The model's outputs from ONNX Runtime, in graph order."""
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (scripts/setup installs it)")
    sess = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


@pytest.fixture(scope="session")
def onnx_model():
    """onnx_model(name) -> the ModelProto of a generated test model
    (onnx_models.py), built once per session."""
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = MODELS[name]()
        return cache[name]

    return get


@pytest.fixture(scope="session")
def compiled(onnx_model):
    """compiled(name) -> a loom.Module of a generated test model, compiled
    once per session (tests that close or break a module compile their own)."""
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = loom.compile(onnx_model(name))
        return cache[name]

    return get


@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="torch is not importable by this interpreter "
                                               "(Debian's python3-torch: scripts/setup installs it)")
