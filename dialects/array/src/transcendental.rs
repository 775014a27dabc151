//! The inverse trigonometric and the hyperbolic functions as formulas of the math ops every
//! target lowers (`exp`, `expm1`, `log`, `log1p`, `sqrt`, `atan`): MLIR 19 turns `math.acos`,
//! `math.sinh` and the like into libm calls on the CPU but into nothing on NVPTX, and its
//! polynomial for `math.asin` is off by 1e-2 in f32. Each formula is the numerically careful
//! one (no cancellation near 0 or 1, no overflow of `x^2` for large `x`).

use melior::ir::Value;
use tessera::mlir::bridge::emit::{cmpf, ConvertResult, Emitter};

type Scalar<'c, 'b> = ConvertResult<Value<'c, 'b>>;

/// Above this magnitude `x^2` may overflow f32; `sqrt(x^2 + 1)` is `x` to the last bit.
const HUGE: f64 = 1e18;

/// `asin x = atan(x / sqrt((1 - x)(1 + x)))` (`1 - x^2` factored: exact near +-1); +-1 gives
/// atan(+-inf) = +-pi/2, outside [-1, 1] NaN.
pub fn asin<'c, 'b>(e: &Emitter<'c, 'b>, x: Value<'c, 'b>) -> Scalar<'c, 'b> {
    let one = e.const_like(x, 1.0)?;
    let below = e.same("arith.subf", &[one, x])?;
    let above = e.same("arith.addf", &[one, x])?;
    let rest = e.same("arith.mulf", &[below, above])?;
    let root = e.same("math.sqrt", &[rest])?;
    let ratio = e.same("arith.divf", &[x, root])?;
    e.same("math.atan", &[ratio])
}

/// `acos x = 2 atan(sqrt((1 - x) / (1 + x)))`: exact at 1 (0) and -1 (pi), NaN outside.
pub fn acos<'c, 'b>(e: &Emitter<'c, 'b>, x: Value<'c, 'b>) -> Scalar<'c, 'b> {
    let one = e.const_like(x, 1.0)?;
    let two = e.const_like(x, 2.0)?;
    let below = e.same("arith.subf", &[one, x])?;
    let above = e.same("arith.addf", &[one, x])?;
    let ratio = e.same("arith.divf", &[below, above])?;
    let root = e.same("math.sqrt", &[ratio])?;
    let angle = e.same("math.atan", &[root])?;
    e.same("arith.mulf", &[two, angle])
}

/// `sinh x`, from `m = expm1(|x|)`: `(m + m / (m + 1)) / 2` with the sign of `x` (no
/// cancellation for small `x`).
pub fn sinh<'c, 'b>(e: &Emitter<'c, 'b>, x: Value<'c, 'b>) -> Scalar<'c, 'b> {
    let half = e.const_like(x, 0.5)?;
    let one = e.const_like(x, 1.0)?;
    let a = e.same("math.absf", &[x])?;
    let m = e.same("math.expm1", &[a])?;
    let grown = e.same("arith.addf", &[m, one])?;
    let inverse_part = e.same("arith.divf", &[m, grown])?;
    let sum = e.same("arith.addf", &[m, inverse_part])?;
    let magnitude = e.same("arith.mulf", &[sum, half])?;
    e.same("math.copysign", &[magnitude, x])
}

/// `cosh x = (e^|x| + e^-|x|) / 2` (a sum of positives).
pub fn cosh<'c, 'b>(e: &Emitter<'c, 'b>, x: Value<'c, 'b>) -> Scalar<'c, 'b> {
    let half = e.const_like(x, 0.5)?;
    let one = e.const_like(x, 1.0)?;
    let a = e.same("math.absf", &[x])?;
    let grown = e.same("math.exp", &[a])?;
    let shrunk = e.same("arith.divf", &[one, grown])?;
    let sum = e.same("arith.addf", &[grown, shrunk])?;
    e.same("arith.mulf", &[sum, half])
}

/// `log(a) + ln 2` for huge `a`, else `small`: the limit `ln(2a)` of `asinh` and `acosh`.
fn or_huge<'c, 'b>(e: &Emitter<'c, 'b>, a: Value<'c, 'b>, small: Value<'c, 'b>) -> Scalar<'c, 'b> {
    let huge = e.const_like(a, HUGE)?;
    let ln2 = e.const_like(a, std::f64::consts::LN_2)?;
    let log = e.same("math.log", &[a])?;
    let large = e.same("arith.addf", &[log, ln2])?;
    let is_huge = e.compare(true, cmpf::OGT, a, huge)?;
    e.select(is_huge, large, small)
}

/// `asinh x = log1p(a + a^2 / (1 + sqrt(1 + a^2)))` with `a = |x|`, the sign of `x`.
pub fn asinh<'c, 'b>(e: &Emitter<'c, 'b>, x: Value<'c, 'b>) -> Scalar<'c, 'b> {
    let one = e.const_like(x, 1.0)?;
    let a = e.same("math.absf", &[x])?;
    let square = e.same("arith.mulf", &[a, a])?;
    let grown = e.same("arith.addf", &[one, square])?;
    let root = e.same("math.sqrt", &[grown])?;
    let denominator = e.same("arith.addf", &[one, root])?;
    let ratio = e.same("arith.divf", &[square, denominator])?;
    let argument = e.same("arith.addf", &[a, ratio])?;
    let small = e.same("math.log1p", &[argument])?;
    let magnitude = or_huge(e, a, small)?;
    e.same("math.copysign", &[magnitude, x])
}

/// `acosh x = log1p(t + sqrt(t (t + 2)))` with `t = x - 1` (exact near 1); NaN below 1.
pub fn acosh<'c, 'b>(e: &Emitter<'c, 'b>, x: Value<'c, 'b>) -> Scalar<'c, 'b> {
    let one = e.const_like(x, 1.0)?;
    let two = e.const_like(x, 2.0)?;
    let t = e.same("arith.subf", &[x, one])?;
    let shifted = e.same("arith.addf", &[t, two])?;
    let product = e.same("arith.mulf", &[t, shifted])?;
    let root = e.same("math.sqrt", &[product])?;
    let argument = e.same("arith.addf", &[t, root])?;
    let small = e.same("math.log1p", &[argument])?;
    or_huge(e, x, small)
}

/// `atanh x = log1p(2a / (1 - a)) / 2` with `a = |x|`, the sign of `x`; +-1 gives +-inf.
pub fn atanh<'c, 'b>(e: &Emitter<'c, 'b>, x: Value<'c, 'b>) -> Scalar<'c, 'b> {
    let one = e.const_like(x, 1.0)?;
    let half = e.const_like(x, 0.5)?;
    let a = e.same("math.absf", &[x])?;
    let twice = e.same("arith.addf", &[a, a])?;
    let rest = e.same("arith.subf", &[one, a])?;
    let ratio = e.same("arith.divf", &[twice, rest])?;
    let log = e.same("math.log1p", &[ratio])?;
    let magnitude = e.same("arith.mulf", &[log, half])?;
    e.same("math.copysign", &[magnitude, x])
}
