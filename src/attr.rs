//! Attribute values and dense tensor literals, as they stand in a verified module.

use crate::exec::bytes::scalar_at;
use crate::number::format_float;
use crate::types::{ElementType, TensorType};
use std::fmt;
use std::sync::Arc;

/// True when two floats have the same bits, or are both NaN (all NaNs print as `nan`).
pub fn same_float(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// The value of an op attribute (`axis = 1`, `epsilon = 1.0e-5`, `perm = [1, 0]`).
#[derive(Clone, Debug)]
pub enum Attribute {
    /// A 64-bit signed integer.
    Int(i64),
    /// A float, kept in f64.
    Float(f64),
    /// `true` or `false`.
    Bool(bool),
    /// A string (`"tanh"`).
    Str(String),
    /// A list of attributes (`[1, 2]`).
    List(Vec<Attribute>),
}

impl PartialEq for Attribute {
    fn eq(&self, other: &Attribute) -> bool {
        match (self, other) {
            (Attribute::Int(a), Attribute::Int(b)) => a == b,
            (Attribute::Float(a), Attribute::Float(b)) => same_float(*a, *b),
            (Attribute::Bool(a), Attribute::Bool(b)) => a == b,
            (Attribute::Str(a), Attribute::Str(b)) => a == b,
            (Attribute::List(a), Attribute::List(b)) => a == b,
            _ => false,
        }
    }
}

impl Attribute {
    /// The integer, when this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Attribute::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The number as f64, when this is an integer or a float.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Attribute::Int(v) => Some(*v as f64),
            Attribute::Float(v) => Some(*v),
            _ => None,
        }
    }

    /// The boolean, when this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Attribute::Bool(v) => Some(*v),
            _ => None,
        }
    }

    /// The string, when this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Attribute::Str(v) => Some(v),
            _ => None,
        }
    }

    /// The integers of a list of integers.
    pub fn as_int_list(&self) -> Option<Vec<i64>> {
        match self {
            Attribute::List(items) => items.iter().map(Attribute::as_int).collect(),
            _ => None,
        }
    }

    /// What kind of value this is, for messages (`integer`, `list`, ...).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Attribute::Int(_) => "integer",
            Attribute::Float(_) => "float",
            Attribute::Bool(_) => "boolean",
            Attribute::Str(_) => "string",
            Attribute::List(_) => "list",
        }
    }
}

impl fmt::Display for Attribute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Attribute::Int(v) => write!(f, "{v}"),
            Attribute::Float(v) => f.write_str(&format_float(*v, ElementType::F64)),
            Attribute::Bool(v) => write!(f, "{v}"),
            Attribute::Str(v) => f.write_str(&quoted(v)),
            Attribute::List(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// `s` as a string literal, escaping `"`, `\\` and control characters.
pub fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One element of a dense literal, already converted to the tensor's element type.
#[derive(Clone, Copy, Debug)]
pub enum Scalar {
    /// An integer element (i8, i32, i64).
    Int(i64),
    /// A float element, exactly representable in the tensor's float type.
    Float(f64),
    /// An `i1` element.
    Bool(bool),
}

impl PartialEq for Scalar {
    fn eq(&self, other: &Scalar) -> bool {
        match (self, other) {
            (Scalar::Int(a), Scalar::Int(b)) => a == b,
            (Scalar::Float(a), Scalar::Float(b)) => same_float(*a, *b),
            (Scalar::Bool(a), Scalar::Bool(b)) => a == b,
            _ => false,
        }
    }
}

impl Scalar {
    /// The value as f64 (booleans as 0 and 1).
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Int(v) => v as f64,
            Scalar::Float(v) => v,
            Scalar::Bool(v) => f64::from(u8::from(v)),
        }
    }

    /// Canonical text of this element in a tensor of `element` type.
    pub fn display(self, element: ElementType) -> String {
        match self {
            Scalar::Int(v) => element.int_value(v).to_string(),
            Scalar::Float(v) => format_float(v, element),
            Scalar::Bool(v) => v.to_string(),
        }
    }
}

/// The contents of a dense tensor literal: one value for every element, or all of them.
#[derive(Clone, Debug, PartialEq)]
pub enum DenseValue {
    /// `dense<0.5>`: every element has this value.
    Splat(Scalar),
    /// `dense<[[1.0, 2.0], [3.0, 4.0]]>`: the elements in row-major order.
    Elements(Vec<Scalar>),
    /// `external<"file", "key">`: the elements stored in a side file, read when the module
    /// was loaded.
    External(ExternalTensor),
}

/// The elements of a literal kept in a side file, and where they came from.
#[derive(Clone, Debug)]
pub struct ExternalTensor {
    /// The side file, as written (relative to the module's folder).
    pub file: String,
    /// The tensor's key in that file.
    pub key: String,
    /// The elements' type.
    pub element: ElementType,
    /// The elements, little-endian in row-major order (`i1` a byte each).
    pub bytes: Arc<[u8]>,
}

impl PartialEq for ExternalTensor {
    fn eq(&self, other: &ExternalTensor) -> bool {
        self.file == other.file
            && self.key == other.key
            && self.element == other.element
            && (Arc::ptr_eq(&self.bytes, &other.bytes) || self.bytes == other.bytes)
    }
}

impl DenseValue {
    /// The canonical `dense<...>` text for a tensor of type `ty`.
    pub fn display(&self, ty: &TensorType) -> String {
        match self {
            DenseValue::Splat(s) => format!("dense<{}>", s.display(ty.element)),
            DenseValue::Elements(items) => {
                let mut out = String::from("dense<");
                write_nested(&mut out, items, &ty.shape, ty.element);
                out.push('>');
                out
            }
            DenseValue::External(tensor) => {
                format!(
                    "external<{}, {}>",
                    quoted(&tensor.file),
                    quoted(&tensor.key)
                )
            }
        }
    }

    /// Element `index` in row-major order.
    pub fn get(&self, index: usize) -> Scalar {
        match self {
            DenseValue::Splat(s) => *s,
            DenseValue::Elements(items) => items[index],
            DenseValue::External(tensor) => scalar_at(tensor.element, &tensor.bytes, index),
        }
    }
}

/// Writes `items` nested by `shape` (`[[1, 2], [3, 4]]`); rank 0 writes the single element.
fn write_nested(out: &mut String, items: &[Scalar], shape: &[u64], element: ElementType) {
    match shape.split_first() {
        None => out.push_str(&items[0].display(element)),
        Some((&outer, inner)) => {
            let chunk = inner.iter().product::<u64>() as usize;
            out.push('[');
            for i in 0..outer as usize {
                if i > 0 {
                    out.push_str(", ");
                }
                write_nested(out, &items[i * chunk..(i + 1) * chunk], inner, element);
            }
            out.push(']');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_print_canonically() {
        let list = Attribute::List(vec![Attribute::Int(1), Attribute::Float(1.0e-5)]);
        assert_eq!(list.to_string(), "[1, 1.0e-5]");
        assert_eq!(Attribute::Str("a\"b\\".into()).to_string(), r#""a\"b\\""#);
        assert_eq!(Attribute::Float(f64::NAN), Attribute::Float(-f64::NAN));
        assert_ne!(Attribute::Float(0.0), Attribute::Float(-0.0));
    }

    #[test]
    fn dense_prints_nested_by_shape() {
        let ty = TensorType::new(vec![2, 2], ElementType::F32);
        let value = DenseValue::Elements([1.0, 2.0, 3.0, 4.5].map(Scalar::Float).to_vec());
        assert_eq!(value.display(&ty), "dense<[[1.0, 2.0], [3.0, 4.5]]>");
        let scalar = TensorType::new(vec![], ElementType::I1);
        let value = DenseValue::Elements(vec![Scalar::Bool(true)]);
        assert_eq!(value.display(&scalar), "dense<true>");
    }
}
