//! Reading the small models of `testdata/onnx` (written by the `onnx` package: make.py says
//! how): their structure, their weights inline and from a side file, and a side file outside
//! the model's folder refused.

use std::path::PathBuf;
use tessera_onnx::proto::{AttributeType, DataType, DimensionValue, Value};
use tessera_onnx::{read_model, ReadError};

fn testdata(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/onnx")
        .join(path)
}

/// The weights `w` (3 x 4, 0.0, 0.1, ... 1.1) as little-endian bytes.
fn w_bytes() -> Vec<u8> {
    (0..12)
        .flat_map(|i| (i as f32 / 10.0).to_le_bytes())
        .collect()
}

#[test]
fn a_model_reads_with_its_graph_nodes_attributes_and_weights() {
    let model = read_model(&testdata("dense_relu.onnx")).expect("the model reads");
    assert_eq!(model.producer_name, "tessera-tests");
    assert_eq!(model.opset_import.len(), 1);
    assert_eq!(model.opset_import[0].domain, "");
    assert_eq!(model.opset_import[0].version, 17);
    let graph = model.graph.expect("a graph");
    assert_eq!(graph.name, "dense_relu");
    let ops: Vec<&str> = graph.node.iter().map(|n| n.op_type.as_str()).collect();
    assert_eq!(ops, ["MatMul", "Add", "Relu", "Softmax"]);
    assert_eq!(graph.node[0].input, ["x", "w"]);
    assert_eq!(graph.node[0].output, ["h"]);
    let axis = &graph.node[3].attribute[0];
    assert_eq!(axis.name, "axis");
    assert_eq!(axis.r#type, AttributeType::Int as i32);
    assert_eq!(axis.i, -1);
    // The input's batch is symbolic, its features static.
    let input = &graph.input[0];
    assert_eq!(input.name, "x");
    let Some(Value::TensorType(tensor)) = input.r#type.as_ref().and_then(|t| t.value.clone())
    else {
        panic!("x is a tensor: {input:?}");
    };
    assert_eq!(tensor.elem_type, DataType::Float as i32);
    let dims: Vec<DimensionValue> = tensor
        .shape
        .expect("a shape")
        .dim
        .into_iter()
        .filter_map(|d| d.value)
        .collect();
    assert_eq!(
        dims,
        [
            DimensionValue::DimParam("N".into()),
            DimensionValue::DimValue(3)
        ]
    );
    let w = &graph.initializer[0];
    assert_eq!((w.name.as_str(), w.dims.as_slice()), ("w", &[3, 4][..]));
    assert_eq!(w.raw_data, w_bytes());
}

#[test]
fn external_weights_are_read_from_the_models_folder() {
    let inline = read_model(&testdata("dense_relu.onnx")).unwrap();
    let external = read_model(&testdata("external/dense_relu.onnx")).expect("the model reads");
    let graph = external.graph.unwrap();
    assert_eq!(graph.initializer[0].raw_data, w_bytes());
    assert!(graph.initializer.iter().all(|t| t.external_data.is_empty()));
    assert_eq!(graph.initializer, inline.graph.unwrap().initializer);
}

#[test]
fn external_data_outside_the_models_folder_is_refused() {
    let path = testdata("escaping/dense_relu.onnx");
    let error = read_model(&path).expect_err("refused");
    assert!(
        matches!(&error, ReadError::ExternalData { tensor, .. } if tensor == "w"),
        "{error}"
    );
    let message = error.to_string();
    assert!(
        message.contains("is unusable: '../weights.bin' lies outside the folder")
            && message.ends_with("refused"),
        "{message}"
    );
}

#[test]
fn a_file_that_is_no_model_is_an_error_naming_it() {
    let path = testdata("make.py");
    let error = read_model(&path).expect_err("not a model");
    assert!(matches!(error, ReadError::Decode { .. }), "{error}");
    assert!(
        error.to_string().contains("make.py' is not an ONNX model"),
        "{error}"
    );
    let missing = read_model(&testdata("missing.onnx")).expect_err("no file");
    assert!(
        missing.to_string().starts_with("cannot read '"),
        "{missing}"
    );
}
