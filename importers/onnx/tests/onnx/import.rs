//! Graphs to modules: outputs as the graph computes them, constants inline or in the side
//! file, shape chains folded, layout transposes cancelled, every unsupported node listed at
//! once, invalid nodes and inputs named, and no input — however corrupt — a panic.

use proptest::prelude::*;
use prost::Message;
use std::collections::BTreeMap;
use tessera::attr::DenseValue;
use tessera::dialect::Registry;
use tessera::exec::interpret::interpret;
use tessera::exec::tensor::Tensor;
use tessera::ir::{Module, OpKind};
use tessera::types::{ElementType, TensorType};
use tessera_onnx::proto::*;
use tessera_onnx::{import, ImportError, ImportOptions, Imported, InputShape};

pub(crate) fn registry() -> Registry {
    Registry::new()
        .with(&tessera_array::ARRAY)
        .with(&tessera_nn::NN)
}

pub(crate) fn options() -> ImportOptions {
    ImportOptions {
        input_shapes: BTreeMap::new(),
        side_file: "model.safetensors".into(),
        source_name: "model.onnx (imported)".into(),
        bound_inputs: BTreeMap::new(),
    }
}

/// A tensor value of `DataType::Float` with `dims` (a negative one symbolic, named `N`).
pub(crate) fn value(name: &str, dims: &[i64]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|&d| Dimension {
            value: Some(if d < 0 {
                DimensionValue::DimParam("N".into())
            } else {
                DimensionValue::DimValue(d)
            }),
            denotation: String::new(),
        })
        .collect();
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            value: Some(Value::TensorType(TensorTypeProto {
                elem_type: DataType::Float as i32,
                shape: Some(TensorShapeProto { dim }),
            })),
            denotation: String::new(),
        }),
        doc_string: String::new(),
    }
}

pub(crate) fn int_attr(name: &str, i: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Int as i32,
        i,
        ..Default::default()
    }
}

fn ints_attr(name: &str, ints: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Ints as i32,
        ints: ints.to_vec(),
        ..Default::default()
    }
}

pub(crate) fn node(
    op: &str,
    inputs: &[&str],
    outputs: &[&str],
    attribute: Vec<AttributeProto>,
) -> NodeProto {
    NodeProto {
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        name: format!("{op}_{}", outputs[0]),
        op_type: op.into(),
        attribute,
        ..Default::default()
    }
}

pub(crate) fn floats(name: &str, dims: &[i64], values: Vec<f32>) -> TensorProto {
    TensorProto {
        dims: dims.to_vec(),
        data_type: DataType::Float as i32,
        float_data: values,
        name: name.into(),
        ..Default::default()
    }
}

pub(crate) fn int64s(name: &str, values: &[i64]) -> TensorProto {
    TensorProto {
        dims: vec![values.len() as i64],
        data_type: DataType::Int64 as i32,
        int64_data: values.to_vec(),
        name: name.into(),
        ..Default::default()
    }
}

pub(crate) fn model(
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
    initializer: Vec<TensorProto>,
) -> ModelProto {
    ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(GraphProto {
            node: nodes,
            name: "test graph".into(),
            initializer,
            input: inputs,
            output: outputs,
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub(crate) fn imported(m: &ModelProto) -> Imported {
    import(m, &options(), &registry()).unwrap_or_else(|e| panic!("{e}"))
}

/// The dialect ops of the module's function, by full name.
fn op_names(module: &Module) -> Vec<String> {
    module.funcs[0]
        .ops
        .iter()
        .filter_map(|op| match op.kind {
            OpKind::Dialect(def) => Some(def.schema().full_name()),
            OpKind::Call(_) => None,
        })
        .collect()
}

/// `y = relu(x · w + b)` with a 3 × 40 `w` (to the side file) and a 40-element `b` whose
/// elements are all equal (a splat).
fn dense_model() -> (ModelProto, Vec<f32>) {
    let w: Vec<f32> = (0..120).map(|i| (i as f32 - 60.0) / 50.0).collect();
    let m = model(
        vec![
            node("MatMul", &["x", "w"], &["h"], vec![]),
            node("Add", &["h", "b"], &["a"], vec![]),
            node("Relu", &["a"], &["y"], vec![]),
        ],
        vec![value("x", &[-1, 3])],
        vec![value("y", &[-1, 40])],
        vec![
            floats("w", &[3, 40], w.clone()),
            floats("b", &[40], vec![0.25; 40]),
        ],
    );
    (m, w)
}

#[test]
fn a_dense_layer_computes_what_the_graph_does() {
    let (m, w) = dense_model();
    let result = imported(&m);
    assert_eq!(result.module.funcs[0].name, "test_graph");
    assert_eq!(result.inputs[0].onnx_name, "x");
    assert_eq!(result.notes.len(), 1, "{:?}", result.notes);
    assert!(
        result.notes[0].contains("dimension 0 ('N') set to 1"),
        "{:?}",
        result.notes
    );
    let x = Tensor::from_f64(
        &TensorType::new(vec![1, 3], ElementType::F32),
        [0.5, -1.0, 2.0],
    );
    let y = interpret(&result.module, 0, std::slice::from_ref(&x)).expect("runs");
    for n in 0..40 {
        let sum: f64 = (0..3)
            .map(|k| x.get_f64(k) * f64::from(w[k * 40 + n]))
            .sum::<f64>()
            + 0.25;
        assert!((y[0].get_f64(n) - sum.max(0.0)).abs() < 1e-5, "y[{n}]");
    }
    // The weights went to the side file; the bias, all equal, is a splat.
    assert!(
        result
            .text
            .contains("external<\"model.safetensors\", \"w\"> : tensor<3x40xf32>"),
        "{}",
        result.text
    );
    assert!(
        result.text.contains("dense<0.25> : tensor<40xf32>"),
        "{}",
        result.text
    );
    let keys: Vec<&str> = result.weights.iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["w"]);
}

#[test]
fn input_shapes_fix_symbolic_dimensions_and_are_checked() {
    let (m, _) = dense_model();
    let mut with_shape = options();
    with_shape
        .input_shapes
        .insert("x".into(), InputShape::Tensor(vec![8, 3]));
    let result = import(&m, &with_shape, &registry()).expect("imports");
    assert!(result.notes.is_empty());
    assert_eq!(result.module.funcs[0].result_types[0].shape, [8, 40]);
    let mut wrong_static = options();
    wrong_static
        .input_shapes
        .insert("x".into(), InputShape::Tensor(vec![8, 4]));
    let error = import(&m, &wrong_static, &registry())
        .err()
        .expect("refused")
        .to_string();
    assert!(
        error.contains("has dimension 1 of 3, but --input-shape gives 4"),
        "{error}"
    );
    let mut unknown = options();
    unknown
        .input_shapes
        .insert("z".into(), InputShape::Tensor(vec![1]));
    let error = import(&m, &unknown, &registry())
        .err()
        .expect("refused")
        .to_string();
    assert!(
        error.contains("'z' is not an input of the graph"),
        "{error}"
    );
}

#[test]
fn every_unsupported_node_is_listed_at_once() {
    let mut custom = node("Foo", &["x"], &["f"], vec![]);
    custom.domain = "com.example".into();
    let m = model(
        vec![
            custom,
            node("Relu", &["f"], &["after_foo"], vec![]),
            node("Unique", &["x"], &["c"], vec![]),
            node("NonZero", &["x"], &["t"], vec![]),
            node("Add", &["after_foo", "c"], &["y"], vec![]),
        ],
        vec![value("x", &[1, 4, 5, 5])],
        vec![value("y", &[1, 4, 5, 5])],
        vec![
            floats("w", &[4, 2, 1, 1], vec![1.0; 8]),
            int64s("pads", &[0, 0, 1, 1, 0, 0, 1, 1]),
        ],
    );
    let error = import(&m, &options(), &registry()).err().expect("refused");
    let ImportError::Unsupported(nodes) = &error else {
        panic!("{error}");
    };
    let listed: Vec<(&str, &str)> = nodes
        .iter()
        .map(|n| (n.node.as_str(), n.domain.as_str()))
        .collect();
    assert_eq!(
        listed,
        [
            ("node 'Foo_f' (Foo)", "com.example"),
            ("node 'Unique_c' (Unique)", "ai.onnx"),
            ("node 'NonZero_t' (NonZero)", "ai.onnx"),
        ],
        "the Relu and Add after them are not listed: {error}"
    );
    assert!(
        error
            .to_string()
            .starts_with("3 nodes of the model cannot be imported:"),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("tessera has no converter for this op"),
        "{error}"
    );
}

#[test]
fn an_invalid_node_is_named() {
    let m = model(
        vec![node("Reshape", &["x", "shape"], &["y"], vec![])],
        vec![value("x", &[2, 3])],
        vec![value("y", &[4])],
        vec![int64s("shape", &[4])],
    );
    let error = import(&m, &options(), &registry())
        .err()
        .expect("refused")
        .to_string();
    assert!(
        error.contains("node 'Reshape_y' (Reshape)") && error.contains("cannot be reshaped to [4]"),
        "{error}"
    );
    let dangling = model(
        vec![node("Relu", &["nowhere"], &["y"], vec![])],
        vec![value("x", &[2])],
        vec![value("y", &[2])],
        vec![],
    );
    let error = import(&dangling, &options(), &registry())
        .err()
        .expect("refused")
        .to_string();
    assert!(
        error.contains("uses 'nowhere', which no earlier node, input or initializer defines"),
        "{error}"
    );
    // A part count that is not the node's output count (the importer fuzzer's 2^40, which
    // once asked for 8 TB of part sizes) is refused.
    let mut split = model(
        vec![node(
            "Split",
            &["x"],
            &["a", "b"],
            vec![int_attr("num_outputs", 1 << 40)],
        )],
        vec![value("x", &[4])],
        vec![value("a", &[2]), value("b", &[2])],
        vec![],
    );
    split.opset_import[0].version = 18;
    let error = import(&split, &options(), &registry())
        .err()
        .expect("refused")
        .to_string();
    assert!(
        error.contains("num_outputs is 1099511627776, but the node has 2 output(s)"),
        "{error}"
    );
}

#[test]
fn shape_chains_fold_and_layout_transposes_cancel() {
    // Flatten as PyTorch exports it: Shape -> Gather(0) -> Unsqueeze -> Concat(-1) -> Reshape,
    // after two convolutions back to back.
    let m = model(
        vec![
            node(
                "Conv",
                &["x", "w1"],
                &["c1"],
                vec![ints_attr("pads", &[1, 1, 1, 1])],
            ),
            node("Conv", &["c1", "w2"], &["c2"], vec![]),
            node("Shape", &["c2"], &["s"], vec![]),
            node("Gather", &["s", "zero"], &["n"], vec![int_attr("axis", 0)]),
            node("Unsqueeze", &["n", "axes"], &["n1"], vec![]),
            node(
                "Concat",
                &["n1", "minus_one"],
                &["target"],
                vec![int_attr("axis", 0)],
            ),
            node("Reshape", &["c2", "target"], &["y"], vec![]),
        ],
        vec![value("x", &[2, 3, 6, 6])],
        vec![value("y", &[2, 5 * 36])],
        vec![
            floats(
                "w1",
                &[4, 3, 3, 3],
                (0..108).map(|i| i as f32 / 100.0).collect(),
            ),
            floats(
                "w2",
                &[5, 4, 1, 1],
                (0..20).map(|i| i as f32 / 10.0).collect(),
            ),
            TensorProto {
                dims: vec![],
                ..int64s("zero", &[0])
            },
            int64s("axes", &[0]),
            int64s("minus_one", &[-1]),
        ],
    );
    let result = imported(&m);
    let ops = op_names(&result.module);
    let count = |name: &str| ops.iter().filter(|o| *o == name).count();
    assert_eq!(count("nn.conv2d"), 2, "{ops:?}");
    assert_eq!(
        count("array.transpose"),
        2,
        "into NHWC once, out once: {ops:?}"
    );
    assert_eq!(count("array.reshape"), 1, "{ops:?}");
    assert_eq!(
        count("array.concat") + count("array.slice"),
        0,
        "folded: {ops:?}"
    );
    assert_eq!(result.module.funcs[0].result_types[0].shape, [2, 180]);
    // The filters were transposed at import time: HWCF constants.
    let filters: Vec<&TensorType> = result.module.funcs[0]
        .ops
        .iter()
        .filter(|op| {
            matches!(
                op.literal,
                Some(DenseValue::External(_) | DenseValue::Elements(_))
            )
        })
        .map(|op| &result.module.funcs[0].value(op.results[0]).ty)
        .collect();
    assert!(
        filters.iter().any(|t| t.shape == [3, 3, 3, 4]),
        "{filters:?}"
    );
}

#[test]
fn transposes_sink_through_what_commutes_with_them() {
    // conv 1x1 -> per-channel scale -> relu -> pad -> conv 1x1 -> softmax over the channels,
    // on NCHW: the ops between the convolutions run channels-last (the softmax with its axis
    // moved), so the only transposes are the input's into NHWC and the result's out of it.
    let w1: Vec<f32> = (0..8).map(|i| (i as f32 - 3.5) / 4.0).collect();
    let scale = vec![1.0, -2.0, 0.5, 3.0];
    let w2: Vec<f32> = (0..12).map(|i| (i as f32 - 6.0) / 8.0).collect();
    let m = model(
        vec![
            node("Conv", &["x", "w1"], &["c1"], vec![]),
            node("Mul", &["c1", "scale"], &["s"], vec![]),
            node("Relu", &["s"], &["r"], vec![]),
            node("Pad", &["r", "pads"], &["p"], vec![]),
            node("Conv", &["p", "w2"], &["c2"], vec![]),
            node("Softmax", &["c2"], &["y"], vec![int_attr("axis", 1)]),
        ],
        vec![value("x", &[1, 2, 3, 3])],
        vec![value("y", &[1, 3, 4, 4])],
        vec![
            floats("w1", &[4, 2, 1, 1], w1.clone()),
            floats("scale", &[4, 1, 1], scale.clone()),
            int64s("pads", &[0, 0, 1, 0, 0, 0, 0, 1]),
            floats("w2", &[3, 4, 1, 1], w2.clone()),
        ],
    );
    let result = imported(&m);
    let ops = op_names(&result.module);
    let transposes: Vec<usize> = (0..ops.len())
        .filter(|&i| ops[i] == "array.transpose")
        .collect();
    let convs: Vec<usize> = (0..ops.len()).filter(|&i| ops[i] == "nn.conv2d").collect();
    assert_eq!(transposes.len(), 2, "{ops:?}");
    assert!(
        transposes[0] < convs[0] && transposes[1] > convs[1],
        "no transpose between the convolutions: {ops:?}"
    );
    let xt = TensorType::new(vec![1, 2, 3, 3], ElementType::F32);
    let x = Tensor::from_f64(&xt, (0..18).map(|i| (i as f64 - 9.0) / 5.0));
    let y = interpret(&result.module, 0, std::slice::from_ref(&x)).expect("runs");
    // The same graph computed directly on NCHW.
    let at = |f: usize, h: usize, w: usize| (f * 4 + h) * 4 + w;
    let mut p = vec![0.0f64; 64];
    for f in 0..4 {
        for h in 0..3 {
            for w in 0..3 {
                let c1: f64 = (0..2)
                    .map(|c| f64::from(w1[f * 2 + c]) * x.get_f64(c * 9 + h * 3 + w))
                    .sum();
                p[at(f, h + 1, w)] = (c1 * f64::from(scale[f])).max(0.0);
            }
        }
    }
    for h in 0..4 {
        for w in 0..4 {
            let logits: Vec<f64> = (0..3)
                .map(|g| {
                    (0..4)
                        .map(|f| f64::from(w2[g * 4 + f]) * p[at(f, h, w)])
                        .sum()
                })
                .collect();
            let total: f64 = logits.iter().map(|l| l.exp()).sum();
            for (g, l) in logits.iter().enumerate() {
                let got = y[0].get_f64(g * 16 + h * 4 + w);
                assert!(
                    (got - l.exp() / total).abs() < 1e-6,
                    "y[0, {g}, {h}, {w}] = {got}"
                );
            }
        }
    }
}

/// The windows of a 3-d pool over an `[N, C, D, H, W]` input, as ONNX's reference walks
/// them: for each output, the flat indices (row-major over the whole input) of the window's
/// positions inside the input, in the window's row-major order.
struct Windows {
    shape: [usize; 5],
    kernel: [usize; 3],
    strides: [usize; 3],
    dilations: [usize; 3],
    begin: [usize; 3],
    out: [usize; 3],
}

impl Windows {
    fn each(&self) -> Vec<Vec<usize>> {
        let [n, c, d, h, w] = self.shape;
        let mut windows = Vec::new();
        for plane in 0..n * c {
            for o in 0..self.out.iter().product::<usize>() {
                let o = [
                    o / (self.out[1] * self.out[2]),
                    o / self.out[2] % self.out[1],
                    o % self.out[2],
                ];
                let mut inside = Vec::new();
                for t in 0..self.kernel.iter().product::<usize>() {
                    let t = [
                        t / (self.kernel[1] * self.kernel[2]),
                        t / self.kernel[2] % self.kernel[1],
                        t % self.kernel[2],
                    ];
                    let at: Vec<Option<usize>> = (0..3)
                        .map(|a| {
                            (o[a] * self.strides[a] + t[a] * self.dilations[a])
                                .checked_sub(self.begin[a])
                                .filter(|&p| p < [d, h, w][a])
                        })
                        .collect();
                    if let [Some(i), Some(j), Some(k)] = at[..] {
                        inside.push(plane * d * h * w + (i * h + j) * w + k);
                    }
                }
                windows.push(inside);
            }
        }
        windows
    }
}

#[test]
fn pools_of_three_dimensions_take_each_windows_maximum_index_and_mean() {
    // Values with ties (the first maximum in the window's order wins), a window dilated in
    // depth, strided, padded unevenly, its last partial window kept by ceil_mode.
    let shape = [1usize, 2, 5, 4, 6];
    let xs: Vec<f32> = (0..240).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
    let geometry = |extra: Vec<AttributeProto>| {
        let mut attrs = vec![
            ints_attr("kernel_shape", &[2, 2, 3]),
            ints_attr("strides", &[1, 2, 2]),
            ints_attr("dilations", &[2, 1, 1]),
            ints_attr("pads", &[1, 1, 1, 0, 0, 0]),
            int_attr("ceil_mode", 1),
        ];
        attrs.extend(extra);
        attrs
    };
    let windows = Windows {
        shape,
        kernel: [2, 2, 3],
        strides: [1, 2, 2],
        dilations: [2, 1, 1],
        begin: [1, 1, 1],
        // Depth: (5 + 1 - 3) / 1 + 1 = 4; height: ceil((4 + 1 - 2) / 2) + 1 = 3;
        // width: ceil((6 + 1 - 3) / 2) + 1 = 3.
        out: [4, 3, 3],
    }
    .each();
    let mut indices_out = value("i", &[1, 2, 4, 3, 3]);
    if let Some(Value::TensorType(t)) = indices_out.r#type.as_mut().and_then(|t| t.value.as_mut()) {
        t.elem_type = DataType::Int64 as i32;
    }
    for storage_order in [0, 1] {
        let m = model(
            vec![
                node(
                    "MaxPool",
                    &["x"],
                    &["y", "i"],
                    geometry(vec![int_attr("storage_order", storage_order)]),
                ),
                node("AveragePool", &["x"], &["a"], geometry(vec![])),
            ],
            vec![value("x", &[1, 2, 5, 4, 6])],
            vec![
                value("y", &[1, 2, 4, 3, 3]),
                indices_out.clone(),
                value("a", &[1, 2, 4, 3, 3]),
            ],
            vec![],
        );
        let result = imported(&m);
        let x = Tensor::from_f64(
            &TensorType::new(shape.iter().map(|&d| d as u64).collect(), ElementType::F32),
            xs.iter().map(|&v| f64::from(v)),
        );
        let outputs = interpret(&result.module, 0, &[x]).expect("runs");
        for (k, window) in windows.iter().enumerate() {
            let first_max = window
                .iter()
                .copied()
                .reduce(|best, i| if xs[i] > xs[best] { i } else { best })
                .expect("every window overlaps the input");
            let mean = window.iter().map(|&i| f64::from(xs[i])).sum::<f64>() / window.len() as f64;
            assert_eq!(outputs[0].get_f64(k), f64::from(xs[first_max]), "max {k}");
            assert!(
                (outputs[2].get_f64(k) - mean).abs() < 1e-5,
                "mean {k}: {} vs {mean} over {window:?}",
                outputs[2].get_f64(k)
            );
            let index = if storage_order == 0 {
                first_max
            } else {
                // The spatial axes flattened column-major: d + D * (h + H * w).
                let (plane, rest) = (first_max / 120, first_max % 120);
                let (d, h, w) = (rest / 24, rest / 6 % 4, rest % 6);
                plane * 120 + d + 5 * (h + 4 * w)
            };
            assert_eq!(
                outputs[1].get_f64(k),
                index as f64,
                "index {k} (storage_order {storage_order})"
            );
        }
    }
}

#[test]
fn three_dimensional_convolutions_match_a_direct_loop() {
    // 2 groups of 2 input channels, 4 filters; depth strided and dilated, padded unevenly.
    let (n, c, d, h, w) = (1usize, 4usize, 5usize, 4usize, 3usize);
    let (m, cg, kd, kh, kw) = (4usize, 2usize, 2usize, 2usize, 2usize);
    let xs: Vec<f32> = (0..n * c * d * h * w)
        .map(|i| ((i * 7) % 13) as f32 - 6.0)
        .collect();
    let ws: Vec<f32> = (0..m * cg * kd * kh * kw)
        .map(|i| ((i * 5) % 11) as f32 / 4.0 - 1.0)
        .collect();
    let (stride, dilation, pads) = ([2usize, 1, 1], [2usize, 1, 1], [1usize, 0, 1, 0, 1, 0]);
    let span = |k: usize, dl: usize| (k - 1) * dl + 1;
    let out = [
        (d + pads[0] + pads[3] - span(kd, dilation[0])) / stride[0] + 1,
        (h + pads[1] + pads[4] - span(kh, dilation[1])) / stride[1] + 1,
        (w + pads[2] + pads[5] - span(kw, dilation[2])) / stride[2] + 1,
    ];
    let m_out = model(
        vec![node(
            "Conv",
            &["x", "w"],
            &["y"],
            vec![
                int_attr("group", 2),
                ints_attr("strides", &stride.map(|v| v as i64)),
                ints_attr("dilations", &dilation.map(|v| v as i64)),
                ints_attr("pads", &pads.map(|v| v as i64)),
            ],
        )],
        vec![value("x", &[1, 4, 5, 4, 3])],
        vec![value(
            "y",
            &[1, 4, out[0] as i64, out[1] as i64, out[2] as i64],
        )],
        vec![floats("w", &[4, 2, 2, 2, 2], ws.clone())],
    );
    let result = imported(&m_out);
    let x = Tensor::from_f64(
        &TensorType::new(vec![1, 4, 5, 4, 3], ElementType::F32),
        xs.iter().map(|&v| f64::from(v)),
    );
    let y = interpret(&result.module, 0, &[x]).expect("runs");
    let mut k = 0;
    for f in 0..m {
        let group = f / (m / 2);
        for (od, oh, ow) in (0..out[0])
            .flat_map(|a| (0..out[1]).flat_map(move |b| (0..out[2]).map(move |c| (a, b, c))))
        {
            let mut sum = 0.0f64;
            for (ci, td, th, tw) in (0..cg).flat_map(|ci| {
                (0..kd).flat_map(move |a| {
                    (0..kh).flat_map(move |b| (0..kw).map(move |c| (ci, a, b, c)))
                })
            }) {
                let at = |o: usize, t: usize, axis: usize, size: usize| {
                    (o * stride[axis] + t * dilation[axis])
                        .checked_sub(pads[axis])
                        .filter(|&p| p < size)
                };
                if let (Some(pd), Some(ph), Some(pw)) =
                    (at(od, td, 0, d), at(oh, th, 1, h), at(ow, tw, 2, w))
                {
                    let channel = group * cg + ci;
                    let xv = f64::from(xs[(((channel * d) + pd) * h + ph) * w + pw]);
                    let wv = f64::from(ws[(((f * cg + ci) * kd + td) * kh + th) * kw + tw]);
                    sum += xv * wv;
                }
            }
            assert!(
                (y[0].get_f64(k) - sum).abs() < 1e-4,
                "y[{f}, {od}, {oh}, {ow}] = {} not {sum}",
                y[0].get_f64(k)
            );
            k += 1;
        }
    }
    assert_eq!(k, y[0].len());
}

#[test]
fn einsum_ellipses_broadcast_and_repeated_letters_take_diagonals() {
    let equation = |text: &str| AttributeProto {
        name: "equation".into(),
        r#type: AttributeType::String as i32,
        s: text.as_bytes().to_vec(),
        ..Default::default()
    };
    let m = model(
        vec![
            node("Einsum", &["x"], &["d"], vec![equation("...ii ->...i")]),
            node(
                "Einsum",
                &["a", "b"],
                &["p"],
                vec![equation("...ij,...jk->...ik")],
            ),
        ],
        vec![
            value("x", &[2, 3, 3]),
            value("a", &[2, 1, 3, 4]),
            value("b", &[5, 4, 2]),
        ],
        vec![value("d", &[2, 3]), value("p", &[2, 5, 3, 2])],
        vec![],
    );
    let result = imported(&m);
    let numbers =
        |n: usize, k: usize| -> Vec<f64> { (0..n).map(|i| ((i * k) % 7) as f64 - 3.0).collect() };
    let (x, a, b) = (numbers(18, 5), numbers(24, 3), numbers(40, 2));
    let tensor = |shape: &[u64], v: &[f64]| {
        Tensor::from_f64(
            &TensorType::new(shape.to_vec(), ElementType::F32),
            v.iter().copied(),
        )
    };
    let outputs = interpret(
        &result.module,
        0,
        &[
            tensor(&[2, 3, 3], &x),
            tensor(&[2, 1, 3, 4], &a),
            tensor(&[5, 4, 2], &b),
        ],
    )
    .expect("runs");
    // d[n, i] = x[n, i, i].
    for n in 0..2 {
        for i in 0..3 {
            assert_eq!(
                outputs[0].get_f64(n * 3 + i),
                x[n * 9 + i * 3 + i],
                "d[{n}, {i}]"
            );
        }
    }
    // p[n, m, i, k] = sum_j a[n, 0, i, j] b[m, j, k]: a's 1 broadcasts against b's 5.
    for n in 0..2 {
        for m in 0..5 {
            for i in 0..3 {
                for k in 0..2 {
                    let want: f64 = (0..4)
                        .map(|j| a[n * 12 + i * 4 + j] * b[m * 8 + j * 2 + k])
                        .sum();
                    let at = ((n * 5 + m) * 3 + i) * 2 + k;
                    assert_eq!(outputs[1].get_f64(at), want, "p[{n}, {m}, {i}, {k}]");
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Random byte changes to a model with a convolution, pooling and shape chain: each
    /// decodes and imports, or fails with an error; none panics.
    #[test]
    fn corrupt_models_import_or_fail_cleanly(changes in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6)) {
        let m = model(
            vec![
                node("Conv", &["x", "w"], &["c"], vec![ints_attr("strides", &[2, 2])]),
                node("MaxPool", &["c"], &["p"], vec![ints_attr("kernel_shape", &[2, 2])]),
                node("Flatten", &["p"], &["f"], vec![int_attr("axis", 1)]),
                node("Gemm", &["f", "g"], &["y"], vec![int_attr("transB", 1)]),
            ],
            vec![value("x", &[1, 2, 9, 9])],
            vec![value("y", &[1, 3])],
            vec![
                floats("w", &[4, 2, 3, 3], vec![0.5; 72]),
                floats("g", &[3, 16], vec![0.25; 48]),
            ],
        );
        let mut bytes = m.encode_to_vec();
        for (index, byte) in changes {
            let i = index.index(bytes.len());
            bytes[i] = byte;
        }
        if let Ok(decoded) = ModelProto::decode(bytes.as_slice()) {
            let _ = import(&decoded, &options(), &registry());
        }
    }
}

#[test]
fn the_readme_lists_every_imported_op() {
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"),
    )
    .expect("README.md");
    let start = readme.find("Imported op types (").expect("the list");
    let listed: Vec<&str> = readme[start..]
        .split_once("): ")
        .and_then(|(_, rest)| rest.split_once(". "))
        .map(|(list, _)| list.split_whitespace().collect())
        .expect("the list ends with '. '");
    let supported = tessera_onnx::ops::op_types();
    assert_eq!(
        listed, supported,
        "README.md's list of imported ops is out of date"
    );
    let count = format!("Imported op types ({};", supported.len());
    assert!(readme.contains(&count), "README.md should say {count}");
}

/// A tensor value of element type `ty` with static `dims`.
pub(crate) fn typed_value(name: &str, dims: &[i64], ty: DataType) -> ValueInfoProto {
    let mut v = value(name, dims);
    if let Some(Value::TensorType(t)) = v.r#type.as_mut().and_then(|t| t.value.as_mut()) {
        t.elem_type = ty as i32;
    }
    v
}

/// A graph attribute: a body with `nodes`, its inputs and outputs named.
pub(crate) fn body_attr(
    name: &str,
    nodes: Vec<NodeProto>,
    inputs: &[&str],
    outputs: &[&str],
) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Graph as i32,
        g: Some(GraphProto {
            node: nodes,
            name: format!("{name} graph"),
            input: inputs.iter().map(|i| value(i, &[])).collect(),
            output: outputs.iter().map(|o| value(o, &[])).collect(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A rank-0 int64 tensor.
pub(crate) fn int64_scalar(name: &str, v: i64) -> TensorProto {
    TensorProto {
        dims: vec![],
        ..int64s(name, &[v])
    }
}

/// `Loop` with trip count `m` carrying `y` from `x`, adding the outer `w` times the iteration
/// number each time, its sums also scanned out.
fn counting_loop(m: TensorProto) -> ModelProto {
    let body = body_attr(
        "body",
        vec![
            node("Identity", &["cond_in"], &["cond_out"], vec![]),
            node(
                "Cast",
                &["i"],
                &["i_f"],
                vec![int_attr("to", DataType::Float as i64)],
            ),
            node("Mul", &["w", "i_f"], &["step"], vec![]),
            node("Add", &["y_in", "step"], &["y_out"], vec![]),
            node("Identity", &["y_out"], &["scanned"], vec![]),
        ],
        &["i", "cond_in", "y_in"],
        &["cond_out", "y_out", "scanned"],
    );
    model(
        vec![node("Loop", &["m", "", "x"], &["y", "ys"], vec![body])],
        vec![value("x", &[2])],
        vec![value("y", &[2]), value("ys", &[3, 2])],
        vec![m, floats("w", &[2], vec![1.0, 10.0])],
    )
}

#[test]
fn loops_unroll_their_body_once_per_iteration() {
    let result = imported(&counting_loop(int64_scalar("m", 3)));
    let x = Tensor::from_f64(&TensorType::new(vec![2], ElementType::F32), [0.5, -1.0]);
    let out = interpret(&result.module, 0, std::slice::from_ref(&x)).expect("runs");
    // After iterations 0, 1, 2: x + 0w, x + 1w, x + 3w.
    let expected_ys = [0.5, -1.0, 1.5, 9.0, 3.5, 29.0];
    assert_eq!(out[0].ty.shape, [2]);
    assert_eq!((out[0].get_f64(0), out[0].get_f64(1)), (3.5, 29.0));
    assert_eq!(out[1].ty.shape, [3, 2]);
    let ys: Vec<f64> = (0..6).map(|i| out[1].get_f64(i)).collect();
    assert_eq!(ys, expected_ys);

    let error = import(
        &counting_loop(int64_scalar("m", 5000)),
        &options(),
        &registry(),
    )
    .err()
    .expect("too long to unroll");
    assert!(
        error
            .to_string()
            .contains("unrolls loops of at most 4096 iterations"),
        "{error}"
    );
}

#[test]
fn a_loop_needs_its_iterations_known_and_lists_its_bodys_unsupported_nodes() {
    let mut m = counting_loop(int64_scalar("m", 3));
    let graph = m.graph.as_mut().expect("graph");
    graph.initializer.remove(0);
    graph.input.push(typed_value("m", &[], DataType::Int64));
    let error = import(&m, &options(), &registry()).err().expect("refused");
    assert!(
        error.to_string().contains(
            "the trip count is computed from the graph's inputs at run time; tessera needs it \
             known at import time"
        ),
        "{error}"
    );

    let mut m = counting_loop(int64_scalar("m", 3));
    let body = m.graph.as_mut().expect("graph").node[0].attribute[0]
        .g
        .as_mut()
        .expect("body");
    body.node[3].op_type = "Unique".into();
    let error = import(&m, &options(), &registry()).err().expect("refused");
    let ImportError::Unsupported(nodes) = &error else {
        panic!("{error}");
    };
    let listed: Vec<&str> = nodes.iter().map(|n| n.node.as_str()).collect();
    assert_eq!(
        listed,
        ["node 'Add_y_out' (Unique) in the body of node 'Loop_y' (Loop)"],
        "listed once, not once per iteration, and nothing after it: {error}"
    );
}

#[test]
fn scans_walk_their_inputs_either_way_and_stack_along_their_axes() {
    let body = body_attr(
        "body",
        vec![
            node("Add", &["s_in", "x_t"], &["s_out"], vec![]),
            node("Identity", &["s_out"], &["partial"], vec![]),
        ],
        &["s_in", "x_t"],
        &["s_out", "partial"],
    );
    let m = model(
        vec![node(
            "Scan",
            &["s0", "xs"],
            &["s", "partials"],
            vec![
                body,
                int_attr("num_scan_inputs", 1),
                ints_attr("scan_input_directions", &[1]),
                ints_attr("scan_output_axes", &[1]),
            ],
        )],
        vec![value("s0", &[2]), value("xs", &[3, 2])],
        vec![value("s", &[2]), value("partials", &[2, 3])],
        vec![],
    );
    let result = imported(&m);
    let s0 = Tensor::from_f64(&TensorType::new(vec![2], ElementType::F32), [0.0, 100.0]);
    let xs = Tensor::from_f64(
        &TensorType::new(vec![3, 2], ElementType::F32),
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    );
    let out = interpret(&result.module, 0, &[s0, xs]).expect("runs");
    assert_eq!((out[0].get_f64(0), out[0].get_f64(1)), (9.0, 112.0));
    // Rows from the last: [5, 106], [8, 110], [9, 112], stacked along axis 1.
    assert_eq!(out[1].ty.shape, [2, 3]);
    let partials: Vec<f64> = (0..6).map(|i| out[1].get_f64(i)).collect();
    assert_eq!(partials, [5.0, 8.0, 9.0, 106.0, 110.0, 112.0]);
}

#[test]
fn if_inlines_a_constant_branch_and_selects_on_a_run_time_condition() {
    let branch = |name: &str, op: &str, out: &str| {
        body_attr(
            name,
            vec![node(op, &["x", "x"], &[out], vec![])],
            &[],
            &[out],
        )
    };
    let if_model = |cond: Option<TensorProto>| {
        let mut inputs = vec![value("x", &[2])];
        let mut initializer = vec![];
        match cond {
            Some(c) => initializer.push(c),
            None => inputs.push(typed_value("c", &[], DataType::Bool)),
        }
        model(
            vec![node(
                "If",
                &["c"],
                &["y"],
                vec![
                    branch("then_branch", "Add", "sum"),
                    branch("else_branch", "Mul", "product"),
                ],
            )],
            inputs,
            vec![value("y", &[2])],
            initializer,
        )
    };
    let boolean = |v: bool| TensorProto {
        dims: vec![],
        data_type: DataType::Bool as i32,
        int32_data: vec![i32::from(v)],
        name: "c".into(),
        ..Default::default()
    };
    let x = Tensor::from_f64(&TensorType::new(vec![2], ElementType::F32), [3.0, -2.0]);
    let folded = imported(&if_model(Some(boolean(false))));
    assert_eq!(op_names(&folded.module), ["array.mul"], "{}", folded.text);
    let out = interpret(&folded.module, 0, std::slice::from_ref(&x)).expect("runs");
    assert_eq!((out[0].get_f64(0), out[0].get_f64(1)), (9.0, 4.0));

    let selected = imported(&if_model(None));
    for (c, expected) in [(true, (6.0, -4.0)), (false, (9.0, 4.0))] {
        let c = Tensor::from_numbers(
            &TensorType::new(vec![], ElementType::I1),
            [f64::from(u8::from(c))],
        );
        let out = interpret(&selected.module, 0, &[x.clone(), c]).expect("runs");
        assert_eq!((out[0].get_f64(0), out[0].get_f64(1)), expected);
    }
}

#[test]
fn nested_loops_unroll_within_one_budget() {
    // Four loops of 4000 iterations nested: each within the per-loop limit, 2.6e14 in all.
    let mut inner = node("Identity", &["v"], &["v_out"], vec![]);
    let names = ["l0", "l1", "l2", "l3"];
    for (depth, name) in names.iter().enumerate().rev() {
        let input = if depth == 0 { "x" } else { "v" };
        let out = if depth == 0 { "y" } else { "v_out" };
        let body = body_attr("body", vec![inner], &["i", "c", "v"], &["c", "v_out"]);
        inner = node("Loop", &["m", "", input], &[out], vec![body]);
        inner.name = name.to_string();
    }
    let m = model(
        vec![inner],
        vec![value("x", &[2])],
        vec![value("y", &[2])],
        vec![int64_scalar("m", 4000)],
    );
    let error = import(&m, &options(), &registry()).err().expect("refused");
    assert!(
        error
            .to_string()
            .contains("unrolls to more than 1048576 nodes"),
        "{error}"
    );
}
