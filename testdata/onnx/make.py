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
- conv_net.onnx: a small CNN as PyTorch exports one (NCHW; Conv with padding and bias,
  BatchNormalization, Relu, MaxPool, a depthwise Conv (group 8), a second Conv, GlobalAveragePool, Flatten, Gemm with
  transB, Softmax), seeded random weights (some over 16 elements: they go to the side file),
  batch N symbolic; conv_net_x.npy an input of batch 2 and conv_net_y.npy ONNX Runtime's
  output for it (needs onnxruntime: bench/.venv has it).
- unsupported.onnx: a graph with two ops tessera does not import (a custom-domain op and
  Unique) between supported ones, for the all-at-once error.
- sequences.onnx: a sequence input `xs` (float vectors) with a constant [100] appended and
  concatenated (`y`), the sequence itself (`s`), and whether the optional input `b` holds a
  value (`has`).
- strings.onnx: a string input `words` [3]: whether each is "dog" (`is_dog`), and the words
  in reverse order (`reversed`, strings).
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


def conv_net():
    rng = np.random.default_rng(12)

    def init(name, *shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.3, name)

    inits = [
        init("conv1.weight", 8, 3, 3, 3),
        init("conv1.bias", 8),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "bn.scale"),
        init("bn.bias", 8),
        init("bn.mean", 8),
        numpy_helper.from_array(rng.uniform(0.5, 2.0, 8).astype(np.float32), "bn.var"),
        init("dw.weight", 8, 1, 3, 3),
        init("dw.bias", 8),
        init("conv2.weight", 16, 8, 3, 3),
        init("fc.weight", 10, 16),
        init("fc.bias", 10),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "conv1.weight", "conv1.bias"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn.scale", "bn.bias", "bn.mean", "bn.var"], ["b1"], name="bn", epsilon=1e-5),
        helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "dw.weight", "dw.bias"], ["d1"], name="depthwise", group=8, pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["d1", "conv2.weight"], ["c2"], name="conv2", strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["y"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "conv_net",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 12, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tessera-tests")


def unsupported():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Swizzle", ["r"], ["s"], name="swizzle", domain="com.example"),
        helper.make_node("Unique", ["r"], ["t"], name="unique"),
        helper.make_node("Add", ["s", "t"], ["y"], name="add"),
    ]
    w = numpy_helper.from_array(np.ones((2, 2, 1, 1), dtype=np.float32), "w")
    graph = helper.make_graph(
        nodes,
        "unsupported",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])],
        initializer=[w],
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)],
        producer_name="tessera-tests",
    )


def sequences():
    vectors = helper.make_tensor_sequence_value_info("xs", TensorProto.FLOAT, ["n"])
    optional = helper.make_value_info(
        "b",
        helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [1])),
    )
    t = numpy_helper.from_array(np.array([100], dtype=np.float32), "t")
    nodes = [
        helper.make_node("SequenceInsert", ["xs", "t"], ["s"], name="append"),
        helper.make_node("ConcatFromSequence", ["s"], ["y"], name="concat", axis=0),
        helper.make_node("OptionalHasElement", ["b"], ["has"], name="has"),
    ]
    graph = helper.make_graph(
        nodes,
        "sequences",
        [vectors, optional],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["m"]),
            helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, ["n"]),
            helper.make_tensor_value_info("has", TensorProto.BOOL, []),
        ],
        initializer=[t],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18)], producer_name="tessera-tests"
    )


def strings():
    order = numpy_helper.from_array(np.array([2, 1, 0], dtype=np.int64), "order")
    nodes = [
        helper.make_node("Constant", [], ["key"], name="key", value_string="dog"),
        helper.make_node("Equal", ["words", "key"], ["is_dog"], name="equal"),
        helper.make_node("Gather", ["words", "order"], ["reversed"], name="reverse"),
    ]
    graph = helper.make_graph(
        nodes,
        "strings",
        [helper.make_tensor_value_info("words", TensorProto.STRING, [3])],
        [
            helper.make_tensor_value_info("is_dog", TensorProto.BOOL, [3]),
            helper.make_tensor_value_info("reversed", TensorProto.STRING, [3]),
        ],
        initializer=[order],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 19)], producer_name="tessera-tests"
    )


def main():
    import onnxruntime

    words = strings()
    onnx.checker.check_model(words, full_check=True)
    onnx.save(words, os.path.join(HERE, "strings.onnx"))

    seq = sequences()
    onnx.checker.check_model(seq, full_check=True)
    onnx.save(seq, os.path.join(HERE, "sequences.onnx"))
    net = conv_net()
    onnx.checker.check_model(net)
    onnx.save(net, os.path.join(HERE, "conv_net.onnx"))
    x = np.random.default_rng(5).uniform(-1, 1, (2, 3, 12, 12)).astype(np.float32)
    np.save(os.path.join(HERE, "conv_net_x.npy"), x)
    session = onnxruntime.InferenceSession(net.SerializeToString(), providers=["CPUExecutionProvider"])
    np.save(os.path.join(HERE, "conv_net_y.npy"), session.run(None, {"x": x})[0])
    onnx.save(unsupported(), os.path.join(HERE, "unsupported.onnx"))
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
