//! The messages of the ONNX format that tessera reads, as `prost` messages: a model, its
//! graph, nodes, attributes, tensors and value types. Field numbers and enum values are the
//! format's (onnx/onnx.proto, IR version 10); messages and fields tessera has no use for
//! (functions, sparse tensors, training info, quantization annotations) are left out, which
//! protobuf decoding skips. Written here rather than generated: a build-time protobuf compiler
//! would need onnx.proto in the repository, and these are the few messages a reader needs.

/// A model: the graph and the operator sets it was written against.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelProto {
    /// The ONNX IR version of the file.
    #[prost(int64, tag = "1")]
    pub ir_version: i64,
    /// Operator sets (domain and version) the graph's nodes refer to.
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSetIdProto>,
    /// The tool that wrote the model.
    #[prost(string, tag = "2")]
    pub producer_name: String,
    /// That tool's version.
    #[prost(string, tag = "3")]
    pub producer_version: String,
    /// The model's domain (a reverse-DNS name).
    #[prost(string, tag = "4")]
    pub domain: String,
    /// The model's own version.
    #[prost(int64, tag = "5")]
    pub model_version: i64,
    /// Free text.
    #[prost(string, tag = "6")]
    pub doc_string: String,
    /// The computation.
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
    /// Free key-value metadata.
    #[prost(message, repeated, tag = "14")]
    pub metadata_props: Vec<StringStringEntryProto>,
}

/// An operator set: a domain ("" or "ai.onnx" for the standard one) and its version.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OperatorSetIdProto {
    /// The domain.
    #[prost(string, tag = "1")]
    pub domain: String,
    /// Its version (the opset).
    #[prost(int64, tag = "2")]
    pub version: i64,
}

/// A key and its value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringStringEntryProto {
    /// The key.
    #[prost(string, tag = "1")]
    pub key: String,
    /// The value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// A graph: nodes in topological order, its inputs and outputs, and its initializers (named
/// constant tensors, the weights).
#[derive(Clone, PartialEq, prost::Message)]
pub struct GraphProto {
    /// The nodes.
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    /// The graph's name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Named constant tensors.
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
    /// Free text.
    #[prost(string, tag = "10")]
    pub doc_string: String,
    /// The graph's inputs (old opsets list initializers here too).
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfoProto>,
    /// The graph's outputs.
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfoProto>,
    /// Types of intermediate values, where the writer recorded them.
    #[prost(message, repeated, tag = "13")]
    pub value_info: Vec<ValueInfoProto>,
}

/// One operator application.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeProto {
    /// Input value names ("" for an omitted optional input).
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    /// Output value names.
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    /// The node's name (may be empty).
    #[prost(string, tag = "3")]
    pub name: String,
    /// The operator (`MatMul`, `Conv`, ...).
    #[prost(string, tag = "4")]
    pub op_type: String,
    /// The operator's domain ("" for the standard one).
    #[prost(string, tag = "7")]
    pub domain: String,
    /// Attributes.
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
    /// Free text.
    #[prost(string, tag = "6")]
    pub doc_string: String,
}

/// The kinds of attribute value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum AttributeType {
    /// Not set.
    Undefined = 0,
    /// `f`.
    Float = 1,
    /// `i`.
    Int = 2,
    /// `s`.
    String = 3,
    /// `t`.
    Tensor = 4,
    /// `g`.
    Graph = 5,
    /// `floats`.
    Floats = 6,
    /// `ints`.
    Ints = 7,
    /// `strings`.
    Strings = 8,
    /// `tensors`.
    Tensors = 9,
    /// `graphs`.
    Graphs = 10,
    /// A sparse tensor (not read).
    SparseTensor = 11,
    /// Sparse tensors (not read).
    SparseTensors = 12,
    /// A type (not read).
    TypeProto = 13,
    /// Types (not read).
    TypeProtos = 14,
}

/// A named attribute of a node; `type` says which value field holds it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AttributeProto {
    /// The attribute's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// In a function body: the caller's attribute this one refers to.
    #[prost(string, tag = "21")]
    pub ref_attr_name: String,
    /// Free text.
    #[prost(string, tag = "13")]
    pub doc_string: String,
    /// Which field holds the value.
    #[prost(enumeration = "AttributeType", tag = "20")]
    pub r#type: i32,
    /// A float.
    #[prost(float, tag = "2")]
    pub f: f32,
    /// An integer.
    #[prost(int64, tag = "3")]
    pub i: i64,
    /// A string (bytes).
    #[prost(bytes = "vec", tag = "4")]
    pub s: Vec<u8>,
    /// A tensor.
    #[prost(message, optional, tag = "5")]
    pub t: Option<TensorProto>,
    /// A graph (a subgraph of control flow).
    #[prost(message, optional, tag = "6")]
    pub g: Option<GraphProto>,
    /// Floats.
    #[prost(float, repeated, tag = "7")]
    pub floats: Vec<f32>,
    /// Integers.
    #[prost(int64, repeated, tag = "8")]
    pub ints: Vec<i64>,
    /// Strings.
    #[prost(bytes = "vec", repeated, tag = "9")]
    pub strings: Vec<Vec<u8>>,
    /// Tensors.
    #[prost(message, repeated, tag = "10")]
    pub tensors: Vec<TensorProto>,
    /// Graphs.
    #[prost(message, repeated, tag = "11")]
    pub graphs: Vec<GraphProto>,
}

/// The element types of tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum DataType {
    /// Not set.
    Undefined = 0,
    /// IEEE binary32.
    Float = 1,
    /// Unsigned 8-bit integer.
    Uint8 = 2,
    /// Signed 8-bit integer.
    Int8 = 3,
    /// Unsigned 16-bit integer.
    Uint16 = 4,
    /// Signed 16-bit integer.
    Int16 = 5,
    /// Signed 32-bit integer.
    Int32 = 6,
    /// Signed 64-bit integer.
    Int64 = 7,
    /// A string.
    String = 8,
    /// Boolean.
    Bool = 9,
    /// IEEE binary16.
    Float16 = 10,
    /// IEEE binary64.
    Double = 11,
    /// Unsigned 32-bit integer.
    Uint32 = 12,
    /// Unsigned 64-bit integer.
    Uint64 = 13,
    /// Two binary32.
    Complex64 = 14,
    /// Two binary64.
    Complex128 = 15,
    /// bfloat16.
    Bfloat16 = 16,
}

/// Where a tensor's data is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum DataLocation {
    /// In the tensor's own fields.
    Default = 0,
    /// In a file beside the model (`external_data`: location, offset, length).
    External = 1,
}

/// A tensor: its shape, element type and data, in one of the typed fields, as little-endian
/// `raw_data`, or in an external file.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    /// The shape.
    #[prost(int64, repeated, tag = "1")]
    pub dims: Vec<i64>,
    /// The element type ([`DataType`]).
    #[prost(int32, tag = "2")]
    pub data_type: i32,
    /// float, complex64 data.
    #[prost(float, repeated, tag = "4")]
    pub float_data: Vec<f32>,
    /// int32, int16, int8, uint16, uint8, bool, float16 and bfloat16 data (as their bits).
    #[prost(int32, repeated, tag = "5")]
    pub int32_data: Vec<i32>,
    /// string data.
    #[prost(bytes = "vec", repeated, tag = "6")]
    pub string_data: Vec<Vec<u8>>,
    /// int64 data.
    #[prost(int64, repeated, tag = "7")]
    pub int64_data: Vec<i64>,
    /// The tensor's name (an initializer's is the value it defines).
    #[prost(string, tag = "8")]
    pub name: String,
    /// Free text.
    #[prost(string, tag = "12")]
    pub doc_string: String,
    /// The data as little-endian bytes.
    #[prost(bytes = "vec", tag = "9")]
    pub raw_data: Vec<u8>,
    /// Where external data is: `location` (a path relative to the model's folder), `offset`,
    /// `length`, `checksum`.
    #[prost(message, repeated, tag = "13")]
    pub external_data: Vec<StringStringEntryProto>,
    /// Whether the data is external ([`DataLocation`]).
    #[prost(enumeration = "DataLocation", tag = "14")]
    pub data_location: i32,
    /// double, complex128 data.
    #[prost(double, repeated, tag = "10")]
    pub double_data: Vec<f64>,
    /// uint32 and uint64 data.
    #[prost(uint64, repeated, tag = "11")]
    pub uint64_data: Vec<u64>,
}

/// A named value and its type.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueInfoProto {
    /// The value's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its type.
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<TypeProto>,
    /// Free text.
    #[prost(string, tag = "3")]
    pub doc_string: String,
}

/// A value's type: a tensor, a sequence or an optional value (maps and sparse tensors are
/// kinds tessera does not take).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeProto {
    /// The kind of value.
    #[prost(oneof = "Value", tags = "1, 4, 5, 8, 9")]
    pub value: Option<Value>,
    /// A denotation (`IMAGE`, ...).
    #[prost(string, tag = "6")]
    pub denotation: String,
}

/// The kinds of value a [`TypeProto`] describes.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Value {
    /// A dense tensor.
    #[prost(message, tag = "1")]
    TensorType(TensorTypeProto),
    /// A sequence.
    #[prost(message, tag = "4")]
    SequenceType(ElementTypeProto),
    /// A map (not read).
    #[prost(message, tag = "5")]
    MapType(OtherType),
    /// A sparse tensor (not read).
    #[prost(message, tag = "8")]
    SparseTensorType(OtherType),
    /// An optional value.
    #[prost(message, tag = "9")]
    OptionalType(ElementTypeProto),
}

/// The type of a sequence's elements, or of an optional's value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ElementTypeProto {
    /// The type.
    #[prost(message, optional, boxed, tag = "1")]
    pub elem_type: Option<Box<TypeProto>>,
}

/// A kind of value tessera does not take, its contents skipped.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OtherType {}

/// A dense tensor's type: element type and (possibly symbolic) shape.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorTypeProto {
    /// The element type ([`DataType`]).
    #[prost(int32, tag = "1")]
    pub elem_type: i32,
    /// The shape, when known.
    #[prost(message, optional, tag = "2")]
    pub shape: Option<TensorShapeProto>,
}

/// A shape: one entry per dimension.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeProto {
    /// The dimensions.
    #[prost(message, repeated, tag = "1")]
    pub dim: Vec<Dimension>,
}

/// A dimension: a number, a name (`N`, `batch`), or neither (unknown).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Dimension {
    /// The dimension.
    #[prost(oneof = "DimensionValue", tags = "1, 2")]
    pub value: Option<DimensionValue>,
    /// A denotation.
    #[prost(string, tag = "3")]
    pub denotation: String,
}

/// A dimension's number or name.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum DimensionValue {
    /// A static size.
    #[prost(int64, tag = "1")]
    DimValue(i64),
    /// A symbolic size.
    #[prost(string, tag = "2")]
    DimParam(String),
}

/// A sequence of values (a test's input or output): tessera reads sequences of tensors.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SequenceProto {
    /// The value's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// What the elements are: 1 tensors, 3 sequences, 5 optionals.
    #[prost(int32, tag = "2")]
    pub elem_type: i32,
    /// The elements, when tensors.
    #[prost(message, repeated, tag = "3")]
    pub tensor_values: Vec<TensorProto>,
}

/// An optional value (a test's input or output): nothing, a tensor or a sequence.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OptionalProto {
    /// The value's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// What the value is: 0 nothing, 1 a tensor, 3 a sequence.
    #[prost(int32, tag = "2")]
    pub elem_type: i32,
    /// The value, when a tensor.
    #[prost(message, optional, tag = "3")]
    pub tensor_value: Option<TensorProto>,
    /// The value, when a sequence.
    #[prost(message, optional, tag = "5")]
    pub sequence_value: Option<SequenceProto>,
}
