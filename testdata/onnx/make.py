#!/usr/bin/env python3
"""Writes the small ONNX models the importer's tests read (run from the repository root with
the `onnx` package: bench/.venv/bin/python testdata/onnx/make.py). The files are committed;
this script says how they were made.

- dense_relu.onnx: y = relu(x @ w + b), x [2, 3], w and b initializers, opset 17, a Gemm-free
  graph of MatMul, Add, Relu with a node attribute-bearing Softmax (axis = -1) at the end.
- external/dense_relu.onnx + external/weights.bin: the same, its initializers in a side file.
- escaping/dense_relu.onnx: the same, but an initializer's external data names a path outside
  the model's folder (../weights.bin, which exists: a copy of external/weights.bin), which the
  importer must refuse.
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def model():
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4) / 10, "w")
    b = numpy_helper.from_array(np.array([0.5, -0.5, 1.0, -1.0], dtype=np.float32), "b")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="matmul"),
        helper.make_node("Add", ["h", "b"], ["a"], name="bias"),
        helper.make_node("Relu", ["a"], ["r"], name="relu"),
        helper.make_node("Softmax", ["r"], ["y"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "dense_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        initializer=[w, b],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tessera-tests"
    )


def main():
    m = model()
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, "dense_relu.onnx"))
    os.makedirs(os.path.join(HERE, "external"), exist_ok=True)
    onnx.save(
        model(),
        os.path.join(HERE, "external", "dense_relu.onnx"),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="weights.bin",
        size_threshold=0,
    )
    escaping = onnx.load(os.path.join(HERE, "external", "dense_relu.onnx"), load_external_data=False)
    for tensor in escaping.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = "../weights.bin"
    with open(os.path.join(HERE, "external", "weights.bin"), "rb") as f:
        weights = f.read()
    with open(os.path.join(HERE, "weights.bin"), "wb") as f:
        f.write(weights)
    os.makedirs(os.path.join(HERE, "escaping"), exist_ok=True)
    onnx.save(escaping, os.path.join(HERE, "escaping", "dense_relu.onnx"))


if __name__ == "__main__":
    main()
