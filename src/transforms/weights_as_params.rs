//! Weights as parameters: every side-file constant (`external<...>`) of a function that no
//! other function calls becomes a parameter of that function, appended after its own in the
//! order the constants appear, so the same compiled code can run with other weights (the
//! default, constants, lets the compiler fold and pre-pack them instead).

use crate::attr::DenseValue;
use crate::exec::bytes::decode;
use crate::exec::tensor::Tensor;
use crate::ir::{Module, OpKind};

/// `module` with the side-file constants of its uncalled functions made parameters, and for
/// each function the values those new parameters held (empty for the others).
pub fn weights_as_params(module: &Module) -> (Module, Vec<Vec<Tensor>>) {
    let called: Vec<bool> = (0..module.funcs.len())
        .map(|f| {
            module.funcs.iter().any(|g| {
                g.ops
                    .iter()
                    .any(|op| matches!(op.kind, OpKind::Call(c) if c == f))
            })
        })
        .collect();
    let mut weights = Vec::with_capacity(module.funcs.len());
    let mut out = module.clone();
    for (func, &is_called) in out.funcs.iter_mut().zip(&called) {
        let mut values = Vec::new();
        if !is_called {
            let mut kept = Vec::with_capacity(func.ops.len());
            for op in std::mem::take(&mut func.ops) {
                match (&op.literal, op.operands.is_empty(), op.results.as_slice()) {
                    (Some(DenseValue::External(tensor)), true, &[result]) => {
                        values.push(decode(&func.value(result).ty, &tensor.bytes));
                        func.params.push(result);
                    }
                    _ => kept.push(op),
                }
            }
            func.ops = kept;
        }
        weights.push(values);
    }
    (out, weights)
}
