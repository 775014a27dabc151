//! One ONNX node as a converter sees it: its inputs (absent optional ones as `None`), its
//! attributes read by name with their defaults, and its operator set's version.

use crate::proto::{AttributeProto, NodeProto, TensorProto};

/// A node of the graph being imported.
pub struct Node<'m> {
    /// The node as stored.
    pub proto: &'m NodeProto,
    /// The version of the operator set the node's domain is imported at.
    pub opset: i64,
}

impl<'m> Node<'m> {
    /// `node 'name' (OpType)`, for messages; nodes without a name are named by their first
    /// output.
    pub fn label(&self) -> String {
        let name = if self.proto.name.is_empty() {
            self.proto.output.first().map_or("", String::as_str)
        } else {
            &self.proto.name
        };
        format!("node '{name}' ({})", self.proto.op_type)
    }

    /// The name of input `index`, when given (an empty name is an absent optional input).
    pub fn input(&self, index: usize) -> Option<&'m str> {
        self.proto
            .input
            .get(index)
            .map(String::as_str)
            .filter(|name| !name.is_empty())
    }

    /// How many inputs the node lists (absent optional ones in the middle included).
    pub fn input_count(&self) -> usize {
        self.proto.input.len()
    }

    /// The attribute named `name`.
    pub fn attr(&self, name: &str) -> Option<&'m AttributeProto> {
        self.proto.attribute.iter().find(|a| a.name == name)
    }

    /// Integer attribute `name`, or `default`.
    pub fn int(&self, name: &str, default: i64) -> i64 {
        self.attr(name).map_or(default, |a| a.i)
    }

    /// Integer-list attribute `name`, when present.
    pub fn ints(&self, name: &str) -> Option<Vec<i64>> {
        self.attr(name).map(|a| a.ints.clone())
    }

    /// Float attribute `name`, or `default`.
    pub fn float(&self, name: &str, default: f32) -> f64 {
        f64::from(self.attr(name).map_or(default, |a| a.f))
    }

    /// String attribute `name`, or `default`.
    pub fn string(&self, name: &str, default: &str) -> String {
        self.attr(name).map_or(default.to_string(), |a| {
            String::from_utf8_lossy(&a.s).into_owned()
        })
    }

    /// Tensor attribute `name`, when present.
    pub fn tensor(&self, name: &str) -> Option<&'m TensorProto> {
        self.attr(name).and_then(|a| a.t.as_ref())
    }
}
