//! ONNX tensors as tessera tensors: values from raw bytes and from typed fields, every element
//! type tessera has, and the errors of a shape or data that do not add up.

use std::path::PathBuf;
use tessera::types::ElementType;
use tessera_onnx::proto::{DataType, TensorProto};
use tessera_onnx::read_model;
use tessera_onnx::tensor::{element_type, tensor_of, TensorError};

const LIMIT: u64 = 1 << 30;

fn proto(name: &str, data_type: DataType, dims: &[i64]) -> TensorProto {
    TensorProto {
        name: name.into(),
        data_type: data_type as i32,
        dims: dims.to_vec(),
        ..Default::default()
    }
}

fn values(t: &tessera::exec::tensor::Tensor) -> Vec<f64> {
    (0..t.ty.num_elements().unwrap() as usize)
        .map(|i| t.get_f64(i))
        .collect()
}

#[test]
fn initializers_become_tensors_of_their_shape_and_values() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/onnx/dense_relu.onnx");
    let graph = read_model(&path).unwrap().graph.unwrap();
    let w = tensor_of(&graph.initializer[0], LIMIT).unwrap();
    assert_eq!(w.ty.to_string(), "tensor<3x4xf32>");
    let expected: Vec<f64> = (0..12).map(|i| f64::from(i as f32 / 10.0)).collect();
    assert_eq!(values(&w), expected);
    let b = tensor_of(&graph.initializer[1], LIMIT).unwrap();
    assert_eq!(values(&b), [0.5, -0.5, 1.0, -1.0]);
}

#[test]
fn typed_fields_hold_every_element_type() {
    let mut f = proto("f", DataType::Float, &[2]);
    f.float_data = vec![1.5, -2.0];
    assert_eq!(values(&tensor_of(&f, LIMIT).unwrap()), [1.5, -2.0]);
    let mut d = proto("d", DataType::Double, &[1]);
    d.double_data = vec![1e-300];
    assert_eq!(values(&tensor_of(&d, LIMIT).unwrap()), [1e-300]);
    let mut i = proto("i", DataType::Int64, &[3]);
    i.int64_data = vec![-1, 0, i64::from(i32::MAX) + 1];
    assert_eq!(
        values(&tensor_of(&i, LIMIT).unwrap()),
        [-1.0, 0.0, 2147483648.0]
    );
    let mut b = proto("b", DataType::Bool, &[2]);
    b.int32_data = vec![1, 0];
    let bools = tensor_of(&b, LIMIT).unwrap();
    assert_eq!(bools.ty.element, ElementType::I1);
    assert_eq!(values(&bools), [1.0, 0.0]);
    let mut h = proto("h", DataType::Float16, &[2]);
    h.int32_data = vec![0x3C00, 0xC000]; // 1.0 and -2.0 as binary16 bits
    assert_eq!(values(&tensor_of(&h, LIMIT).unwrap()), [1.0, -2.0]);
    let mut s = proto("s", DataType::Int8, &[2]);
    s.int32_data = vec![-128, 127];
    assert_eq!(values(&tensor_of(&s, LIMIT).unwrap()), [-128.0, 127.0]);
    // A scalar (no dims) is one element.
    let mut scalar = proto("scalar", DataType::Int32, &[]);
    scalar.int32_data = vec![7];
    let t = tensor_of(&scalar, LIMIT).unwrap();
    assert_eq!((t.ty.shape.len(), values(&t)), (0, vec![7.0]));
}

#[test]
fn shapes_and_data_that_do_not_add_up_are_errors_naming_the_tensor() {
    let error = |p: &TensorProto| tensor_of(p, LIMIT).unwrap_err();
    let mut short = proto("w", DataType::Float, &[2, 3]);
    short.raw_data = vec![0; 20];
    assert_eq!(
        error(&short),
        TensorError {
            name: "w".into(),
            problem: "has 20 bytes of data where its shape [2, 3] of f32 needs 24".into()
        }
    );
    let mut fewer = proto("v", DataType::Float, &[3]);
    fewer.float_data = vec![1.0];
    assert_eq!(
        error(&fewer).to_string(),
        "tensor 'v' has 1 values in float_data where its shape needs 3"
    );
    let empty = proto("e", DataType::Float, &[4]);
    assert_eq!(
        error(&empty).to_string(),
        "tensor 'e' has no data for its 4 elements"
    );
    let negative = proto("n", DataType::Float, &[2, -1]);
    assert!(error(&negative)
        .to_string()
        .contains("negative extent (-1)"));
    let overflow = proto("o", DataType::Float, &[i64::MAX, 4]);
    assert!(error(&overflow).to_string().contains("overflows"));
    let big = proto("big", DataType::Float, &[1024, 1024]);
    assert_eq!(
        tensor_of(&big, 1000).unwrap_err().to_string(),
        "tensor 'big' takes 4194304 bytes, over the limit of 1000"
    );
    let complex = proto("c", DataType::Complex64, &[1]);
    assert!(
        error(&complex)
            .to_string()
            .contains("Complex64, which tessera has no type for"),
        "{}",
        error(&complex)
    );
    assert!(element_type(99)
        .unwrap_err()
        .contains("ONNX data type 99, which tessera has no type for"));
}
