//! The noise floor of comparisons (`tessera::exec::sensitivity`) moves op results, not only
//! inputs: a difference of two values that round differently moves although the inputs the
//! two share could not move it.

use tessera::exec::interpret::interpret;
use tessera::exec::sensitivity::sensitivity;
use tessera::exec::tensor::Tensor;
use tessera::frontend::load;
use tessera::source::SourceFile;
use tessera::types::{ElementType, TensorType};
use tessera_tools::registry;

const TWO_EXPS: &str = "func @f(%x: tensor<64xf32>) -> tensor<64xf32> {
  %a = array.exp %x : tensor<64xf32>
  %b = array.exp %x : tensor<64xf32>
  %d = array.sub %a, %b : tensor<64xf32>
  return %d : tensor<64xf32>
}
";

#[test]
fn every_op_result_moves_by_one_rounding() {
    let file = SourceFile::new("two_exps.tsr", TWO_EXPS);
    let module = load(&file, 0..TWO_EXPS.len(), &registry()).expect("valid module");
    let ty = TensorType::new(vec![64], ElementType::F32);
    let x = Tensor::from_f64(&ty, (0..64).map(|i| 0.1 + i as f64 / 64.0));
    let reference = interpret(&module, 0, std::slice::from_ref(&x)).expect("runs");
    let moved = sensitivity(&module, 0, &[x], &reference).expect("perturbed runs");
    // exp(x) - exp(x) is 0 however x moves; moving each exp's result by one ulp (2^-22 for
    // values in [2, 4), e^1.08 ≈ 2.96 the largest) moves the difference by up to two, and
    // the difference's own move by one of its ulps adds a trifle.
    let ulps = moved[0] / 2f64.powi(-22);
    assert!(
        (1.0..2.001).contains(&ulps),
        "the difference moved by {} ulps of e^1.08",
        ulps
    );
}
