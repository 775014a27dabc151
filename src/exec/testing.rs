//! Helpers for tests of op semantics: tensors written as literals, evaluating one op through the
//! real front end and interpreter, float comparisons.
//!
//! Each dialect tests its `Evaluate` implementations with these, passing the [`Registry`] that
//! holds its ops (the core names no dialect). The helpers panic with a message that says what
//! differed; the `assert_*` helpers and [`eval`] report the caller's line (`#[track_caller]`).

use crate::diag::render_all;
use crate::dialect::Registry;
use crate::exec::evaluate::EvalError;
use crate::exec::interpret::interpret;
use crate::exec::tensor::{Tensor, TensorData};
use crate::frontend::load;
use crate::source::SourceFile;
use crate::types::{ElementType, TensorType};

/// The type written `2x3xf32` (`f32` for rank 0, `0x4xf32` for an empty tensor).
///
/// # Panics
/// When `text` is not dimensions and an element type joined by `x`.
#[track_caller]
pub fn ty(text: &str) -> TensorType {
    let mut parts: Vec<&str> = text.split('x').collect();
    let Some(element) = parts.pop().and_then(ElementType::from_name) else {
        panic!("'{text}' does not end in an element type");
    };
    let mut shape = Vec::with_capacity(parts.len());
    for d in parts {
        match d.parse() {
            Ok(d) => shape.push(d),
            Err(_) => panic!("'{d}' in '{text}' is not a dimension"),
        }
    }
    TensorType::new(shape, element)
}

/// A float tensor of the type written `t` (see [`ty`]) holding `values` as given (not rounded,
/// not checked against the shape: the interpreter checks its inputs).
#[track_caller]
pub fn floats(t: &str, values: &[f64]) -> Tensor {
    Tensor {
        ty: ty(t),
        data: TensorData::Float(values.to_vec()),
    }
}

/// An integer tensor of the type written `t` holding `values`.
#[track_caller]
pub fn ints(t: &str, values: &[i64]) -> Tensor {
    Tensor {
        ty: ty(t),
        data: TensorData::Int(values.to_vec()),
    }
}

/// A boolean (`i1`) tensor of the type written `t` holding `values`.
#[track_caller]
pub fn bools(t: &str, values: &[bool]) -> Tensor {
    Tensor {
        ty: ty(t),
        data: TensorData::Bool(values.to_vec()),
    }
}

/// Function 0 of the module `text`, loaded with `registry`, run by the interpreter on
/// `inputs`.
///
/// # Panics
/// When `text` does not load: the message is the rendered diagnostics.
#[track_caller]
pub fn try_run(
    registry: &Registry,
    text: &str,
    inputs: &[Tensor],
) -> Result<Vec<Tensor>, EvalError> {
    let file = SourceFile::new("test.tsr", text);
    match load(&file, 0..text.len(), registry) {
        Ok(module) => interpret(&module, 0, inputs),
        Err(diagnostics) => panic!("{}", render_all(&diagnostics, &file)),
    }
}

/// The result of `%y = <op> : <result>` (ops of `registry`), the one op of a function whose
/// parameters `%a`, `%b`, `%c`, ... are bound to `inputs` in order.
///
/// # Panics
/// When the function does not load (the diagnostics) or does not run (the op and the error),
/// or for more than 26 inputs.
#[track_caller]
pub fn eval(registry: &Registry, op: &str, result: &str, inputs: &[Tensor]) -> Tensor {
    let mut params = Vec::with_capacity(inputs.len());
    for (i, input) in inputs.iter().enumerate() {
        let Some(name) = u8::try_from(i).ok().filter(|&i| i < 26) else {
            panic!(
                "{op}: {} inputs, more than the 26 names %a to %z",
                inputs.len()
            );
        };
        params.push(format!("%{}: {}", char::from(b'a' + name), input.ty));
    }
    let r = ty(result);
    let text = format!(
        "func @f({}) -> {r} {{\n  %y = {op} : {r}\n  return %y : {r}\n}}\n",
        params.join(", ")
    );
    match try_run(registry, &text, inputs) {
        Ok(mut results) => results.remove(0),
        Err(e) => panic!("{op}: {e}"),
    }
}

/// The float elements of `actual`, after checking that its type is the one written `t`.
#[track_caller]
fn float_values<'t>(actual: &'t Tensor, t: &str, expected: &[f64]) -> &'t [f64] {
    assert_eq!(actual.ty, ty(t), "the result's type");
    let TensorData::Float(values) = &actual.data else {
        panic!("not floats: {actual:?}");
    };
    assert_eq!(values.len(), expected.len(), "{values:?}");
    values
}

/// `actual` has the type written `t` and exactly the float `expected` (bits compared, so the
/// sign of zero counts; any NaN matches any NaN).
#[track_caller]
pub fn assert_floats(actual: &Tensor, t: &str, expected: &[f64]) {
    let values = float_values(actual, t, expected);
    for (i, (&a, &e)) in values.iter().zip(expected).enumerate() {
        let same = a.to_bits() == e.to_bits() || (a.is_nan() && e.is_nan());
        assert!(same, "element {i}: {a:e}, expected {e:e} (all: {values:?})");
    }
}

/// `actual` has the type written `t` and the float `expected` within 1e-12 relative (equal
/// infinities and zeros, NaN for NaN).
#[track_caller]
pub fn assert_close(actual: &Tensor, t: &str, expected: &[f64]) {
    let values = float_values(actual, t, expected);
    for (i, (&a, &e)) in values.iter().zip(expected).enumerate() {
        let close = a == e || (a.is_nan() && e.is_nan()) || (a - e).abs() <= 1e-12 * e.abs();
        assert!(
            close,
            "element {i}: {a:e}, expected {e:e} (all: {values:?})"
        );
    }
}

/// `actual` has the type written `t` and exactly the integer `expected`.
#[track_caller]
pub fn assert_ints(actual: &Tensor, t: &str, expected: &[i64]) {
    assert_eq!(actual.ty, ty(t), "the result's type");
    assert_eq!(actual.data, TensorData::Int(expected.to_vec()));
}

/// `actual` has the type written `t` and exactly the boolean `expected`.
#[track_caller]
pub fn assert_bools(actual: &Tensor, t: &str, expected: &[bool]) {
    assert_eq!(actual.ty, ty(t), "the result's type");
    assert_eq!(actual.data, TensorData::Bool(expected.to_vec()));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message of the panic in `f`.
    fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
        let payload = std::panic::catch_unwind(f).expect_err("panics");
        match payload.downcast::<String>() {
            Ok(message) => *message,
            Err(payload) => payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .unwrap_or_default(),
        }
    }

    #[test]
    fn types_are_written_as_in_tensor_types() {
        assert_eq!(ty("2x3xf32"), TensorType::new(vec![2, 3], ElementType::F32));
        assert_eq!(ty("i1"), TensorType::new(vec![], ElementType::I1));
        assert_eq!(
            ty("0x4xbf16"),
            TensorType::new(vec![0, 4], ElementType::BF16)
        );
        assert_eq!(
            panic_message(|| {
                ty("2x3");
            }),
            "'2x3' does not end in an element type"
        );
        assert_eq!(
            panic_message(|| {
                ty("2xnxf32");
            }),
            "'n' in '2xnxf32' is not a dimension"
        );
    }

    #[test]
    fn literals_hold_their_values() {
        assert_eq!(
            floats("2xf64", &[1.0, -0.5]).data,
            TensorData::Float(vec![1.0, -0.5])
        );
        assert_eq!(ints("i8", &[-3]).data, TensorData::Int(vec![-3]));
        assert_eq!(bools("1xi1", &[true]).ty, ty("1xi1"));
    }

    #[test]
    fn try_run_interprets_function_zero() {
        let text = "
func @f(%a: tensor<2xf32>, %b: tensor<i32>) -> (tensor<i32>, tensor<2xf32>) {
  return %b, %a : tensor<i32>, tensor<2xf32>
}
";
        let (a, b) = (floats("2xf32", &[1.5, 2.0]), ints("i32", &[7]));
        let results = try_run(&Registry::new(), text, &[a.clone(), b.clone()]).expect("runs");
        assert_eq!(results, vec![b, a]);
        let error = try_run(&Registry::new(), text, &[]).expect_err("refused");
        assert_eq!(error.0, "function @f takes 2 inputs, but 0 were given");
        let message = panic_message(|| {
            let _ = try_run(&Registry::new(), "not a module\n", &[]);
        });
        assert!(message.starts_with("test.tsr:"), "{message}");
    }

    #[test]
    fn eval_names_the_op_that_fails() {
        // The core has no op: an unknown one does not load, and the diagnostic says so.
        let message = panic_message(|| {
            eval(&Registry::new(), "d.op %a", "f32", &[floats("f32", &[1.0])]);
        });
        assert!(message.contains("d.op"), "{message}");
        let many = vec![floats("f32", &[1.0]); 27];
        assert_eq!(
            panic_message(|| {
                eval(&Registry::new(), "d.op", "f32", &many);
            }),
            "d.op: 27 inputs, more than the 26 names %a to %z"
        );
    }

    #[test]
    fn floats_compare_by_bits_or_within_1e_12() {
        let t = floats("3xf64", &[-0.0, f64::NAN, 1.0 + 1e-13]);
        assert_floats(&t, "3xf64", &[-0.0, -f64::NAN, 1.0 + 1e-13]);
        assert_close(&t, "3xf64", &[-0.0, f64::NAN, 1.0]);
        assert_eq!(
            panic_message(|| assert_floats(&t, "3xf64", &[0.0, f64::NAN, 1.0 + 1e-13])),
            format!(
                "element 0: -0e0, expected 0e0 (all: [-0.0, NaN, {:?}])",
                1.0 + 1e-13
            )
        );
        assert!(
            panic_message(|| assert_close(&t, "3xf64", &[0.0, 0.0, 1.0]))
                .starts_with("element 1: NaN, expected 0e0")
        );
        assert!(
            panic_message(|| assert_close(&t, "3xf32", &[0.0, 0.0, 1.0]))
                .contains("the result's type")
        );
        assert!(panic_message(|| assert_floats(&t, "3xf64", &[0.0])).contains("[-0.0, NaN"));
        assert!(
            panic_message(|| assert_floats(&ints("i8", &[1]), "i8", &[1.0]))
                .starts_with("not floats: ")
        );
    }

    #[test]
    fn ints_and_bools_compare_exactly() {
        assert_ints(&ints("2xi32", &[1, -2]), "2xi32", &[1, -2]);
        assert_bools(&bools("2xi1", &[true, false]), "2xi1", &[true, false]);
        assert!(
            panic_message(|| assert_ints(&ints("i32", &[1]), "i32", &[2])).contains("Int([1])")
        );
        assert!(
            panic_message(|| assert_bools(&bools("i1", &[true]), "1xi1", &[true]))
                .contains("the result's type")
        );
    }
}
