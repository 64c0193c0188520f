"""Recurrent ONNX models for the long-sequence tests (tests/cli/test_rnn_long.py)
and the LSTM benchmark (bench/lstm.py): seeded weights, float32."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def _weight(rng, *shape):
    return (rng.standard_normal(shape) * 0.1).astype(np.float32)


def _model(nodes, inputs, output, inits, opset=14):
    graph = helper.make_graph(nodes, "rnn", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info(o, F, None) for o in output], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def lstm_stack(steps, inputs=64, hidden=128, batch=1, layers=2):
    """`layers` bidirectional LSTMs, each one's Y [T, 2, B, H] reshaped to
    [T, B, 2H] for the next: x [T, B, inputs] -> y [T, B, 2*hidden]."""
    rng = np.random.default_rng(0)
    nodes, inits, cur, width = [], [], "x", inputs
    for k in range(layers):
        inits += [numpy_helper.from_array(_weight(rng, 2, 4 * hidden, width), f"w{k}"),
                  numpy_helper.from_array(_weight(rng, 2, 4 * hidden, hidden), f"r{k}"),
                  numpy_helper.from_array(_weight(rng, 2, 8 * hidden), f"b{k}"),
                  numpy_helper.from_array(np.array([steps, batch, 2 * hidden], np.int64), f"shape{k}")]
        nodes += [helper.make_node("LSTM", [cur, f"w{k}", f"r{k}", f"b{k}"], [f"y{k}"], hidden_size=hidden,
                                   direction="bidirectional", name=f"lstm{k}"),
                  helper.make_node("Transpose", [f"y{k}"], [f"t{k}"], perm=[0, 2, 1, 3]),
                  helper.make_node("Reshape", [f"t{k}", f"shape{k}"], [f"o{k}"])]
        cur, width = f"o{k}", 2 * hidden
    return _model(nodes, [("x", F, [steps, batch, inputs])], [cur], inits)


def one_node(op, steps, inputs=16, hidden=32, batch=3, direction="reverse", **attrs):
    """One RNN, GRU or LSTM node with a bias, sequence_lens (a graph input)
    and initial_h; outputs Y and Y_h."""
    rng = np.random.default_rng(1)
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    dirs = 2 if direction == "bidirectional" else 1
    inits = [numpy_helper.from_array(_weight(rng, dirs, gates * hidden, inputs), "w"),
             numpy_helper.from_array(_weight(rng, dirs, gates * hidden, hidden), "r"),
             numpy_helper.from_array(_weight(rng, dirs, 2 * gates * hidden), "b")]
    node = helper.make_node(op, ["x", "w", "r", "b", "lens", "h0"], ["y", "yh"], hidden_size=hidden,
                            direction=direction, name=op.lower(), **attrs)
    return _model([node], [("x", F, [steps, batch, inputs]), ("lens", TensorProto.INT32, [batch]),
                           ("h0", F, [dirs, batch, hidden])], ["y", "yh"], inits)


def one_layer(op, steps, inputs=64, hidden=128, batch=1, direction="forward"):
    """One LSTM or GRU layer without optional inputs past the bias (bench/lstm.py):
    x [T, B, inputs] -> y [T, D, B, hidden]."""
    rng = np.random.default_rng(2)
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    dirs = 2 if direction == "bidirectional" else 1
    inits = [numpy_helper.from_array(_weight(rng, dirs, gates * hidden, inputs), "w"),
             numpy_helper.from_array(_weight(rng, dirs, gates * hidden, hidden), "r"),
             numpy_helper.from_array(_weight(rng, dirs, 2 * gates * hidden), "b")]
    node = helper.make_node(op, ["x", "w", "r", "b"], ["y"], hidden_size=hidden, direction=direction,
                            name=op.lower())
    return _model([node], [("x", F, [steps, batch, inputs])], ["y"], inits)
