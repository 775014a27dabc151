//! The noise floor of comparisons (`tessera::exec::sensitivity`) moves op results, not only
//! inputs: a difference of two values that round differently moves although the inputs the
//! two share could not move it; a sum of `n` terms moves by `sqrt(n)` roundings of its terms'
//! size in the type it accumulates in, and a composite op by the roundings of the ops it
//! decomposes into.

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

const CANCELLING_SUM: &str = "func @f(%x: tensor<4x3xf32>) -> tensor<4xf32> {
  %s = array.reduce_sum %x {axes = [1]} : tensor<4xf32>
  return %s : tensor<4xf32>
}
";

#[test]
fn a_sum_moves_by_roundings_of_its_terms_not_of_its_result() {
    let file = SourceFile::new("cancelling_sum.tsr", CANCELLING_SUM);
    let module = load(&file, 0..CANCELLING_SUM.len(), &registry()).expect("valid module");
    let ty = TensorType::new(vec![4, 3], ElementType::F32);
    // Each row sums to about 1e-3 from terms of 1000 and -1000 (integers, which stay) and a
    // small one: compiled code that adds them in another order rounds partial sums of the
    // terms' size, each by up to one ulp of their magnitudes' sum (2^-13 at 2000), some 2^20
    // times the result's own ulp (2^-33 at 1e-3); three of them, sqrt(3) ulps.
    let small = [1e-3, 2e-3, 3e-3, 4e-3];
    let x = Tensor::from_f64(&ty, small.iter().flat_map(|&s| [1000.0, -1000.0, s]));
    let reference = interpret(&module, 0, std::slice::from_ref(&x)).expect("runs");
    let moved = sensitivity(&module, 0, &[x], &reference).expect("perturbed runs");
    let ulps = moved[0] / 2f64.powi(-13);
    assert!(
        (1.73..1.74).contains(&ulps),
        "the sum moved by {ulps} ulps of its terms' magnitudes"
    );
}

/// The largest change of `f`'s result on `x` when every value moves by a rounding.
fn moved_sum(text: &str, x: Tensor) -> f64 {
    let file = SourceFile::new("sum.tsr", text);
    let module = load(&file, 0..text.len(), &registry()).expect("valid module");
    let reference = interpret(&module, 0, std::slice::from_ref(&x)).expect("runs");
    sensitivity(&module, 0, &[x], &reference).expect("perturbed runs")[0]
}

#[test]
fn a_long_sum_moves_by_the_square_root_of_its_length() {
    let text = "func @f(%x: tensor<256xf32>) -> tensor<f32> {
  %s = array.reduce_sum %x {axes = [0]} : tensor<f32>
  return %s : tensor<f32>
}
";
    // 256 terms of 0.3 add up to 76.8 (ulp 2^-17): a loop that adds them one after another
    // rounds 255 partial sums that grow to that size, about sqrt(256) = 16 ulps of it in all
    // (a fuzzed layer norm's variance at -O0 was off by about ten), plus the result's own
    // rounding; the inputs' roundings (ulp 2^-25) add at most 256 of theirs, one of its.
    let ty = TensorType::new(vec![256], ElementType::F32);
    let ulps = moved_sum(text, Tensor::from_f64(&ty, vec![0.3; 256])) / 2f64.powi(-17);
    assert!(
        (16.0..18.01).contains(&ulps),
        "the sum of 256 terms moved by {ulps} ulps of itself"
    );
}

#[test]
fn a_bf16_sum_accumulates_in_f32_and_rounds_once_to_bf16() {
    let text = "func @f(%x: tensor<4x3xbf16>) -> tensor<4xbf16> {
  %s = array.reduce_sum %x {axes = [1]} : tensor<4xbf16>
  return %s : tensor<4xbf16>
}
";
    // Rows of 100, -100 and about 0.3: f32 partial sums of size 200 round by 2^-16 each,
    // then the result rounds once to bf16 at its own size (ulp 2^-9 at 0.3), its input by
    // as much; one bf16 ulp of the terms' size (1 at 200) would hide any error of the sum.
    let ty = TensorType::new(vec![4, 3], ElementType::BF16);
    let x = Tensor::from_f64(&ty, (0..4).flat_map(|_| [100.0, -100.0, 0.3]));
    let moved = moved_sum(text, x);
    assert!(
        moved <= 2f64.powi(-8),
        "the bf16 sum moved by {moved}, more than two of its ulps"
    );
}

const CANCELLING_NORM: &str =
    "func @f(%x: tensor<1x2xf32>, %g: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<1x2xf32> {
  %y = nn.layer_norm %x, %g, %b : tensor<1x2xf32>
  return %y : tensor<1x2xf32>
}
";

#[test]
fn composite_ops_round_where_their_decomposition_does() {
    let file = SourceFile::new("cancelling_norm.tsr", CANCELLING_NORM);
    let module = load(&file, 0..CANCELLING_NORM.len(), &registry()).expect("valid module");
    let row = TensorType::new(vec![1, 2], ElementType::F32);
    let vector = TensorType::new(vec![2], ElementType::F32);
    // Integer inputs, which stay: x = [1, 2] normalizes to about [-1, 1], scaled by 1000 and
    // shifted by [1000, -1000] to about [0.02, -0.02]. The scaled value rounds at about 1000
    // (ulp 2^-14) before the shift cancels it; one rounding of the layer norm's result
    // (ulp 2^-29 at 0.02) misses that.
    let inputs = [
        Tensor::from_f64(&row, [1.0, 2.0]),
        Tensor::from_f64(&vector, [1000.0, 1000.0]),
        Tensor::from_f64(&vector, [1000.0, -1000.0]),
    ];
    let reference = interpret(&module, 0, &inputs).expect("runs");
    let moved = sensitivity(&module, 0, &inputs, &reference).expect("perturbed runs");
    let ulps = moved[0] / 2f64.powi(-14);
    assert!(
        (0.5..16.0).contains(&ulps),
        "the layer norm moved by {ulps} ulps of its scaled value"
    );
}
