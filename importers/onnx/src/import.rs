//! An ONNX model to a verified tessera module: the graph's inputs become parameters (their
//! symbolic dimensions fixed; a sequence input one per element, its length given like a
//! shape; an optional input one if it holds a value), initializers constants, each node a
//! few tessera ops through its converter, the graph's outputs the results (a sequence's
//! elements one result each). The module is then printed and verified
//! from that text exactly as a written `.tsr` file is (its large constants `external<...>`
//! literals of a side file held in memory until it is written).

use crate::graph::{Graph, NodeError};
use crate::item::Item;
use crate::nodes::{initializer, NodeConverter, Scope};
use crate::proto::{
    DataType, DimensionValue, ModelProto, TensorTypeProto, TypeProto, Value as TypeValue,
};
use crate::read::{read_model, ReadError};
use crate::strings::StringTable;
use crate::tensor::element_type;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;
use tessera::diag::render_all;
use tessera::dialect::Registry;
use tessera::exec::tensor::Tensor;
use tessera::frontend::load_with;
use tessera::ir::Module;
use tessera::source::SourceFile;
use tessera::syntax::printer::print_module;
use tessera::types::TensorType;
use tessera::weights::MemoryStore;

/// The most bytes one initializer may take.
pub const TENSOR_LIMIT: u64 = 1 << 33;

/// The shape of a graph input, given at import time (`--input-shape`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputShape {
    /// A tensor of this shape (also an optional input holding a tensor).
    Tensor(Vec<u64>),
    /// A sequence of tensors of these shapes (also an optional input holding a sequence).
    Sequence(Vec<Vec<u64>>),
    /// An optional input that holds no value.
    Absent,
}

/// How to import.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// Shapes for inputs with symbolic or unknown dimensions, and for every sequence input
    /// (its length and elements' shapes), by input name.
    pub input_shapes: BTreeMap<String, InputShape>,
    /// The side file the module's large constants refer to (relative to the `.tsr`).
    pub side_file: String,
    /// The name the printed module is verified under (in messages).
    pub source_name: String,
    /// Graph inputs given values at import time: constants, not parameters (shapes, axes or
    /// indices that a model takes as inputs but tessera needs to know).
    pub bound_inputs: BTreeMap<String, Tensor>,
}

/// A graph input (or one element of a sequence input) and the parameter it became.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphInput {
    /// The input's name in the model.
    pub onnx_name: String,
    /// The element's position, for an element of a sequence input.
    pub element: Option<usize>,
    /// The parameter's name (without `%`).
    pub param: String,
    /// Whether it is a tensor of strings (the parameter takes their ids).
    pub strings: bool,
}

impl GraphInput {
    /// How tools name it: the input's name, `name[i]` for element `i` of a sequence.
    pub fn label(&self) -> String {
        element_label(&self.onnx_name, self.element)
    }
}

/// A result of the function: a graph output, or one element of a sequence output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphOutput {
    /// The output's name, `name[i]` for element `i` of a sequence output.
    pub label: String,
    /// Whether it is a tensor of strings (the result holds their ids).
    pub strings: bool,
}

/// `name`, or `name[i]` for element `i` of a sequence.
fn element_label(name: &str, element: Option<usize>) -> String {
    match element {
        Some(i) => format!("{name}[{i}]"),
        None => name.to_string(),
    }
}

/// An imported model.
pub struct Imported {
    /// The verified module (one function).
    pub module: Module,
    /// Its canonical text, as `tessera-import` writes it.
    pub text: String,
    /// The side file's tensors, by key.
    pub weights: MemoryStore,
    /// The graph's inputs in parameter order.
    pub inputs: Vec<GraphInput>,
    /// What each result is, in order: a graph output, or an element of a sequence output (an
    /// empty optional output has no result).
    pub outputs: Vec<GraphOutput>,
    /// The strings of the model's string constants, by id: a call's string inputs are
    /// interned into (a copy of) it, and string results read back through it.
    pub strings: StringTable,
    /// What the import decided that the user should know (symbolic dimensions set to 1).
    pub notes: Vec<String>,
}

/// A node tessera cannot import.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnsupportedNode {
    /// `node 'name' (OpType)`.
    pub node: String,
    /// The op's domain (`ai.onnx` for the default one).
    pub domain: String,
    /// The opset version the model imports for that domain.
    pub opset: i64,
    /// What tessera lacks.
    pub reason: String,
}

/// Why a model could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file could not be read or decoded.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Nodes tessera cannot import, all of them.
    #[error("{}", UnsupportedList(.0))]
    Unsupported(Vec<UnsupportedNode>),
    /// A node is invalid.
    #[error("{node}: {message}")]
    Node {
        /// `node 'name' (OpType)`.
        node: String,
        /// What is wrong.
        message: String,
    },
    /// The model as a whole is invalid or of a kind tessera does not import.
    #[error("{0}")]
    Model(String),
    /// The built module does not verify: a bug of the importer, with the diagnostics.
    #[error("the imported module does not verify (an importer bug):\n{0}")]
    Verify(String),
}

/// The list of unsupported nodes, one per line.
struct UnsupportedList<'a>(&'a [UnsupportedNode]);

impl fmt::Display for UnsupportedList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        write!(
            f,
            "{n} node{} of the model cannot be imported:",
            if n == 1 { "" } else { "s" }
        )?;
        for u in self.0 {
            write!(
                f,
                "\n  {} [domain {}, opset {}]: {}",
                u.node, u.domain, u.opset, u.reason
            )?;
        }
        Ok(())
    }
}

/// Reads and imports the model at `path`.
pub fn import_file(
    path: &Path,
    options: &ImportOptions,
    registry: &Registry,
) -> Result<Imported, ImportError> {
    let model = read_model(path)?;
    import(&model, options, registry)
}

/// The default domain's names.
fn is_default_domain(domain: &str) -> bool {
    domain.is_empty() || domain == "ai.onnx"
}

/// A symbol name for the function from the graph's name.
fn function_name(graph_name: &str) -> String {
    let mut name: String = graph_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        name.insert_str(0, "main_");
    }
    if graph_name.is_empty() {
        name = "main".into();
    }
    name
}

/// The type of tensor `label` (a graph input, or an element of one) of declared type
/// `tensor`: its unknown dimensions from `given` or 1 (noted).
fn tensor_type(
    label: &str,
    tensor: &TensorTypeProto,
    given: Option<&[u64]>,
    notes: &mut Vec<String>,
) -> Result<TensorType, ImportError> {
    let fail = |why: String| ImportError::Model(format!("graph input '{label}' {why}"));
    let element = element_type(tensor.elem_type).map_err(fail)?;
    let dims = tensor
        .shape
        .as_ref()
        .map(|s| s.dim.as_slice())
        .unwrap_or_default();
    if let Some(shape) = given {
        // A declared type without a shape takes the given one whole.
        if tensor.shape.is_none() {
            return Ok(TensorType::new(shape.to_vec(), element));
        }
        if shape.len() != dims.len() {
            return Err(fail(format!(
                "has rank {}, but --input-shape gives {}",
                dims.len(),
                shape.len()
            )));
        }
    }
    let mut shape = Vec::with_capacity(dims.len());
    for (i, dim) in dims.iter().enumerate() {
        let fixed = match &dim.value {
            Some(DimensionValue::DimValue(v)) if *v >= 0 => Some(*v as u64),
            Some(DimensionValue::DimValue(v)) => {
                return Err(fail(format!("has a negative dimension {v}")))
            }
            _ => None,
        };
        let d = match (fixed, given) {
            (Some(f), Some(g)) if g[i] != f => {
                return Err(fail(format!(
                    "has dimension {i} of {f}, but --input-shape gives {}",
                    g[i]
                )))
            }
            (Some(f), _) => f,
            (None, Some(g)) => g[i],
            (None, None) => {
                let dim_label = match &dim.value {
                    Some(DimensionValue::DimParam(p)) if !p.is_empty() => format!("'{p}'"),
                    _ => "unknown".into(),
                };
                notes.push(format!(
                    "input '{label}': dimension {i} ({dim_label}) set to 1; choose it with --input-shape {label}=...",
                ));
                1
            }
        };
        shape.push(d);
    }
    Ok(TensorType::new(shape, element))
}

/// Tensor type `tensor`, a tensor of strings taken as one of their ids; and whether it was.
fn string_ids(tensor: &TensorTypeProto) -> (TensorTypeProto, bool) {
    let strings = tensor.elem_type == DataType::String as i32;
    let mut ids = tensor.clone();
    if strings {
        ids.elem_type = DataType::Int64 as i32;
    }
    (ids, strings)
}

/// The function's parameters for graph input `name` of type `ty`, shaped by `given`:
/// one for a tensor, one per element for a sequence, those of its value for an optional
/// that holds one. Returns the value the graph sees.
fn graph_input(
    g: &mut Graph,
    name: &str,
    ty: Option<&TypeProto>,
    given: Option<&InputShape>,
    inputs: &mut Vec<GraphInput>,
    notes: &mut Vec<String>,
) -> Result<Item, ImportError> {
    let fail = |why: String| ImportError::Model(format!("graph input '{name}' {why}"));
    let param = |g: &mut Graph, inputs: &mut Vec<GraphInput>, element, ty, strings| {
        let param_name = match element {
            Some(i) => format!("{name}_{i}"),
            None => name.to_string(),
        };
        let (value, param) = g.param(&param_name, ty);
        inputs.push(GraphInput {
            onnx_name: name.to_string(),
            element,
            param,
            strings,
        });
        value
    };
    match (ty.and_then(|t| t.value.as_ref()), given) {
        (Some(TypeValue::OptionalType(_)), Some(InputShape::Absent)) => Ok(Item::Optional(None)),
        (_, Some(InputShape::Absent)) => Err(fail(
            "is not optional, but --input-shape gives it as none".into(),
        )),
        (Some(TypeValue::TensorType(tensor)), None | Some(InputShape::Tensor(_))) => {
            let shape = match given {
                Some(InputShape::Tensor(shape)) => Some(shape.as_slice()),
                _ => None,
            };
            let (tensor, strings) = string_ids(tensor);
            let ty = tensor_type(name, &tensor, shape, notes)?;
            let value = param(g, inputs, None, ty, strings);
            Ok(if strings {
                Item::Strings(value)
            } else {
                Item::Tensor(value)
            })
        }
        (Some(TypeValue::TensorType(_)), Some(InputShape::Sequence(_))) => Err(fail(
            "is a tensor, but --input-shape gives a sequence".into(),
        )),
        (Some(TypeValue::SequenceType(sequence)), Some(InputShape::Sequence(shapes))) => {
            let Some(TypeValue::TensorType(tensor)) =
                sequence.elem_type.as_ref().and_then(|t| t.value.as_ref())
            else {
                return Err(fail(
                    "is a sequence of values other than tensors (tessera takes sequences of \
                     tensors)"
                        .into(),
                ));
            };
            let mut elements = Vec::with_capacity(shapes.len());
            for (i, shape) in shapes.iter().enumerate() {
                let ty = tensor_type(&element_label(name, Some(i)), tensor, Some(shape), notes)?;
                elements.push(param(g, inputs, Some(i), ty, false));
            }
            Ok(Item::Sequence(elements))
        }
        (Some(TypeValue::SequenceType(_)), _) => Err(fail(
            "is a sequence; tessera fixes its length at import time: give its elements' \
             shapes with --input-shape NAME=[DxD,...] ([] for an empty one)"
                .into(),
        )),
        (Some(TypeValue::OptionalType(optional)), _) => {
            if given.is_none() {
                notes.push(format!(
                    "input '{name}': an optional, taken to hold a value; --input-shape {name}=none \
                     imports it empty"
                ));
            }
            let inner = graph_input(g, name, optional.elem_type.as_deref(), given, inputs, notes)?;
            Ok(Item::Optional(Some(Box::new(inner))))
        }
        _ => Err(fail(
            "is neither a tensor, a sequence nor an optional (tessera takes those)".into(),
        )),
    }
}

/// Imports `model` through the ops of `registry`.
pub fn import(
    model: &ModelProto,
    options: &ImportOptions,
    registry: &Registry,
) -> Result<Imported, ImportError> {
    let graph = model
        .graph
        .as_ref()
        .ok_or_else(|| ImportError::Model("the model has no graph".into()))?;
    let opsets: HashMap<String, i64> = model
        .opset_import
        .iter()
        .map(|o| {
            let domain = if is_default_domain(&o.domain) {
                ""
            } else {
                o.domain.as_str()
            };
            (domain.to_string(), o.version)
        })
        .collect();
    for name in options
        .input_shapes
        .keys()
        .chain(options.bound_inputs.keys())
    {
        if !graph.input.iter().any(|i| &i.name == name) {
            return Err(ImportError::Model(format!(
                "'{name}' is not an input of the graph"
            )));
        }
    }

    let mut g = Graph::new(registry, &function_name(&graph.name), &options.side_file);
    let mut values = Scope::new();
    let mut notes = Vec::new();
    for init in &graph.initializer {
        let value = initializer(&mut g, init)?;
        values.insert(init.name.clone(), value);
    }
    let mut inputs = Vec::new();
    for info in &graph.input {
        if values.contains_key(&info.name) {
            continue; // An initializer that old opsets also list as an input: a weight.
        }
        if let Some(tensor) = options.bound_inputs.get(&info.name) {
            let value = g.named_constant(tensor.clone(), &info.name);
            values.insert(info.name.clone(), Item::Tensor(value));
            continue;
        }
        let value = graph_input(
            &mut g,
            &info.name,
            info.r#type.as_ref(),
            options.input_shapes.get(&info.name),
            &mut inputs,
            &mut notes,
        )?;
        values.insert(info.name.clone(), value);
    }

    let mut nodes = NodeConverter::new(g, opsets);
    nodes.convert(&graph.node, &mut values)?;
    let (mut g, unsupported) = nodes.finish();
    if !unsupported.is_empty() {
        return Err(ImportError::Unsupported(unsupported));
    }
    let mut outputs = Vec::new();
    let mut results = Vec::new();
    for info in &graph.output {
        let value = values.get(&info.name).cloned().ok_or_else(|| {
            ImportError::Model(format!(
                "graph output '{}' is defined by no node",
                info.name
            ))
        })?;
        let tensors = value.tensors();
        let contents = match &value {
            Item::Optional(Some(inner)) => inner,
            other => other,
        };
        let sequence = matches!(contents, Item::Sequence(_));
        for (i, tensor) in tensors.into_iter().enumerate() {
            outputs.push(GraphOutput {
                label: element_label(&info.name, sequence.then_some(i)),
                strings: matches!(contents, Item::Strings(_)),
            });
            results.push(tensor);
        }
    }
    if results.is_empty() {
        return Err(ImportError::Model(
            "the graph has no outputs (an empty sequence or optional output has no tensors)".into(),
        ));
    }
    g.set_hint("output");
    let strings = g.strings.clone();
    let (func, weights) = g.finish(&results).map_err(|e| match e {
        NodeError::Unsupported(m) | NodeError::Invalid(m) => ImportError::Model(m),
    })?;
    let built = Module { funcs: vec![func] };
    let text = print_module(&built);
    let file = SourceFile::new(options.source_name.clone(), text.clone());
    let module = load_with(&file, 0..text.len(), registry, &weights)
        .map_err(|d| ImportError::Verify(render_all(&d, &file)))?;
    Ok(Imported {
        module,
        text,
        weights,
        inputs,
        outputs,
        strings,
        notes,
    })
}
