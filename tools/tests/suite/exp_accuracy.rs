//! The compiled f32 exp (tessera's polynomial, `approximateExp` in
//! src/mlir/pipeline/cxx/polynomial_approximation.cpp) against f64 exp: within its documented
//! 1.26 ulp over the range where the result is a normal float, 0 below it, inf above, NaN
//! kept, on vectors and on the scalar tail of a row whose length is no multiple of the lanes.

use crate::common::compiled_code_lock;
use tessera::exec::tensor::{Tensor, TensorData};
use tessera::frontend::{decode, load};
use tessera::mlir::cpu::compile::{compile, jit_options};
use tessera::mlir::pipeline::Pipeline;
use tessera::mlir::MlirContext;
use tessera::types::{ElementType, TensorType};
use tessera_tools::registry;

/// The most ulps the compiled exp may be off (1.26 measured over every eighth float).
const MAX_ULPS: f64 = 1.3;

/// `x`'s error in ulps of the true exp (ulps of a normal float; the smallest normal's ulp
/// below it).
fn ulps(got: f32, x: f32) -> f64 {
    let want = (x as f64).exp();
    let exponent = want.log2().floor().max(-126.0);
    (got as f64 - want).abs() / 2f64.powf(exponent - 23.0)
}

#[test]
fn compiled_exp_is_within_its_ulps_and_keeps_special_values() {
    let _compiled = compiled_code_lock();
    // Every 997th float of [-86.5, 88.72] (a prime stride, so the low bits take every
    // pattern), 1003 per row: vectors, then a scalar tail.
    let negative = ((-0.0f32).to_bits()..=(-86.5f32).to_bits()).step_by(997);
    let positive = (0.0f32.to_bits()..=88.72f32.to_bits()).step_by(997);
    let mut inputs: Vec<f32> = negative.chain(positive).map(f32::from_bits).collect();
    let specials = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -90.0,
        89.0,
        0.0,
        -0.0,
    ];
    inputs.extend(specials);
    let columns = 1003;
    let rows = inputs.len().div_ceil(columns);
    inputs.resize(rows * columns, 0.5);
    let text = format!(
        "func @f(%x: tensor<{rows}x{columns}xf32>) -> tensor<{rows}x{columns}xf32> {{\n  \
         %y = array.exp %x\n  return %y : tensor<{rows}x{columns}xf32>\n}}\n"
    );
    let (file, _) = decode("exp.tsr", text.as_bytes());
    let module = load(&file, 0..file.text().len(), &registry()).expect("the model is valid");
    let context = MlirContext::new();
    let pipeline = Pipeline::preset(3, true);
    let (jit, _) = compile(
        &context,
        &module,
        &file,
        &pipeline,
        jit_options(&module, &pipeline),
    )
    .expect("exp compiles");
    let ty = TensorType::new(vec![rows as u64, columns as u64], ElementType::F32);
    let input = Tensor::from_f64(&ty, inputs.iter().map(|&v| v as f64));
    let output = jit.call("f", &[input]).expect("the call runs");
    let TensorData::Float(got) = &output[0].data else {
        panic!("exp returns floats");
    };
    let mut worst = (0.0, 0.0f32);
    for (&x, &y) in inputs.iter().zip(got) {
        let y = y as f32;
        match x {
            x if x.is_nan() => assert!(y.is_nan(), "exp(NaN) = {y}"),
            x if x < -86.6 => assert_eq!(y, 0.0, "exp({x})"),
            x if x > 88.73 => assert_eq!(y, f32::INFINITY, "exp({x})"),
            x => {
                let error = ulps(y, x);
                if error > worst.0 {
                    worst = (error, x);
                }
            }
        }
    }
    assert!(
        worst.0 <= MAX_ULPS,
        "exp({}) is {:.2} ulps off (at most {MAX_ULPS})",
        worst.1,
        worst.0
    );
}
