//! An ONNX model to a verified tessera module: the graph's inputs become parameters (their
//! symbolic dimensions fixed), initializers constants, each node a few tessera ops through
//! its converter, the graph's outputs the results. The module is then printed and verified
//! from that text exactly as a written `.tsr` file is (its large constants `external<...>`
//! literals of a side file held in memory until it is written).

use crate::graph::{Graph, NodeError};
use crate::nodes::{NodeConverter, Scope};
use crate::proto::{DimensionValue, ModelProto, Value as TypeValue, ValueInfoProto};
use crate::read::{read_model, ReadError};
use crate::tensor::{element_type, tensor_of};
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

/// How to import.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// Shapes for inputs with symbolic or unknown dimensions, by input name.
    pub input_shapes: BTreeMap<String, Vec<u64>>,
    /// The side file the module's large constants refer to (relative to the `.tsr`).
    pub side_file: String,
    /// The name the printed module is verified under (in messages).
    pub source_name: String,
    /// Graph inputs given values at import time: constants, not parameters (shapes, axes or
    /// indices that a model takes as inputs but tessera needs to know).
    pub bound_inputs: BTreeMap<String, Tensor>,
}

/// A graph input and the parameter it became.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphInput {
    /// The input's name in the model.
    pub onnx_name: String,
    /// The parameter's name (without `%`).
    pub param: String,
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
    /// The graph's output names in result order.
    pub outputs: Vec<String>,
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

/// The type of graph input `info`, its unknown dimensions from `options` or 1 (noted).
fn input_type(
    info: &ValueInfoProto,
    options: &ImportOptions,
    notes: &mut Vec<String>,
) -> Result<TensorType, ImportError> {
    let fail = |why: String| ImportError::Model(format!("graph input '{}' {why}", info.name));
    let Some(TypeValue::TensorType(tensor)) = info.r#type.as_ref().and_then(|t| t.value.as_ref())
    else {
        return Err(fail(
            "is not a tensor (tessera imports tensor inputs)".into(),
        ));
    };
    let element = element_type(tensor.elem_type).map_err(fail)?;
    let dims = tensor
        .shape
        .as_ref()
        .map(|s| s.dim.as_slice())
        .unwrap_or_default();
    let given = options.input_shapes.get(&info.name);
    if let Some(shape) = given {
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
                let label = match &dim.value {
                    Some(DimensionValue::DimParam(p)) if !p.is_empty() => format!("'{p}'"),
                    _ => "unknown".into(),
                };
                notes.push(format!(
                    "input '{}': dimension {i} ({label}) set to 1; choose it with --input-shape {}=...",
                    info.name, info.name
                ));
                1
            }
        };
        shape.push(d);
    }
    Ok(TensorType::new(shape, element))
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
        let tensor =
            tensor_of(init, TENSOR_LIMIT).map_err(|e| ImportError::Model(e.to_string()))?;
        let value = g.named_constant(tensor, &init.name);
        values.insert(init.name.clone(), value);
    }
    let mut inputs = Vec::new();
    for info in &graph.input {
        if values.contains_key(&info.name) {
            continue; // An initializer that old opsets also list as an input: a weight.
        }
        if let Some(tensor) = options.bound_inputs.get(&info.name) {
            let value = g.named_constant(tensor.clone(), &info.name);
            values.insert(info.name.clone(), value);
            continue;
        }
        let ty = input_type(info, options, &mut notes)?;
        let (value, param) = g.param(&info.name, ty);
        values.insert(info.name.clone(), value);
        inputs.push(GraphInput {
            onnx_name: info.name.clone(),
            param,
        });
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
        results.push(value);
        outputs.push(info.name.clone());
    }
    if results.is_empty() {
        return Err(ImportError::Model("the graph has no outputs".into()));
    }
    g.set_hint("output");
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
        notes,
    })
}
