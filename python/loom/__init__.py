"""Loom from Python: compile ONNX models and run them on numpy arrays and
DLPack tensors (torch) without copies; define and schedule kernels (loom.te).
docs/python.md has the guide."""
from .errors import LoomError
