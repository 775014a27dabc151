//! A compiled function's interface, read from the verified module (its parameters' names and
//! types, its results' types), and why a call of it cannot run: shared by every target's
//! runtime, which checks inputs against it before anything reaches compiled code.

use crate::ir::Module;
use crate::types::TensorType;

/// A function's interface: parameter names and types, result types.
#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    /// The function's name.
    pub name: String,
    /// Parameter names (without `%`) and types.
    pub params: Vec<(String, TensorType)>,
    /// Result types, in return order.
    pub results: Vec<TensorType>,
}

impl Signature {
    /// The signatures of every function of `module`.
    pub fn of_module(module: &Module) -> Vec<Signature> {
        module
            .funcs
            .iter()
            .map(|f| Signature {
                name: f.name.clone(),
                params: f
                    .params
                    .iter()
                    .map(|&p| (f.value(p).name.clone(), f.value(p).ty.clone()))
                    .collect(),
                results: f.result_types.clone(),
            })
            .collect()
    }
}

/// Why a call could not run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// No function of that name.
    #[error("no function '@{name}' in the module (functions: {available})")]
    UnknownFunction {
        /// The name asked for.
        name: String,
        /// The names there are.
        available: String,
    },
    /// Wrong number of inputs.
    #[error("'@{func}' takes {expected} inputs, but {found} were given")]
    InputCount {
        /// The function.
        func: String,
        /// Its parameter count.
        expected: usize,
        /// The inputs given.
        found: usize,
    },
    /// An input of the wrong shape or element type.
    #[error("input '{name}' has type {found}, but '@{func}' expects {expected}")]
    InputType {
        /// The function.
        func: String,
        /// The parameter.
        name: String,
        /// Its type.
        expected: TensorType,
        /// The input's type.
        found: TensorType,
    },
    /// A buffer could not be allocated.
    #[error("cannot allocate a buffer for {0}")]
    Allocation(TensorType),
    /// The engine could not run the function.
    #[error("the compiled function '@{0}' cannot be invoked")]
    Invoke(String),
}

impl Signature {
    /// The signature of function `name` among `signatures`.
    pub fn find<'s>(signatures: &'s [Signature], name: &str) -> Result<&'s Signature, RunError> {
        signatures
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| RunError::UnknownFunction {
                name: name.to_string(),
                available: signatures
                    .iter()
                    .map(|s| format!("@{}", s.name))
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// Checks `inputs` against the parameters: count, then every type.
    pub fn check_inputs(&self, inputs: &[&TensorType]) -> Result<(), RunError> {
        if inputs.len() != self.params.len() {
            return Err(RunError::InputCount {
                func: self.name.clone(),
                expected: self.params.len(),
                found: inputs.len(),
            });
        }
        for ((param, expected), &found) in self.params.iter().zip(inputs) {
            if expected != found {
                return Err(RunError::InputType {
                    func: self.name.clone(),
                    name: param.clone(),
                    expected: expected.clone(),
                    found: found.clone(),
                });
            }
        }
        Ok(())
    }
}
