#!/usr/bin/env python3
"""Writes the ONNX backend node tests (onnx.backend.test.case.node, generated offline by the
onnx package) as files, the layout of onnx's own test data:

    OUT/<case>/model.onnx
    OUT/<case>/test_data_set_0/input_<j>.pb, output_<j>.pb   (TensorProto, SequenceProto or
                                                              OptionalProto, by the value's type)
    OUT/<case>/tolerance.txt                                  (rtol atol)

Cases whose inputs or outputs are maps are written with a file `non_tensor` instead of data:
the runner counts them as unsupported.

Usage: python3 scripts/onnx_node_tests.py OUT
"""

import os
import sys

import numpy as np
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case import node


def stored(value, info):
    """`value` as the proto onnx's own test data stores for a value of `info`'s type."""
    if info.type.HasField("sequence_type"):
        return numpy_helper.from_list(value, info.name)
    if info.type.HasField("optional_type"):
        return numpy_helper.from_optional(value, info.name)
    if isinstance(value, TensorProto):
        return value
    return numpy_helper.from_array(np.asarray(value), info.name)


def main() -> None:
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    cases = node.collect_testcases()
    for case in cases:
        folder = os.path.join(out, case.name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        with open(os.path.join(folder, "tolerance.txt"), "w") as f:
            f.write(f"{case.rtol} {case.atol}\n")
        graph = case.model.graph
        values = list(graph.input) + list(graph.output)
        if any(v.type.HasField("map_type") for v in values):
            open(os.path.join(folder, "non_tensor"), "w").close()
            continue
        for i, (inputs, outputs) in enumerate(case.data_sets or []):
            data = os.path.join(folder, f"test_data_set_{i}")
            os.makedirs(data, exist_ok=True)
            for kind, arrays, infos in (("input", inputs, graph.input), ("output", outputs, graph.output)):
                for j, value in enumerate(arrays):
                    with open(os.path.join(data, f"{kind}_{j}.pb"), "wb") as f:
                        f.write(stored(value, infos[j]).SerializeToString())
    print(f"{len(cases)} node test cases in {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
