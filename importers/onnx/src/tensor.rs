//! ONNX tensors (initializers, `Constant` values) as tessera tensors: the element type mapped,
//! the shape checked (no negative extents, no overflow, no more bytes than a limit), the data
//! taken from `raw_data` (little-endian) or from the typed field its element type uses, and its
//! length checked against the shape, so that a truncated or inconsistent file is an error that
//! names the tensor, never a short tensor or a panic.

use crate::proto::{DataType, TensorProto};
use tessera::exec::bytes::{decode, element_bytes};
use tessera::exec::tensor::Tensor;
use tessera::types::{ElementType, TensorType};

/// Why an ONNX tensor cannot be a tessera tensor.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("tensor '{name}' {problem}")]
pub struct TensorError {
    /// The tensor's name.
    pub name: String,
    /// What is wrong with it.
    pub problem: String,
}

/// The element types tessera has, for messages.
const KNOWN: &str = "f32, f64, f16, bf16, i1, i8, i16, i32, i64, ui8, ui16, ui32, ui64, \
    f8E4M3FN, f8E4M3FNUZ, f8E5M2, f8E5M2FNUZ, f4E2M1FN, f8E8M0FNU, i4, ui4, i2, ui2";

/// The tessera element type of ONNX data type `data_type`.
pub fn element_type(data_type: i32) -> Result<ElementType, String> {
    // The 8-, 4- and 2-bit types by number: the generated enum predates some of them.
    let narrow = match data_type {
        17 => Some(ElementType::F8E4M3FN),
        18 => Some(ElementType::F8E4M3FNUZ),
        19 => Some(ElementType::F8E5M2),
        20 => Some(ElementType::F8E5M2FNUZ),
        21 => Some(ElementType::U4),
        22 => Some(ElementType::I4),
        23 => Some(ElementType::F4E2M1FN),
        24 => Some(ElementType::F8E8M0FNU),
        25 => Some(ElementType::U2),
        26 => Some(ElementType::I2),
        _ => None,
    };
    if let Some(element) = narrow {
        return Ok(element);
    }
    let Ok(known) = DataType::try_from(data_type) else {
        return Err(format!(
            "has elements of ONNX data type {data_type}, which tessera has no type for (it has {KNOWN})"
        ));
    };
    Ok(match known {
        DataType::Float => ElementType::F32,
        DataType::Double => ElementType::F64,
        DataType::Float16 => ElementType::F16,
        DataType::Bfloat16 => ElementType::BF16,
        DataType::Bool => ElementType::I1,
        DataType::Int8 => ElementType::I8,
        DataType::Int16 => ElementType::I16,
        DataType::Int32 => ElementType::I32,
        DataType::Int64 => ElementType::I64,
        DataType::Uint8 => ElementType::U8,
        DataType::Uint16 => ElementType::U16,
        DataType::Uint32 => ElementType::U32,
        DataType::Uint64 => ElementType::U64,
        other => {
            return Err(format!(
                "has elements of type {other:?}, which tessera has no type for (it has {KNOWN})"
            ))
        }
    })
}

/// Whether `proto` is a tensor of strings (which [`strings_of`] reads).
pub fn is_strings(proto: &TensorProto) -> bool {
    proto.data_type == DataType::String as i32
}

/// The shape and strings of string tensor `proto` (UTF-8, invalid sequences replaced),
/// refused over `limit` bytes of text, its count checked against the shape.
pub fn strings_of(proto: &TensorProto, limit: u64) -> Result<(Vec<u64>, Vec<String>), TensorError> {
    let fail = |problem: String| TensorError {
        name: proto.name.clone(),
        problem,
    };
    let shape = proto
        .dims
        .iter()
        .map(|&d| u64::try_from(d).map_err(|_| fail(format!("has a negative extent ({d})"))))
        .collect::<Result<Vec<u64>, _>>()?;
    let count = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
    if count != Some(proto.string_data.len() as u64) {
        return Err(fail(format!(
            "has {} strings where its shape {:?} needs {}",
            proto.string_data.len(),
            proto.dims,
            count.map_or("more".into(), |n| n.to_string())
        )));
    }
    let bytes: u64 = proto.string_data.iter().map(|s| s.len() as u64).sum();
    if bytes > limit {
        return Err(fail(format!(
            "holds {bytes} bytes of strings, over the limit of {limit}"
        )));
    }
    let strings = proto
        .string_data
        .iter()
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect();
    Ok((shape, strings))
}

/// Elements per byte of ONNX's packed data for `element`: 2 for the 4-bit types, 4 for the
/// 2-bit ones (the first element in the lowest bits), 1 otherwise.
fn packed_per_byte(element: ElementType) -> usize {
    match element.bit_width() {
        4 => 2,
        2 => 4,
        _ => 1,
    }
}

/// `proto` as a tessera tensor, refused when it would take more than `limit` bytes.
pub fn tensor_of(proto: &TensorProto, limit: u64) -> Result<Tensor, TensorError> {
    let fail = |problem: String| TensorError {
        name: proto.name.clone(),
        problem,
    };
    let element = element_type(proto.data_type).map_err(fail)?;
    let shape = proto
        .dims
        .iter()
        .map(|&d| {
            u64::try_from(d).map_err(|_| {
                fail(format!(
                    "has a negative extent ({d}) in its shape {:?}",
                    proto.dims
                ))
            })
        })
        .collect::<Result<Vec<u64>, _>>()?;
    let ty = TensorType::new(shape, element);
    let width = element_bytes(element) as u64;
    let bytes = ty
        .num_elements()
        .and_then(|n| n.checked_mul(width))
        .ok_or_else(|| fail(format!("has a shape {:?} whose size overflows", proto.dims)))?;
    if bytes > limit {
        return Err(fail(format!(
            "takes {bytes} bytes, over the limit of {limit}"
        )));
    }
    let count = (bytes / width) as usize;
    // The 4- and 2-bit types are packed: a typed field holds one byte of them per value.
    let per_byte = packed_per_byte(element);
    let (values, stored) = match per_byte {
        1 => (count, bytes as usize),
        _ => (count.div_ceil(per_byte), count.div_ceil(per_byte)),
    };
    let data = little_endian(proto, element, values).map_err(fail)?;
    if data.len() != stored {
        return Err(fail(format!(
            "has {} bytes of data where its shape {:?} of {element} needs {stored}",
            data.len(),
            proto.dims
        )));
    }
    if per_byte == 1 {
        return Ok(decode(&ty, &data));
    }
    // One byte per element, as tessera keeps them (the element's bits, which decoding
    // sign-extends for the signed types).
    let bits = 8 / per_byte;
    let mask = (1u8 << bits) - 1;
    let unpacked: Vec<u8> = (0..count)
        .map(|i| (data[i / per_byte] >> (bits * (i % per_byte))) & mask)
        .collect();
    Ok(decode(&ty, &unpacked))
}

/// The data of `proto` (of `element`, `count` elements) as little-endian bytes: its
/// `raw_data`, or the typed field ONNX keeps that element type in.
fn little_endian(
    proto: &TensorProto,
    element: ElementType,
    count: usize,
) -> Result<Vec<u8>, String> {
    if !proto.raw_data.is_empty() {
        return Ok(proto.raw_data.clone());
    }
    let fields = [
        proto.float_data.len(),
        proto.int32_data.len(),
        proto.int64_data.len(),
        proto.double_data.len(),
        proto.uint64_data.len(),
    ];
    if count > 0 && fields.iter().all(|&n| n == 0) {
        return Err(format!("has no data for its {count} elements"));
    }
    // 16-bit floats are kept as their bits, 8- and 16-bit integers and booleans as their
    // values, one per int32; 32- and 64-bit unsigned integers one per uint64.
    match element {
        ElementType::F32 => field(&proto.float_data, "float_data", count, f32::to_le_bytes),
        ElementType::F64 => field(&proto.double_data, "double_data", count, f64::to_le_bytes),
        ElementType::I64 => field(&proto.int64_data, "int64_data", count, i64::to_le_bytes),
        ElementType::I32 => field(&proto.int32_data, "int32_data", count, i32::to_le_bytes),
        ElementType::F16 | ElementType::BF16 => {
            field(&proto.int32_data, "int32_data", count, |v| {
                (v as u16).to_le_bytes()
            })
        }
        // The 8-bit floats' codes one per int32, the 4- and 2-bit types packed bytes.
        ElementType::I8
        | ElementType::U8
        | ElementType::I1
        | ElementType::F8E4M3FN
        | ElementType::F8E4M3FNUZ
        | ElementType::F8E5M2
        | ElementType::F8E5M2FNUZ
        | ElementType::F4E2M1FN
        | ElementType::F8E8M0FNU
        | ElementType::I4
        | ElementType::U4
        | ElementType::I2
        | ElementType::U2 => field(&proto.int32_data, "int32_data", count, |v| [v as u8]),
        ElementType::I16 | ElementType::U16 => field(&proto.int32_data, "int32_data", count, |v| {
            (v as u16).to_le_bytes()
        }),
        ElementType::U32 => field(&proto.uint64_data, "uint64_data", count, |v| {
            (v as u32).to_le_bytes()
        }),
        ElementType::U64 => field(&proto.uint64_data, "uint64_data", count, u64::to_le_bytes),
    }
}

/// The `count` values of typed field `name` (`values`), each as the bytes `bytes` gives.
fn field<T: Copy, const N: usize>(
    values: &[T],
    name: &str,
    count: usize,
    bytes: impl Fn(T) -> [u8; N],
) -> Result<Vec<u8>, String> {
    if values.len() != count {
        return Err(format!(
            "has {} values in {name} where its shape needs {count}",
            values.len()
        ));
    }
    Ok(values.iter().flat_map(|&v| bytes(v)).collect())
}
