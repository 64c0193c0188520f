"""Export the model zoo to ONNX (random, seeded weights; batch 1).

usage: /usr/bin/python3 export.py [--opset N] [model ...]   (default: all)
  --opset N  only try opset N and write <name>.opsetN.onnx/.meta.json instead
             (used to compare op lists, e.g. --opset 17 vit_b_16 bert_base_like)

Writes to $LOOM_MODEL_DIR (default ./models):
  <name>.onnx           batch 1, opset 13 (17 if 13 fails), constant folding on
  <name>.input.npy      the fixed random input
  <name>.ref.npy        the PyTorch output for that input (reference)
  <name>.meta.json      opset, sizes, op-type histogram, export time
and prints a markdown summary (sizes + op histograms).

Source: copied unchanged (except this note) from the seeded model-zoo exporter
(/work/shared/models/{export.py,zoo.py} on the build machines) so that the
repository does not depend on that directory; scripts/export-zoo runs it.
"""
import json
import os
import sys
import time
from collections import Counter

import numpy as np
import onnx
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo import MODEL_DIR, MODELS, build, make_input  # noqa: E402


def op_histogram(model):
    c = Counter()

    def walk(g):
        for n in g.node:
            c[n.op_type] += 1
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                for sg in a.graphs:
                    walk(sg)

    walk(model.graph)
    return c


def export_one(name, forced_opset=None):
    os.makedirs(MODEL_DIR, exist_ok=True)
    suffix = f".opset{forced_opset}" if forced_opset else ""
    path = os.path.join(MODEL_DIR, name + suffix + ".onnx")
    torch.set_num_threads(2)
    model = build(name)
    x = make_input(name)
    with torch.no_grad():
        ref = model(x)
    if not forced_opset:
        np.save(os.path.join(MODEL_DIR, name + ".input.npy"), x.numpy())
        np.save(os.path.join(MODEL_DIR, name + ".ref.npy"), ref.numpy())
    errors = {}
    used = None
    t0 = time.time()
    for opset in ([forced_opset] if forced_opset else (13, 17)):
        try:
            # grad mode on during export: keeps nn.TransformerEncoderLayer off
            # its fused inference fast path, so the exported graph is plain ops.
            torch.onnx.export(model, (x,), path, opset_version=opset, do_constant_folding=True,
                              input_names=["input"], output_names=["output"])
            used = opset
            break
        except Exception as e:  # noqa: BLE001
            errors[opset] = f"{type(e).__name__}: {str(e)[:300]}"
    t_export = time.time() - t0
    if used is None:
        raise RuntimeError(f"{name}: export failed: {errors}")
    onnx.checker.check_model(path)
    m = onnx.load(path)
    hist = op_histogram(m)
    n_params = sum(int(np.prod(i.dims)) for i in m.graph.initializer)
    meta = {
        "name": name, "opset": used, "opset_errors": errors, "export_s": round(t_export, 1),
        "bytes": os.path.getsize(path), "params": n_params, "nodes": sum(hist.values()),
        "input_shape": list(x.shape), "input_dtype": str(x.numpy().dtype),
        "output_shape": list(ref.shape), "ops": dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))),
        "torch": torch.__version__, "onnx": onnx.__version__,
    }
    with open(os.path.join(MODEL_DIR, name + suffix + ".meta" + ".json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: opset {used}, {meta['bytes'] / 2**20:.1f} MiB, {meta['nodes']} nodes, "
          f"export {t_export:.1f}s, checker OK", flush=True)
    return meta


def main():
    args = sys.argv[1:]
    forced = None
    if args[:1] == ["--opset"]:
        forced, args = int(args[1]), args[2:]
    for n in args or list(MODELS):
        export_one(n, forced)


if __name__ == "__main__":
    main()
