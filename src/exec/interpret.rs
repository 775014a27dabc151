//! The reference interpreter: runs a function of a verified module on host tensors, op by op,
//! with each op's [`Evaluate`](crate::exec::evaluate::Evaluate) semantics.

use crate::dialect::OpDef;
use crate::exec::evaluate::{EvalContext, EvalError};
use crate::exec::tensor::Tensor;
use crate::ir::{Func, Module, OpKind, Operation, ValueId};
use crate::types::TensorType;

/// The most elements one value may have: larger results are refused with an [`EvalError`]
/// instead of exhausting the host's memory (2^28 elements are 2 GiB as f64).
pub const MAX_ELEMENTS: u64 = 1 << 28;

/// Runs function `func` (an index into `module.funcs`) on `inputs` and returns its results.
///
/// The inputs must match the signature: as many as the parameters, each of the parameter's
/// type, with elements that fit it (see [`Tensor::inconsistency`]); otherwise the error names
/// the parameter. Calls run the callee the same way (the verifier rules out call cycles).
/// Every result an op returns is checked against the type the verifier inferred.
pub fn interpret(
    module: &Module,
    func: usize,
    inputs: &[Tensor],
) -> Result<Vec<Tensor>, EvalError> {
    interpret_adjusting(module, func, inputs, &mut |_, _| {})
}

/// A dialect op the interpreter has just evaluated, as [`interpret_adjusting`]'s hook sees it:
/// its definition and what it was evaluated on, so that the hook can evaluate it again.
pub struct Evaluated<'e, 'a> {
    /// The op.
    pub def: &'static dyn OpDef,
    /// Its operands, attributes and result types.
    pub ctx: &'e EvalContext<'a>,
}

/// What [`interpret_adjusting`] calls on the results of every dialect op.
pub type Adjust<'h> = dyn FnMut(&mut [Tensor], &Evaluated<'_, '_>) + 'h;

/// [`interpret`], with `adjust` applied to the results of every dialect op (in callees too)
/// before later ops read them: the sensitivity analysis moves each one by a rounding.
pub fn interpret_adjusting(
    module: &Module,
    func: usize,
    inputs: &[Tensor],
    adjust: &mut Adjust<'_>,
) -> Result<Vec<Tensor>, EvalError> {
    let f = module.funcs.get(func).ok_or_else(|| {
        EvalError(format!(
            "no function at index {func}: the module has {}",
            module.funcs.len()
        ))
    })?;
    check_inputs(f, inputs)?;
    run(module, f, inputs, adjust)
}

/// Checks `inputs` against the parameters of `f`.
fn check_inputs(f: &Func, inputs: &[Tensor]) -> Result<(), EvalError> {
    if inputs.len() != f.params.len() {
        return Err(EvalError(format!(
            "function @{} takes {} inputs, but {} were given",
            f.name,
            f.params.len(),
            inputs.len()
        )));
    }
    for (&param, input) in f.params.iter().zip(inputs) {
        let info = f
            .values
            .get(param.index())
            .ok_or_else(|| missing_value(f, param))?;
        if input.ty != info.ty {
            return Err(EvalError(format!(
                "input '{}' has type {}, but the parameter has type {}",
                info.name, input.ty, info.ty
            )));
        }
        if let Some(problem) = input.inconsistency() {
            return Err(EvalError(format!("input '{}' {problem}", info.name)));
        }
    }
    Ok(())
}

/// Evaluates the body of `f` on checked inputs, each op's results passed through `adjust`.
fn run(
    module: &Module,
    f: &Func,
    inputs: &[Tensor],
    adjust: &mut Adjust<'_>,
) -> Result<Vec<Tensor>, EvalError> {
    let mut values: Vec<Option<Tensor>> = vec![None; f.values.len()];
    for (&param, input) in f.params.iter().zip(inputs) {
        *slot(&mut values, f, param)? = Some(input.clone());
    }
    for op in &f.ops {
        let results = {
            let operands = op
                .operands
                .iter()
                .map(|&id| defined(&values, f, id))
                .collect::<Result<Vec<&Tensor>, EvalError>>()?;
            let result_types = op
                .results
                .iter()
                .map(|&id| value_type(f, id).cloned())
                .collect::<Result<Vec<TensorType>, EvalError>>()?;
            let results = evaluate_op(module, f, op, &operands, &result_types, adjust)?;
            check_results(f, op, &results, &result_types)?;
            results
        };
        for (&id, result) in op.results.iter().zip(results) {
            *slot(&mut values, f, id)? = Some(result);
        }
    }
    f.returns
        .iter()
        .map(|&id| defined(&values, f, id).cloned())
        .collect()
}

/// The results of one op of `f`.
fn evaluate_op(
    module: &Module,
    f: &Func,
    op: &Operation,
    operands: &[&Tensor],
    result_types: &[TensorType],
    adjust: &mut Adjust<'_>,
) -> Result<Vec<Tensor>, EvalError> {
    match op.kind {
        OpKind::Dialect(def) => {
            let name = def.schema().full_name();
            for ty in result_types {
                if ty.num_elements().is_none_or(|n| n > MAX_ELEMENTS) {
                    return Err(EvalError(format!(
                        "in @{}: '{name}' would produce {ty}, more than the interpreter's limit of {MAX_ELEMENTS} elements",
                        f.name
                    )));
                }
            }
            let ctx = EvalContext {
                schema: def.schema(),
                operands,
                attrs: &op.attrs,
                literal: op.literal.as_ref(),
                result_types,
            };
            let mut results = def
                .evaluate(&ctx)
                .map_err(|e| EvalError(format!("in @{}: '{name}': {}", f.name, e.0)))?;
            adjust(&mut results, &Evaluated { def, ctx: &ctx });
            Ok(results)
        }
        OpKind::Call(callee) => {
            let g = module.funcs.get(callee).ok_or_else(|| {
                EvalError(format!(
                    "in @{}: a call names function #{callee}, which does not exist",
                    f.name
                ))
            })?;
            let inputs: Vec<Tensor> = operands.iter().map(|&t| t.clone()).collect();
            check_inputs(g, &inputs)?;
            run(module, g, &inputs, adjust)
        }
    }
}

/// Checks that an op returned the values its verified types promise.
fn check_results(
    f: &Func,
    op: &Operation,
    results: &[Tensor],
    result_types: &[TensorType],
) -> Result<(), EvalError> {
    let name = match op.kind {
        OpKind::Dialect(def) => format!("'{}'", def.schema().full_name()),
        OpKind::Call(callee) => format!("the call of function #{callee}"),
    };
    let internal = |what: String| {
        EvalError(format!(
            "in @{}: {name} {what} (an interpreter bug)",
            f.name
        ))
    };
    if results.len() != result_types.len() {
        return Err(internal(format!(
            "returned {} results instead of {}",
            results.len(),
            result_types.len()
        )));
    }
    for (i, (result, ty)) in results.iter().zip(result_types).enumerate() {
        if &result.ty != ty {
            return Err(internal(format!(
                "returned {} as result #{i} instead of {ty}",
                result.ty
            )));
        }
        if let Some(problem) = result.inconsistency() {
            return Err(internal(format!("result #{i} {problem}")));
        }
    }
    Ok(())
}

/// The type of value `id` of `f`.
fn value_type(f: &Func, id: ValueId) -> Result<&TensorType, EvalError> {
    f.values
        .get(id.index())
        .map(|info| &info.ty)
        .ok_or_else(|| missing_value(f, id))
}

/// The value `id` of `f` in its table of values, which an earlier op or a parameter defined.
fn defined<'v>(
    values: &'v [Option<Tensor>],
    f: &Func,
    id: ValueId,
) -> Result<&'v Tensor, EvalError> {
    values
        .get(id.index())
        .and_then(Option::as_ref)
        .ok_or_else(|| missing_value(f, id))
}

/// The slot of value `id` in the table of values of `f`.
fn slot<'v>(
    values: &'v mut [Option<Tensor>],
    f: &Func,
    id: ValueId,
) -> Result<&'v mut Option<Tensor>, EvalError> {
    values
        .get_mut(id.index())
        .ok_or_else(|| missing_value(f, id))
}

/// A value that a verified module would have defined.
fn missing_value(f: &Func, id: ValueId) -> EvalError {
    EvalError(format!(
        "in @{}: value #{} is used but not defined (the module was not verified)",
        f.name, id.0
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::Registry;
    use crate::exec::tensor::TensorData;
    use crate::frontend::load;
    use crate::source::SourceFile;
    use crate::types::ElementType;

    fn module(text: &str) -> Module {
        let file = SourceFile::new("test.tsr", text);
        load(&file, 0..text.len(), &Registry::new()).expect("valid module")
    }

    fn f32s(shape: &[u64], values: &[f64]) -> Tensor {
        Tensor::from_f64(
            &TensorType::new(shape.to_vec(), ElementType::F32),
            values.iter().copied(),
        )
    }

    const CALLS: &str = "
func @id(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func @swap(%a: tensor<2xf32>, %b: tensor<i32>) -> (tensor<i32>, tensor<2xf32>, tensor<2xf32>) {
  %c = call @id(%a) : tensor<2xf32>
  %d = call @id(%c) : tensor<2xf32>
  return %b, %d, %a : tensor<i32>, tensor<2xf32>, tensor<2xf32>
}
";

    #[test]
    fn calls_and_multiple_results() {
        let m = module(CALLS);
        let a = f32s(&[2], &[1.5, -2.0]);
        let b = Tensor {
            ty: TensorType::new(vec![], ElementType::I32),
            data: TensorData::Int(vec![7]),
        };
        let results = interpret(&m, 1, &[a.clone(), b.clone()]).expect("runs");
        assert_eq!(results, vec![b, a.clone(), a]);
    }

    #[test]
    fn inputs_are_checked_against_the_signature() {
        let m = module(CALLS);
        let error = |inputs: &[Tensor]| interpret(&m, 0, inputs).expect_err("refused").0;
        assert_eq!(error(&[]), "function @id takes 1 inputs, but 0 were given");
        assert_eq!(
            error(&[f32s(&[4], &[0.0; 4])]),
            "input 'x' has type tensor<4xf32>, but the parameter has type tensor<2xf32>"
        );
        let short = Tensor {
            ty: TensorType::new(vec![2], ElementType::F32),
            data: TensorData::Float(vec![1.0]),
        };
        assert_eq!(
            error(&[short]),
            "input 'x' holds 1 elements, but its type tensor<2xf32> has 2"
        );
        let unrounded = Tensor {
            ty: TensorType::new(vec![2], ElementType::F32),
            data: TensorData::Float(vec![1.0, 0.1]),
        };
        assert_eq!(
            error(&[unrounded]),
            "input 'x' has element 1 (1e-1), which is not a value of f32"
        );
        assert_eq!(
            interpret(&m, 5, &[]).expect_err("no such function").0,
            "no function at index 5: the module has 2"
        );
    }
}
