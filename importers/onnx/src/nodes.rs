//! A graph's nodes converted in order, each through its converter, in a scope of named
//! values (tensors, sequences, optionals); the bodies of control flow (`If`, `Loop`, `Scan`,
//! `SequenceMap`) are converted by the same, inline, in a scope that sees the enclosing one.
//! Nodes tessera cannot import are collected, not fatal, so a model lists them all at once;
//! what depends on them is skipped.

use crate::graph::{Graph, NodeError, Val};
use crate::import::{ImportError, UnsupportedNode, TENSOR_LIMIT};
use crate::item::Item;
use crate::node::Node;
use crate::ops::{converter, structured};
use crate::proto::{GraphProto, NodeProto};
use crate::strings::{self, StringRule};
use crate::tensor::{is_strings, strings_of, tensor_of};
use std::collections::{HashMap, HashSet};

/// The values visible to a node, by name.
pub type Scope = HashMap<String, Item>;

/// The most body nodes the import converts, every body of every control-flow node, each
/// unrolled iteration counted: nested loops multiply.
pub const MAX_BODY_NODES: u64 = 1 << 20;

/// Why a node yields no values.
#[derive(Debug)]
pub enum Failure {
    /// The node itself cannot be converted.
    Node(NodeError),
    /// A node of its body is invalid, or the body is.
    Body(ImportError),
    /// Nodes of its body cannot be imported (they are listed already).
    BodyUnsupported,
}

impl From<NodeError> for Failure {
    fn from(e: NodeError) -> Failure {
        Failure::Node(e)
    }
}

/// Converts nodes into the function being built.
pub struct NodeConverter<'r> {
    /// The function being built.
    pub g: Graph<'r>,
    /// The opset version of each domain the model imports (`""` the default one).
    opsets: HashMap<String, i64>,
    /// The nodes that cannot be imported, in the order met.
    unsupported: Vec<UnsupportedNode>,
    /// The values that depend on such nodes.
    poisoned: HashSet<String>,
    /// The labels of the control-flow nodes whose bodies are being converted, outermost
    /// first (each label names those it is inside).
    within: Vec<String>,
    /// The initializers of bodies converted so far, by the body's address: made constants
    /// once, however often a loop's body is unrolled.
    body_constants: HashMap<usize, Vec<(String, Item)>>,
    /// How many body nodes have been converted so far.
    body_nodes: u64,
}

/// `domain` as the opset table keys it: `""` for the default domain.
fn domain_key(domain: &str) -> &str {
    if domain == "ai.onnx" {
        ""
    } else {
        domain
    }
}

impl<'r> NodeConverter<'r> {
    /// Converts into `g`, with the model's opset imports.
    pub fn new(g: Graph<'r>, opsets: HashMap<String, i64>) -> NodeConverter<'r> {
        NodeConverter {
            g,
            opsets,
            unsupported: Vec::new(),
            poisoned: HashSet::new(),
            within: Vec::new(),
            body_constants: HashMap::new(),
            body_nodes: 0,
        }
    }

    /// The function built and the nodes that could not be imported.
    pub fn finish(self) -> (Graph<'r>, Vec<UnsupportedNode>) {
        (self.g, self.unsupported)
    }

    /// `node`'s label, with the control-flow nodes it is inside.
    fn label(&self, node: &Node) -> String {
        match self.within.last() {
            Some(outer) => format!("{} in the body of {outer}", node.label()),
            None => node.label(),
        }
    }

    /// Converts `nodes` in order, their outputs added to `scope`.
    pub fn convert(&mut self, nodes: &[NodeProto], scope: &mut Scope) -> Result<(), ImportError> {
        for proto in nodes {
            let key = domain_key(&proto.domain);
            let default_opset = self.opsets.get("").copied().unwrap_or(1);
            let node = Node {
                proto,
                opset: self.opsets.get(key).copied().unwrap_or(default_opset),
            };
            let poison = |poisoned: &mut HashSet<String>| {
                poisoned.extend(proto.output.iter().filter(|o| !o.is_empty()).cloned());
            };
            if proto.input.iter().any(|i| self.poisoned.contains(i)) {
                poison(&mut self.poisoned);
                continue;
            }
            let domain = if key.is_empty() { "ai.onnx" } else { key };
            let unsupported = |this: &Self, reason: String| UnsupportedNode {
                node: this.label(&node),
                domain: domain.to_string(),
                opset: node.opset,
                reason,
            };
            let flow = structured(&proto.op_type).filter(|_| key.is_empty());
            let convert = converter(&proto.op_type).filter(|_| key.is_empty());
            if flow.is_none() && convert.is_none() {
                let entry = unsupported(self, "tessera has no converter for this op".into());
                self.unsupported.push(entry);
                poison(&mut self.poisoned);
                continue;
            }
            let mut node_inputs = Vec::with_capacity(proto.input.len());
            for name in &proto.input {
                if name.is_empty() {
                    node_inputs.push(None);
                    continue;
                }
                let value = scope.get(name).cloned().ok_or_else(|| ImportError::Node {
                    node: self.label(&node),
                    message: format!(
                        "it uses '{name}', which no earlier node, input or initializer defines"
                    ),
                })?;
                node_inputs.push(Some(value));
            }
            self.g
                .set_hint(proto.output.first().map_or("v", String::as_str));
            let converted = match (flow, convert) {
                (Some(flow), _) => flow(self, &node, &node_inputs, scope),
                (None, Some(convert)) => {
                    let op = proto.op_type.as_str();
                    tensors(op, &node_inputs, &proto.input)
                        .and_then(|(tensors, of_strings)| {
                            let outputs = convert(&mut self.g, &node, &tensors)?;
                            Ok(outputs.into_iter().map(of_strings).collect())
                        })
                        .map_err(Failure::Node)
                }
                (None, None) => unreachable!("checked above"),
            };
            match converted {
                Ok(outputs) => {
                    for (name, value) in proto.output.iter().zip(outputs) {
                        if !name.is_empty() {
                            scope.insert(name.clone(), value);
                        }
                    }
                    if let Some(missing) = proto
                        .output
                        .iter()
                        .skip(1)
                        .find(|o| !o.is_empty() && !scope.contains_key(*o))
                    {
                        let entry = unsupported(
                            self,
                            format!("its output '{missing}' (tessera computes only the others)"),
                        );
                        self.unsupported.push(entry);
                        poison(&mut self.poisoned);
                    }
                }
                Err(Failure::Node(NodeError::Unsupported(reason))) => {
                    let entry = unsupported(self, reason);
                    self.unsupported.push(entry);
                    poison(&mut self.poisoned);
                }
                Err(Failure::BodyUnsupported) => poison(&mut self.poisoned),
                Err(Failure::Node(NodeError::Invalid(message))) => {
                    return Err(ImportError::Node {
                        node: self.label(&node),
                        message,
                    })
                }
                Err(Failure::Body(e)) => return Err(e),
            }
        }
        Ok(())
    }

    /// The values of `body`'s outputs, its nodes converted in a scope that is `outer` with
    /// its initializers and its inputs bound to `inputs` (for `node`, whose body it is).
    pub fn body(
        &mut self,
        node: &Node,
        body: &GraphProto,
        outer: &Scope,
        inputs: Vec<Item>,
    ) -> Result<Vec<Item>, Failure> {
        if body.input.len() != inputs.len() {
            return Err(Failure::Node(NodeError::Invalid(format!(
                "its body '{}' takes {} inputs, not {}",
                body.name,
                body.input.len(),
                inputs.len()
            ))));
        }
        self.body_nodes += body.node.len() as u64;
        if self.body_nodes > MAX_BODY_NODES {
            return Err(Failure::Node(NodeError::Unsupported(format!(
                "the model's control flow unrolls to more than {MAX_BODY_NODES} nodes, the most \
                 tessera converts"
            ))));
        }
        let mut scope = outer.clone();
        scope.extend(self.body_initializers(body)?);
        for (info, value) in body.input.iter().zip(inputs) {
            scope.insert(info.name.clone(), value);
        }
        let listed = self.unsupported.len();
        self.within.push(self.label(node));
        let converted = self.convert(&body.node, &mut scope);
        self.within.pop();
        converted.map_err(Failure::Body)?;
        if self.unsupported.len() > listed {
            return Err(Failure::BodyUnsupported);
        }
        body.output
            .iter()
            .map(|info| match scope.get(&info.name) {
                Some(value) => Ok(value.clone()),
                // It depends on a value of the enclosing graph that cannot be imported.
                None if self.poisoned.contains(&info.name) => Err(Failure::BodyUnsupported),
                None => Err(Failure::Node(NodeError::Invalid(format!(
                    "its body '{}' has output '{}', which none of its nodes defines",
                    body.name, info.name
                )))),
            })
            .collect()
    }

    /// `body`'s initializers as constants, by name.
    fn body_initializers(&mut self, body: &GraphProto) -> Result<Vec<(String, Item)>, Failure> {
        let address = body as *const GraphProto as usize;
        if let Some(constants) = self.body_constants.get(&address) {
            return Ok(constants.clone());
        }
        let mut constants = Vec::new();
        for init in &body.initializer {
            let value = initializer(&mut self.g, init).map_err(Failure::Body)?;
            constants.push((init.name.clone(), value));
        }
        self.body_constants.insert(address, constants.clone());
        Ok(constants)
    }
}

/// Initializer `init` as a constant of the function: a tensor, or a tensor of strings.
pub fn initializer(g: &mut Graph, init: &crate::proto::TensorProto) -> Result<Item, ImportError> {
    let error = |e: crate::tensor::TensorError| ImportError::Model(e.to_string());
    if is_strings(init) {
        let (shape, strings) = strings_of(init, TENSOR_LIMIT).map_err(error)?;
        return Ok(Item::Strings(
            g.string_constant(shape, &strings, &init.name),
        ));
    }
    let tensor = tensor_of(init, TENSOR_LIMIT).map_err(error)?;
    Ok(Item::Tensor(g.named_constant(tensor, &init.name)))
}

/// Makes an output of a tensor converter an item: a tensor, or a tensor of strings.
type OutputKind = fn(Val) -> Item;

/// A node's inputs as the tensors its converter takes, and what its outputs are: string
/// tensors, as their ids, go to the ops that move them (whose outputs are then strings) or
/// test them ([`strings::rule`]); an op of tensors given a sequence or an optional is an
/// invalid model.
fn tensors(
    op: &str,
    inputs: &[Option<Item>],
    names: &[String],
) -> Result<(Vec<Option<Val>>, OutputKind), NodeError> {
    let given = inputs.iter().flatten();
    let strings = given
        .clone()
        .filter(|i| matches!(i, Item::Strings(_)))
        .count();
    let outputs: fn(Val) -> Item =
        match (strings, strings::rule(op)) {
            (0, _) => Item::Tensor,
            (_, Some(StringRule::Keeps)) => Item::Strings,
            (n, Some(StringRule::Reads)) if n == given.count() => Item::Tensor,
            (_, Some(StringRule::Reads)) => {
                return Err(NodeError::Invalid(
                    "it compares strings with numbers".into(),
                ))
            }
            (_, None) => return Err(NodeError::Unsupported(
                "its input is a tensor of strings; tessera computes on strings only in the ops \
                 that move them or test them for equality (Concat, Equal, Expand, Gather, \
                 Reshape, Slice, Transpose, Where and others of their kind)"
                    .into(),
            )),
        };
    let values = inputs
        .iter()
        .zip(names)
        .map(|(item, name)| match item {
            Some(Item::Strings(v)) => Ok(Some(v.clone())),
            Some(item) => item.tensor(&format!("its input '{name}'")).map(Some),
            None => Ok(None),
        })
        .collect::<Result<_, _>>()?;
    Ok((values, outputs))
}
