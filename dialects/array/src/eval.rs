//! Reference semantics of the `array` ops on host tensors: float math in f64 with every float
//! result rounded to its element type, integer math wrapped to the element's width.

use crate::constant::Constant;
use crate::elementwise::{Binary, BinaryKind, Cast, Compare, Select, Unary, UnaryKind};
use crate::layout::{Broadcast, Concat, Gather, Pad, Reshape, Slice, TakeAlong, Transpose};
use crate::matmul::Matmul;
use crate::reduce::{Argmax, Reduce, ReduceKind};
use tessera::attr::{Attribute, DenseValue, Scalar};
use tessera::exec::evaluate::{unverified, EvalContext, EvalError, Evaluate};
use tessera::exec::index::{
    broadcast_positions, element_count, for_each_index, position, AxisSplit,
};
use tessera::exec::math::{erf, maximum, minimum};
use tessera::exec::tensor::{row_major_strides, significand_bits, Tensor, TensorData};
use tessera::infer::normalize_axis;
use tessera::number::round_to;
use tessera::types::{ElementClass, ElementType, TensorType};

/// `v` reduced modulo 2^bits into integer type `element` (two's complement).
fn wrap(v: i64, element: ElementType) -> i64 {
    element.wrap_int(i128::from(v))
}

/// The integer `v` rounded once to the nearest value of float type `element`, ties to even.
///
/// Rounding through f64 first would round twice for integers above 2^53 (a value just above
/// a bf16 midpoint can become the midpoint, then go to even), so the significand is rounded
/// here on the exact integer; `round_to` then only turns an f16 overflow into infinity.
fn int_to_float(v: i128, element: ElementType) -> f64 {
    let bits = significand_bits(element);
    let magnitude = v.unsigned_abs();
    let width = u128::BITS - magnitude.leading_zeros();
    let rounded = if width <= bits {
        magnitude as f64
    } else {
        let shift = width - bits;
        let kept = magnitude >> shift;
        let rest = magnitude & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        let up = rest > half || (rest == half && kept & 1 == 1);
        // At most `bits + 1` significant bits times a power of two: exact in f64.
        (kept + u128::from(up)) as f64 * 2f64.powi(shift as i32)
    };
    let signed = if v < 0 { -rounded } else { rounded };
    round_to(signed, element)
}

/// `v` converted to integer type `element`: toward zero, saturating at the type's bounds,
/// NaN to 0 (the docs leave out-of-range values and NaN unspecified; this is the choice of
/// Rust's `as` and of LLVM's saturating conversions).
fn float_to_int(v: f64, element: ElementType) -> i64 {
    let (low, high) = element.int_bounds();
    // `as i128` truncates toward zero, saturates, and takes NaN to 0.
    element.wrap_int((v as i128).clamp(low, high))
}

/// Element `position` of `t`.
fn element(t: &Tensor, position: usize) -> Option<Scalar> {
    match &t.data {
        TensorData::Float(v) => v.get(position).map(|&x| Scalar::Float(x)),
        TensorData::Int(v) => v.get(position).map(|&x| Scalar::Int(x)),
        TensorData::Bool(v) => v.get(position).map(|&x| Scalar::Bool(x)),
    }
}

/// A tensor of `ty` from `elements`, which must be of its element class (floats are rounded
/// to its element type).
fn from_scalars(
    ty: &TensorType,
    elements: impl IntoIterator<Item = Scalar>,
) -> Result<Tensor, EvalError> {
    let mismatch = || unverified(format!("an element does not match {ty}"));
    let elements = elements.into_iter();
    let data = match ty.element.class() {
        ElementClass::Float => TensorData::Float(
            elements
                .map(|s| match s {
                    Scalar::Float(v) => Some(round_to(v, ty.element)),
                    _ => None,
                })
                .collect::<Option<_>>()
                .ok_or_else(mismatch)?,
        ),
        ElementClass::Int => TensorData::Int(
            elements
                .map(|s| match s {
                    Scalar::Int(v) => Some(v),
                    _ => None,
                })
                .collect::<Option<_>>()
                .ok_or_else(mismatch)?,
        ),
        ElementClass::Bool => TensorData::Bool(
            elements
                .map(|s| match s {
                    Scalar::Bool(v) => Some(v),
                    _ => None,
                })
                .collect::<Option<_>>()
                .ok_or_else(mismatch)?,
        ),
    };
    Ok(Tensor {
        ty: ty.clone(),
        data,
    })
}

/// A tensor of `ty` whose element `i` is element `positions[i]` of `x`.
fn gather(x: &Tensor, ty: &TensorType, positions: &[usize]) -> Result<Tensor, EvalError> {
    let elements = positions
        .iter()
        .map(|&p| element(x, p))
        .collect::<Option<Vec<Scalar>>>()
        .ok_or_else(|| unverified("a position is outside the operand"))?;
    from_scalars(ty, elements)
}

/// The positions at which `from` is read to broadcast it to `to`.
fn broadcast(from: &TensorType, to: &TensorType) -> Result<Vec<usize>, EvalError> {
    broadcast_positions(&from.shape, &to.shape)
        .ok_or_else(|| unverified(format!("{from} does not broadcast to {to}")))
}

/// Attribute `name` as a list of `rank` non-negative integers.
fn usize_list(ctx: &EvalContext<'_>, name: &str, rank: usize) -> Result<Vec<usize>, EvalError> {
    let values = ctx.int_list(name)?;
    if values.len() != rank || values.iter().any(|&v| v < 0) {
        return Err(unverified(format!(
            "attribute '{name}' is not {rank} non-negative integers"
        )));
    }
    Ok(values.into_iter().map(|v| v as usize).collect())
}

/// The one result of an op, as the list `evaluate` returns.
fn one(t: Tensor) -> Result<Vec<Tensor>, EvalError> {
    Ok(vec![t])
}

impl Evaluate for Unary {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let x = ctx.operand(0)?;
        let ty = ctx.result_type(0)?;
        match &x.data {
            TensorData::Float(v) => one(Tensor::from_f64(
                ty,
                v.iter().map(|&a| unary_float(self.kind, a)),
            )),
            TensorData::Int(v) => {
                let data = v
                    .iter()
                    .map(|&a| unary_int(self.kind, ty.element, a))
                    .collect::<Option<_>>()
                    .ok_or_else(|| unverified("a float-only op on integers"))?;
                one(Tensor {
                    ty: ty.clone(),
                    data: TensorData::Int(data),
                })
            }
            TensorData::Bool(_) => Err(unverified("a unary op on i1")),
        }
    }
}

/// A unary op on a float, in f64.
fn unary_float(kind: UnaryKind, a: f64) -> f64 {
    match kind {
        UnaryKind::Neg => -a,
        UnaryKind::Abs => a.abs(),
        UnaryKind::Exp => a.exp(),
        UnaryKind::Log => a.ln(),
        UnaryKind::Sqrt => a.sqrt(),
        UnaryKind::Rsqrt => 1.0 / a.sqrt(),
        UnaryKind::Tanh => a.tanh(),
        UnaryKind::Erf => erf(a),
        UnaryKind::Floor => a.floor(),
        UnaryKind::Ceil => a.ceil(),
        UnaryKind::Sin => a.sin(),
        UnaryKind::Cos => a.cos(),
        UnaryKind::Tan => a.tan(),
        UnaryKind::Asin => a.asin(),
        UnaryKind::Acos => a.acos(),
        UnaryKind::Atan => a.atan(),
        UnaryKind::Sinh => a.sinh(),
        UnaryKind::Cosh => a.cosh(),
        UnaryKind::Asinh => a.asinh(),
        UnaryKind::Acosh => a.acosh(),
        UnaryKind::Atanh => a.atanh(),
    }
}

/// A unary op on a stored integer of `element` type, wrapped to that type; `None` for the
/// float-only ops.
fn unary_int(kind: UnaryKind, element: ElementType, a: i64) -> Option<i64> {
    let value = element.int_value(a);
    match kind {
        UnaryKind::Neg => Some(element.wrap_int(-value)),
        UnaryKind::Abs => Some(element.wrap_int(value.abs())),
        _ => None,
    }
}

impl Evaluate for Binary {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let (lhs, rhs) = (ctx.operand(0)?, ctx.operand(1)?);
        let ty = ctx.result_type(0)?;
        let (lp, rp) = (broadcast(&lhs.ty, ty)?, broadcast(&rhs.ty, ty)?);
        match (&lhs.data, &rhs.data) {
            (TensorData::Float(a), TensorData::Float(b)) => {
                let values = lp
                    .iter()
                    .zip(&rp)
                    .map(|(&i, &j)| binary_float(self.kind, a[i], b[j]))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| unverified("an integer-only op on floats"))?;
                one(Tensor::from_f64(ty, values))
            }
            (TensorData::Int(a), TensorData::Int(b)) => {
                let data = lp
                    .iter()
                    .zip(&rp)
                    .map(|(&i, &j)| binary_int(self.kind, ty.element, a[i], b[j]))
                    .collect::<Option<_>>()
                    .ok_or_else(|| unverified("a float-only op on integers"))?;
                one(Tensor {
                    ty: ty.clone(),
                    data: TensorData::Int(data),
                })
            }
            (TensorData::Bool(a), TensorData::Bool(b)) => {
                let data = lp
                    .iter()
                    .zip(&rp)
                    .map(|(&i, &j)| match self.kind {
                        BinaryKind::And => Some(a[i] & b[j]),
                        BinaryKind::Or => Some(a[i] | b[j]),
                        BinaryKind::Xor => Some(a[i] ^ b[j]),
                        _ => None,
                    })
                    .collect::<Option<_>>()
                    .ok_or_else(|| unverified("arithmetic on i1"))?;
                one(Tensor {
                    ty: ty.clone(),
                    data: TensorData::Bool(data),
                })
            }
            _ => Err(unverified("operands of different element types")),
        }
    }
}

/// A binary op on floats, in f64; `None` for the integer-only ops.
fn binary_float(kind: BinaryKind, a: f64, b: f64) -> Option<f64> {
    Some(match kind {
        BinaryKind::Add => a + b,
        BinaryKind::Sub => a - b,
        BinaryKind::Mul => a * b,
        BinaryKind::Div => a / b,
        BinaryKind::Max => maximum(a, b),
        BinaryKind::Min => minimum(a, b),
        BinaryKind::Pow => a.powf(b),
        BinaryKind::Rem => a % b,
        BinaryKind::And
        | BinaryKind::Or
        | BinaryKind::Xor
        | BinaryKind::ShiftLeft
        | BinaryKind::ShiftRight => return None,
    })
}

/// A binary op on stored integers of `element` type, on their values (in i128, where no
/// operation of two 64-bit values overflows but the product, whose low 64 bits wrapping
/// keeps), wrapped to the type; `None` for the float-only op.
///
/// Division rounds toward zero. The docs leave division (and remainder) by zero unspecified:
/// this interpreter returns 0 (and never traps). The minimum value divided by -1 wraps to the
/// minimum value; its remainder is 0.
fn binary_int(kind: BinaryKind, element: ElementType, a: i64, b: i64) -> Option<i64> {
    let (x, y) = (element.int_value(a), element.int_value(b));
    let r = match kind {
        BinaryKind::Add => x + y,
        BinaryKind::Sub => x - y,
        BinaryKind::Mul => x.wrapping_mul(y),
        BinaryKind::Div | BinaryKind::Rem if y == 0 => 0,
        BinaryKind::Div => x / y,
        BinaryKind::Rem => x % y,
        BinaryKind::Max => x.max(y),
        BinaryKind::Min => x.min(y),
        BinaryKind::Pow => return None,
        // Bitwise ops on the stored bits (two's complement, the same bits as the value's).
        BinaryKind::And => i128::from(a & b),
        BinaryKind::Or => i128::from(a | b),
        BinaryKind::Xor => i128::from(a ^ b),
        BinaryKind::ShiftLeft | BinaryKind::ShiftRight => {
            // The amount read as unsigned: the bit width or more shifts every bit out.
            let bits = element.bit_width();
            let amount = u64::try_from(y).ok().filter(|&n| n < u64::from(bits));
            match (kind, amount) {
                (BinaryKind::ShiftLeft, Some(n)) => x << n,
                (BinaryKind::ShiftLeft, None) => 0,
                (_, Some(n)) => x >> n,
                (_, None) => {
                    if x < 0 {
                        -1
                    } else {
                        0
                    }
                }
            }
        }
    };
    Some(element.wrap_int(r))
}

/// `a <predicate> b`; for floats, NaN compares false except with `ne`.
fn compare<T: PartialOrd>(predicate: &str, a: T, b: T) -> Option<bool> {
    match predicate {
        "lt" => Some(a < b),
        "le" => Some(a <= b),
        "gt" => Some(a > b),
        "ge" => Some(a >= b),
        "eq" => Some(a == b),
        "ne" => Some(a != b),
        _ => None,
    }
}

impl Evaluate for Compare {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let (lhs, rhs) = (ctx.operand(0)?, ctx.operand(1)?);
        let ty = ctx.result_type(0)?;
        let predicate = ctx.string("predicate")?;
        let (lp, rp) = (broadcast(&lhs.ty, ty)?, broadcast(&rhs.ty, ty)?);
        let pairs = lp.iter().zip(&rp);
        let data: Option<Vec<bool>> = match (&lhs.data, &rhs.data) {
            (TensorData::Float(a), TensorData::Float(b)) => pairs
                .map(|(&i, &j)| compare(&predicate, a[i], b[j]))
                .collect(),
            (TensorData::Int(a), TensorData::Int(b)) => {
                let value = |v: i64| lhs.ty.element.int_value(v);
                pairs
                    .map(|(&i, &j)| compare(&predicate, value(a[i]), value(b[j])))
                    .collect()
            }
            // `false < true`, as numpy orders booleans.
            (TensorData::Bool(a), TensorData::Bool(b)) => pairs
                .map(|(&i, &j)| compare(&predicate, a[i], b[j]))
                .collect(),
            _ => return Err(unverified("operands of different element types")),
        };
        let data = data.ok_or_else(|| unverified(format!("unknown predicate '{predicate}'")))?;
        one(Tensor {
            ty: ty.clone(),
            data: TensorData::Bool(data),
        })
    }
}

impl Evaluate for Select {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let (cond, a, b) = (ctx.operand(0)?, ctx.operand(1)?, ctx.operand(2)?);
        let ty = ctx.result_type(0)?;
        let TensorData::Bool(c) = &cond.data else {
            return Err(unverified("a condition that is not i1"));
        };
        let (cp, ap, bp) = (
            broadcast(&cond.ty, ty)?,
            broadcast(&a.ty, ty)?,
            broadcast(&b.ty, ty)?,
        );
        let elements = (0..cp.len())
            .map(|i| {
                if c[cp[i]] {
                    element(a, ap[i])
                } else {
                    element(b, bp[i])
                }
            })
            .collect::<Option<Vec<Scalar>>>()
            .ok_or_else(|| unverified("a position is outside an operand"))?;
        one(from_scalars(ty, elements)?)
    }
}

impl Evaluate for Cast {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let x = ctx.operand(0)?;
        let ty = ctx.result_type(0)?;
        let (source, target) = (x.ty.element, ty.element);
        let data = match (&x.data, target.class()) {
            (TensorData::Float(v), ElementClass::Float) => {
                TensorData::Float(v.iter().map(|&a| round_to(a, target)).collect())
            }
            (TensorData::Float(v), ElementClass::Int) => {
                TensorData::Int(v.iter().map(|&a| float_to_int(a, target)).collect())
            }
            (TensorData::Float(v), ElementClass::Bool) => {
                TensorData::Bool(v.iter().map(|&a| a != 0.0).collect())
            }
            (TensorData::Int(v), ElementClass::Float) => TensorData::Float(
                v.iter()
                    .map(|&a| int_to_float(source.int_value(a), target))
                    .collect(),
            ),
            // Extended by the source's signedness, then wrapped to the target.
            (TensorData::Int(v), ElementClass::Int) => TensorData::Int(
                v.iter()
                    .map(|&a| target.wrap_int(source.int_value(a)))
                    .collect(),
            ),
            (TensorData::Int(v), ElementClass::Bool) => {
                TensorData::Bool(v.iter().map(|&a| a != 0).collect())
            }
            (TensorData::Bool(v), ElementClass::Float) => {
                TensorData::Float(v.iter().map(|&b| f64::from(u8::from(b))).collect())
            }
            (TensorData::Bool(v), ElementClass::Int) => {
                TensorData::Int(v.iter().map(|&b| i64::from(b)).collect())
            }
            (TensorData::Bool(v), ElementClass::Bool) => TensorData::Bool(v.clone()),
        };
        one(Tensor {
            ty: ty.clone(),
            data,
        })
    }
}

impl Evaluate for Matmul {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let (a, b) = (ctx.operand(0)?, ctx.operand(1)?);
        let ty = ctx.result_type(0)?;
        let (ra, rb, r) = (a.ty.rank(), b.ty.rank(), ty.rank());
        if ra < 2 || rb < 2 || r < 2 {
            return Err(unverified("a matrix product of rank below 2"));
        }
        let (m, k, n) = (
            a.ty.shape[ra - 2] as usize,
            a.ty.shape[ra - 1] as usize,
            b.ty.shape[rb - 1] as usize,
        );
        let batch = &ty.shape[..r - 2];
        let to_batch = |t: &Tensor, rank: usize| {
            broadcast_positions(&t.ty.shape[..rank - 2], batch)
                .ok_or_else(|| unverified("batch dimensions do not broadcast"))
        };
        let (ap, bp) = (to_batch(a, ra)?, to_batch(b, rb)?);
        // Row-major positions of a[batch, i, kk] and b[batch, kk, j] for each product term.
        let products = |visit: &mut dyn FnMut(usize, usize, usize)| {
            for (out_batch, (&ia, &ib)) in ap.iter().zip(&bp).enumerate() {
                for i in 0..m {
                    for j in 0..n {
                        let out = (out_batch * m + i) * n + j;
                        for kk in 0..k {
                            visit(out, (ia * m + i) * k + kk, (ib * k + kk) * n + j);
                        }
                    }
                }
            }
        };
        let count = element_count(&ty.shape);
        match (&a.data, &b.data) {
            (TensorData::Float(x), TensorData::Float(y)) => {
                let mut sums = vec![0.0; count];
                products(&mut |out, i, j| sums[out] += x[i] * y[j]);
                one(Tensor::from_f64(ty, sums))
            }
            (TensorData::Int(x), TensorData::Int(y)) => {
                let mut sums = vec![0i64; count];
                products(&mut |out, i, j| {
                    sums[out] = sums[out].wrapping_add(x[i].wrapping_mul(y[j]));
                });
                one(Tensor {
                    ty: ty.clone(),
                    data: TensorData::Int(sums.into_iter().map(|s| wrap(s, ty.element)).collect()),
                })
            }
            _ => Err(unverified("operands of different or boolean element types")),
        }
    }
}

impl Evaluate for Transpose {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let x = ctx.operand(0)?;
        let ty = ctx.result_type(0)?;
        let perm = usize_list(ctx, "perm", x.ty.rank())?;
        let strides = row_major_strides(&x.ty.shape);
        // Result index i reads x at j with j[perm[k]] = i[k].
        let perm_strides = perm
            .iter()
            .map(|&p| strides.get(p).copied())
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| unverified("'perm' is not a permutation"))?;
        let mut positions = Vec::with_capacity(element_count(&ty.shape));
        for_each_index(&ty.shape, |i| positions.push(position(i, &perm_strides)));
        one(gather(x, ty, &positions)?)
    }
}

impl Evaluate for Reshape {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let x = ctx.operand(0)?;
        one(Tensor {
            ty: ctx.result_type(0)?.clone(),
            data: x.data.clone(),
        })
    }
}

impl Evaluate for Broadcast {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let x = ctx.operand(0)?;
        let ty = ctx.result_type(0)?;
        one(gather(x, ty, &broadcast(&x.ty, ty)?)?)
    }
}

impl Evaluate for Concat {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let ty = ctx.result_type(0)?;
        let axis = ctx.axis("axis", ty.rank())?;
        let outer = element_count(&ty.shape[..axis]);
        // Each operand contributes, for every index before the axis, one contiguous block:
        // its whole extent along the axis and everything after it.
        let mut elements = Vec::with_capacity(element_count(&ty.shape));
        for o in 0..outer {
            for input in ctx.operands {
                let block = element_count(&input.ty.shape[axis..]);
                for p in o * block..(o + 1) * block {
                    elements.push(
                        element(input, p)
                            .ok_or_else(|| unverified("a position is outside an operand"))?,
                    );
                }
            }
        }
        one(from_scalars(ty, elements)?)
    }
}

impl Evaluate for Slice {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let x = ctx.operand(0)?;
        let ty = ctx.result_type(0)?;
        let rank = x.ty.rank();
        let start = usize_list(ctx, "start", rank)?;
        let stride = match ctx.attr("stride") {
            Some(_) => usize_list(ctx, "stride", rank)?,
            None => vec![1; rank],
        };
        let strides = row_major_strides(&x.ty.shape);
        let mut positions = Vec::with_capacity(element_count(&ty.shape));
        for_each_index(&ty.shape, |i| {
            let at = (0..rank)
                .map(|d| (start[d] + i[d] * stride[d]) * strides[d])
                .sum();
            positions.push(at);
        });
        one(gather(x, ty, &positions)?)
    }
}

impl Evaluate for Gather {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let (x, indices) = (ctx.operand(0)?, ctx.operand(1)?);
        let ty = ctx.result_type(0)?;
        let TensorData::Int(picks) = &indices.data else {
            return Err(unverified("indices that are not integers"));
        };
        let rank = x.ty.rank();
        let axis = normalize_axis(ctx.int("axis")?, rank)
            .ok_or_else(|| unverified("an axis out of range"))?;
        let q = indices.ty.rank();
        let dim = x.ty.shape[axis] as i64;
        let strides = row_major_strides(&x.ty.shape);
        let pick_strides = row_major_strides(&indices.ty.shape);
        let mut positions = Vec::with_capacity(element_count(&ty.shape));
        for_each_index(&ty.shape, |i| {
            let k = clamped_index(picks[position(&i[axis..axis + q], &pick_strides)], dim);
            let at = (0..rank)
                .map(|d| {
                    let coordinate = match d {
                        d if d < axis => i[d],
                        d if d == axis => k,
                        d => i[d + q - 1],
                    };
                    coordinate * strides[d]
                })
                .sum();
            positions.push(at);
        });
        one(gather(x, ty, &positions)?)
    }
}

/// Index `k` on an axis of size `dim`: clamped into `[-dim, dim - 1]`, negative counted from
/// the end (as `array.gather` and `array.take_along` define it).
fn clamped_index(k: i64, dim: i64) -> usize {
    let k = k.clamp(-dim, dim - 1);
    (if k < 0 { k + dim } else { k }) as usize
}

impl Evaluate for TakeAlong {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let (x, indices) = (ctx.operand(0)?, ctx.operand(1)?);
        let ty = ctx.result_type(0)?;
        let TensorData::Int(picks) = &indices.data else {
            return Err(unverified("indices that are not integers"));
        };
        let axis = normalize_axis(ctx.int("axis")?, x.ty.rank())
            .ok_or_else(|| unverified("an axis out of range"))?;
        let dim = x.ty.shape[axis] as i64;
        let strides = row_major_strides(&x.ty.shape);
        let mut positions = Vec::with_capacity(picks.len());
        let mut p = 0;
        for_each_index(&ty.shape, |i| {
            let k = clamped_index(picks[p], dim);
            p += 1;
            let at = (0..i.len())
                .map(|d| if d == axis { k } else { i[d] } * strides[d])
                .sum();
            positions.push(at);
        });
        one(gather(x, ty, &positions)?)
    }
}

impl Evaluate for Pad {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let x = ctx.operand(0)?;
        let ty = ctx.result_type(0)?;
        let low = usize_list(ctx, "low", x.ty.rank())?;
        let value = ctx.attr("value").unwrap_or(Attribute::Int(0));
        let fill = match (ty.element.class(), &value) {
            (ElementClass::Float, _) => value.as_f64().map(Scalar::Float),
            (ElementClass::Int, Attribute::Int(v)) => Some(Scalar::Int(*v)),
            (ElementClass::Bool, Attribute::Int(v)) => Some(Scalar::Bool(*v != 0)),
            _ => None,
        }
        .ok_or_else(|| unverified(format!("padding value {value} for {ty}")))?;
        let mut elements = vec![fill; element_count(&ty.shape)];
        let out_strides = row_major_strides(&ty.shape);
        let mut p = 0;
        let mut outside = false;
        for_each_index(&x.ty.shape, |i| {
            let at: usize = (0..i.len()).map(|d| (i[d] + low[d]) * out_strides[d]).sum();
            match (elements.get_mut(at), element(x, p)) {
                (Some(slot), Some(e)) => *slot = e,
                _ => outside = true,
            }
            p += 1;
        });
        if outside {
            return Err(unverified("the operand does not fit in the result"));
        }
        one(from_scalars(ty, elements)?)
    }
}

impl Evaluate for Reduce {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let x = ctx.operand(0)?;
        let ty = ctx.result_type(0)?;
        let rank = x.ty.rank();
        let axes = ctx
            .int_list("axes")?
            .into_iter()
            .map(|a| normalize_axis(a, rank))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| unverified("an axis out of range"))?;
        // Element i of x goes to targets[i]: its position with the reduced axes' indices at 0
        // in the shape with the reduced axes at 1 (the result's order, keepdims or not).
        let kept: Vec<u64> = (0..rank)
            .map(|d| if axes.contains(&d) { 1 } else { x.ty.shape[d] })
            .collect();
        let kept_strides = row_major_strides(&kept);
        let mut targets = Vec::with_capacity(x.len());
        for_each_index(&x.ty.shape, |i| {
            let at = (0..rank)
                .filter(|d| !axes.contains(d))
                .map(|d| i[d] * kept_strides[d])
                .sum::<usize>();
            targets.push(at);
        });
        let groups = element_count(&kept);
        if groups != element_count(&ty.shape) {
            return Err(unverified(format!(
                "{} does not hold the reduction of {}",
                ty, x.ty
            )));
        }
        let count: u64 = axes.iter().map(|&d| x.ty.shape[d]).product();
        match &x.data {
            TensorData::Float(v) => {
                let init = match self.kind {
                    ReduceKind::Sum | ReduceKind::Mean => 0.0,
                    ReduceKind::Max => f64::NEG_INFINITY,
                    ReduceKind::Min => f64::INFINITY,
                    ReduceKind::Prod => 1.0,
                };
                let mut acc = vec![init; groups];
                for (&a, &t) in v.iter().zip(&targets) {
                    acc[t] = match self.kind {
                        ReduceKind::Sum | ReduceKind::Mean => acc[t] + a,
                        ReduceKind::Max => maximum(acc[t], a),
                        ReduceKind::Min => minimum(acc[t], a),
                        ReduceKind::Prod => acc[t] * a,
                    };
                }
                if self.kind == ReduceKind::Mean {
                    // The mean of no elements is 0 / 0 = NaN.
                    for s in &mut acc {
                        *s /= count as f64;
                    }
                }
                one(Tensor::from_f64(ty, acc))
            }
            TensorData::Int(v) => {
                // On the values, in i128: sums cannot overflow it; products wrap in it,
                // keeping their low 64 bits.
                let element = ty.element;
                let (lowest, highest) = element.int_bounds();
                let init = match self.kind {
                    ReduceKind::Sum => 0,
                    ReduceKind::Max => lowest,
                    ReduceKind::Min => highest,
                    ReduceKind::Prod => 1,
                    ReduceKind::Mean => return Err(unverified("a mean of integers")),
                };
                let mut acc = vec![init; groups];
                for (&a, &t) in v.iter().zip(&targets) {
                    let a = element.int_value(a);
                    acc[t] = match self.kind {
                        ReduceKind::Max => acc[t].max(a),
                        ReduceKind::Min => acc[t].min(a),
                        ReduceKind::Prod => acc[t].wrapping_mul(a),
                        _ => acc[t] + a,
                    };
                }
                one(Tensor {
                    ty: ty.clone(),
                    data: TensorData::Int(acc.into_iter().map(|s| element.wrap_int(s)).collect()),
                })
            }
            TensorData::Bool(_) => Err(unverified("a reduction of i1")),
        }
    }
}

impl Evaluate for Argmax {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let x = ctx.operand(0)?;
        let ty = ctx.result_type(0)?;
        let split = AxisSplit::at_axis(&x.ty.shape, ctx.axis("axis", x.ty.rank())?);
        if split.len == 0 && split.outer * split.inner > 0 {
            return Err(unverified("argmax along an empty axis"));
        }
        let indices = match &x.data {
            // A NaN counts as the maximum: it beats any number, and nothing beats it.
            TensorData::Float(v) => argmax(split, |best, candidate| {
                !v[best].is_nan() && (v[candidate].is_nan() || v[candidate] > v[best])
            }),
            TensorData::Int(v) => {
                let value = |i: usize| x.ty.element.int_value(v[i]);
                argmax(split, |best, candidate| value(candidate) > value(best))
            }
            TensorData::Bool(_) => return Err(unverified("argmax of i1")),
        };
        one(Tensor {
            ty: ty.clone(),
            data: TensorData::Int(indices),
        })
    }
}

/// For each group of `split` (outer, then inner, in row-major order), the index along the
/// axis of the first element that no later one `beats` (given the positions of the best so
/// far and of a candidate): the first maximum.
fn argmax(split: AxisSplit, beats: impl Fn(usize, usize) -> bool) -> Vec<i64> {
    let mut indices = Vec::with_capacity(split.outer * split.inner);
    for o in 0..split.outer {
        for n in 0..split.inner {
            let mut best = 0;
            for i in 1..split.len {
                if beats(split.position(o, best, n), split.position(o, i, n)) {
                    best = i;
                }
            }
            indices.push(best as i64);
        }
    }
    indices
}

impl Evaluate for Constant {
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError> {
        let ty = ctx.result_type(0)?;
        let literal = ctx
            .literal
            .ok_or_else(|| unverified("a constant without a literal"))?;
        let n = element_count(&ty.shape);
        if let DenseValue::Elements(items) = literal {
            if items.len() != n {
                return Err(unverified(format!(
                    "a literal of {} elements for {ty}",
                    items.len()
                )));
            }
        }
        one(from_scalars(ty, (0..n).map(|i| literal.get(i)))?)
    }
}

#[cfg(test)]
mod tests {
    use super::{int_to_float, significand_bits};
    use std::f64::consts::{E, FRAC_1_SQRT_2, SQRT_2};
    use tessera::dialect::Registry;
    use tessera::exec::evaluate::EvalError;
    use tessera::exec::tensor::Tensor;
    use tessera::exec::testing::{
        self, assert_bools, assert_close, assert_floats, assert_ints, bools, floats, ints,
    };
    use tessera::types::ElementType;

    const NAN: f64 = f64::NAN;
    const INF: f64 = f64::INFINITY;

    /// Function 0 of `text`, with the `array` ops, run on `inputs`.
    #[track_caller]
    fn try_run(text: &str, inputs: &[Tensor]) -> Result<Vec<Tensor>, EvalError> {
        testing::try_run(&Registry::new().with(&crate::ARRAY), text, inputs)
    }

    /// `%y = <op> : <result>`, an `array` op, on inputs bound to `%a`, `%b`, ... in order.
    #[track_caller]
    fn eval(op: &str, result: &str, inputs: &[Tensor]) -> Tensor {
        testing::eval(&Registry::new().with(&crate::ARRAY), op, result, inputs)
    }

    const I32_MIN: i64 = i32::MIN as i64;
    const I32_MAX: i64 = i32::MAX as i64;

    #[test]
    fn neg() {
        let x = floats("4xf32", &[1.5, -2.0, 0.0, -INF]);
        assert_floats(
            &eval("array.neg %a", "4xf32", &[x]),
            "4xf32",
            &[-1.5, 2.0, -0.0, INF],
        );
        // -(-128) wraps to -128 in i8.
        let x = ints("3xi8", &[-128, 5, 127]);
        assert_ints(
            &eval("array.neg %a", "3xi8", &[x]),
            "3xi8",
            &[-128, -5, -127],
        );
        let x = ints("2xi64", &[i64::MIN, -9]);
        assert_ints(
            &eval("array.neg %a", "2xi64", &[x]),
            "2xi64",
            &[i64::MIN, 9],
        );
    }

    #[test]
    fn abs() {
        let x = floats("4xf16", &[-1.5, -0.0, INF, -INF]);
        assert_floats(
            &eval("array.abs %a", "4xf16", &[x]),
            "4xf16",
            &[1.5, 0.0, INF, INF],
        );
        // |-128| wraps to -128 in i8; |MIN| is MIN in i32.
        let x = ints("3xi8", &[-128, -3, 7]);
        assert_ints(&eval("array.abs %a", "3xi8", &[x]), "3xi8", &[-128, 3, 7]);
        let x = ints("2xi32", &[I32_MIN, -1]);
        assert_ints(&eval("array.abs %a", "2xi32", &[x]), "2xi32", &[I32_MIN, 1]);
    }

    #[test]
    fn exp() {
        let x = floats("4xf64", &[0.0, 1.0, -INF, 1000.0]);
        assert_close(
            &eval("array.exp %a", "4xf64", &[x]),
            "4xf64",
            &[1.0, E, 0.0, INF],
        );
        // e rounded to f32.
        let x = floats("f32", &[1.0]);
        assert_floats(
            &eval("array.exp %a", "f32", &[x]),
            "f32",
            &[2.7182817459106445],
        );
    }

    #[test]
    fn log() {
        let x = floats("5xf64", &[1.0, E, 0.0, -1.0, INF]);
        assert_close(
            &eval("array.log %a", "5xf64", &[x]),
            "5xf64",
            &[0.0, 1.0, -INF, NAN, INF],
        );
    }

    #[test]
    fn sqrt() {
        let x = floats("5xf64", &[4.0, 2.0, -1.0, 0.0, -0.0]);
        assert_floats(
            &eval("array.sqrt %a", "5xf64", &[x]),
            "5xf64",
            &[2.0, SQRT_2, NAN, 0.0, -0.0],
        );
    }

    #[test]
    fn rsqrt() {
        let x = floats("4xf64", &[4.0, 0.0, 0.25, 2.0]);
        assert_close(
            &eval("array.rsqrt %a", "4xf64", &[x]),
            "4xf64",
            &[0.5, INF, 2.0, FRAC_1_SQRT_2],
        );
    }

    #[test]
    fn tanh() {
        let x = floats("5xf64", &[0.0, 0.5, INF, -INF, -0.0]);
        assert_close(
            &eval("array.tanh %a", "5xf64", &[x]),
            "5xf64",
            &[0.0, 0.46211715726000974, 1.0, -1.0, -0.0],
        );
    }

    #[test]
    fn erf() {
        // erf(0.5) from mpmath at 50 digits.
        let x = floats("5xf64", &[0.0, 0.5, -0.5, INF, NAN]);
        assert_close(
            &eval("array.erf %a", "5xf64", &[x]),
            "5xf64",
            &[0.0, 0.5204998778130465, -0.5204998778130465, 1.0, NAN],
        );
        let x = floats("f32", &[0.5]);
        assert_floats(
            &eval("array.erf %a", "f32", &[x]),
            "f32",
            &[0.5204998850822449],
        );
    }

    #[test]
    fn floor_and_ceil() {
        let x = || floats("5xf32", &[-1.5, 1.5, -0.0, 2.0, -0.5]);
        assert_floats(
            &eval("array.floor %a", "5xf32", &[x()]),
            "5xf32",
            &[-2.0, 1.0, -0.0, 2.0, -1.0],
        );
        assert_floats(
            &eval("array.ceil %a", "5xf32", &[x()]),
            "5xf32",
            &[-1.0, 2.0, -0.0, 2.0, -0.0],
        );
    }

    #[test]
    fn add_broadcasts_and_wraps() {
        // [2, 1] + [3] gives [2, 3].
        let (a, b) = (
            floats("2x1xf32", &[1.0, 2.0]),
            floats("3xf32", &[10.0, 20.0, 30.0]),
        );
        assert_floats(
            &eval("array.add %a, %b", "2x3xf32", &[a, b]),
            "2x3xf32",
            &[11.0, 21.0, 31.0, 12.0, 22.0, 32.0],
        );
        let (a, b) = (ints("2xi8", &[100, -128]), ints("2xi8", &[100, -1]));
        assert_ints(
            &eval("array.add %a, %b", "2xi8", &[a, b]),
            "2xi8",
            &[-56, 127],
        );
        let (a, b) = (ints("i32", &[I32_MAX]), ints("i32", &[1]));
        assert_ints(&eval("array.add %a, %b", "i32", &[a, b]), "i32", &[I32_MIN]);
        // f16: 1 + 2^-11 is a tie between 1 and 1 + 2^-10 (goes to even: 1); 1 + 3 * 2^-12
        // rounds up.
        let (a, b) = (
            floats("2xf16", &[1.0, 1.0]),
            floats("2xf16", &[0.00048828125, 0.000732421875]),
        );
        assert_floats(
            &eval("array.add %a, %b", "2xf16", &[a, b]),
            "2xf16",
            &[1.0, 1.0009765625],
        );
    }

    #[test]
    fn sub() {
        // A rank-0 minus a matrix.
        let (a, b) = (
            floats("f32", &[1.0]),
            floats("2x2xf32", &[1.0, 2.0, 3.0, 4.0]),
        );
        assert_floats(
            &eval("array.sub %a, %b", "2x2xf32", &[a, b]),
            "2x2xf32",
            &[0.0, -1.0, -2.0, -3.0],
        );
        let (a, b) = (ints("2xi8", &[-128, 5]), ints("i8", &[1]));
        assert_ints(
            &eval("array.sub %a, %b", "2xi8", &[a, b]),
            "2xi8",
            &[127, 4],
        );
    }

    #[test]
    fn mul() {
        // [2, 1] * [1, 3]: the outer product.
        let (a, b) = (
            floats("2x1xf64", &[1.0, 2.0]),
            floats("1x3xf64", &[3.0, 4.0, 5.0]),
        );
        assert_floats(
            &eval("array.mul %a, %b", "2x3xf64", &[a, b]),
            "2x3xf64",
            &[3.0, 4.0, 5.0, 6.0, 8.0, 10.0],
        );
        // 0.1f32 * 3 = 0.300000004470348... exactly, rounded to f32.
        let (a, b) = (floats("f32", &[0.10000000149011612]), floats("f32", &[3.0]));
        assert_floats(
            &eval("array.mul %a, %b", "f32", &[a, b]),
            "f32",
            &[0.30000001192092896],
        );
        let (a, b) = (ints("2xi32", &[65536, -3]), ints("2xi32", &[65536, 7]));
        assert_ints(
            &eval("array.mul %a, %b", "2xi32", &[a, b]),
            "2xi32",
            &[0, -21],
        );
    }

    #[test]
    fn div_rounds_toward_zero_and_never_traps() {
        let (a, b) = (
            floats("4xf32", &[1.0, 1.0, 0.0, -1.0]),
            floats("4xf32", &[3.0, 0.0, 0.0, 0.0]),
        );
        assert_floats(
            &eval("array.div %a, %b", "4xf32", &[a, b]),
            "4xf32",
            &[0.3333333432674408, INF, NAN, -INF],
        );
        // Toward zero; by zero gives 0 (the interpreter's choice); MIN / -1 wraps to MIN.
        let a = ints("6xi32", &[7, -7, 7, -7, 5, I32_MIN]);
        let b = ints("6xi32", &[2, 2, -2, -2, 0, -1]);
        assert_ints(
            &eval("array.div %a, %b", "6xi32", &[a, b]),
            "6xi32",
            &[3, -3, -3, 3, 0, I32_MIN],
        );
        let (a, b) = (ints("2xi8", &[-128, -128]), ints("2xi8", &[-1, 0]));
        assert_ints(
            &eval("array.div %a, %b", "2xi8", &[a, b]),
            "2xi8",
            &[-128, 0],
        );
        let (a, b) = (ints("2xi64", &[i64::MIN, 9]), ints("2xi64", &[-1, 0]));
        assert_ints(
            &eval("array.div %a, %b", "2xi64", &[a, b]),
            "2xi64",
            &[i64::MIN, 0],
        );
    }

    #[test]
    fn max_and_min_propagate_nan() {
        let a = || floats("5xf32", &[1.0, NAN, -0.0, 0.0, -INF]);
        let b = || floats("5xf32", &[2.0, 0.0, 0.0, -0.0, -1.0]);
        assert_floats(
            &eval("array.max %a, %b", "5xf32", &[a(), b()]),
            "5xf32",
            &[2.0, NAN, 0.0, 0.0, -1.0],
        );
        assert_floats(
            &eval("array.min %a, %b", "5xf32", &[a(), b()]),
            "5xf32",
            &[1.0, NAN, -0.0, -0.0, -INF],
        );
        let (a, b) = (|| ints("2xi32", &[3, -5]), || ints("i32", &[-2]));
        assert_ints(
            &eval("array.max %a, %b", "2xi32", &[a(), b()]),
            "2xi32",
            &[3, -2],
        );
        assert_ints(
            &eval("array.min %a, %b", "2xi32", &[a(), b()]),
            "2xi32",
            &[-2, -5],
        );
    }

    #[test]
    fn pow() {
        let a = floats("6xf64", &[2.0, 2.0, -8.0, -2.0, 0.0, 4.0]);
        let b = floats("6xf64", &[3.0, -1.0, 1.0 / 3.0, 2.0, 0.0, 0.5]);
        assert_floats(
            &eval("array.pow %a, %b", "6xf64", &[a, b]),
            "6xf64",
            &[8.0, 0.5, NAN, 4.0, 1.0, 2.0],
        );
        // A scalar exponent broadcast over a vector.
        let (a, b) = (floats("2xf32", &[3.0, 0.5]), floats("f32", &[2.0]));
        assert_floats(
            &eval("array.pow %a, %b", "2xf32", &[a, b]),
            "2xf32",
            &[9.0, 0.25],
        );
    }

    #[test]
    fn compare_every_predicate() {
        let cases = [
            ("lt", [true, false, false]),
            ("le", [true, true, false]),
            ("gt", [false, false, false]),
            ("ge", [false, true, false]),
            ("eq", [false, true, false]),
            ("ne", [true, false, true]),
        ];
        for (predicate, expected) in cases {
            // A NaN operand compares false, except with ne.
            let (a, b) = (floats("3xf32", &[1.0, 2.0, NAN]), floats("f32", &[2.0]));
            let op = format!("array.compare %a, %b {{predicate = \"{predicate}\"}}");
            assert_bools(&eval(&op, "3xi1", &[a, b]), "3xi1", &expected);
        }
        let (a, b) = (|| ints("3xi8", &[-1, 0, 1]), || ints("1xi8", &[0]));
        let op = |p: &str| format!("array.compare %a, %b {{predicate = \"{p}\"}}");
        assert_bools(
            &eval(&op("lt"), "3xi1", &[a(), b()]),
            "3xi1",
            &[true, false, false],
        );
        assert_bools(
            &eval(&op("ge"), "3xi1", &[a(), b()]),
            "3xi1",
            &[false, true, true],
        );
        // Booleans order false < true; [2, 1] against [1, 2] gives [2, 2].
        let (a, b) = (
            || bools("2x1xi1", &[false, true]),
            || bools("1x2xi1", &[false, true]),
        );
        assert_bools(
            &eval(&op("lt"), "2x2xi1", &[a(), b()]),
            "2x2xi1",
            &[false, true, false, false],
        );
        assert_bools(
            &eval(&op("eq"), "2x2xi1", &[a(), b()]),
            "2x2xi1",
            &[true, false, false, true],
        );
    }

    #[test]
    fn select_broadcasts_all_three() {
        // A column condition, a row and a scalar.
        let cond = bools("2x1xi1", &[true, false]);
        let (a, b) = (floats("3xf32", &[1.0, 2.0, 3.0]), floats("f32", &[0.0]));
        assert_floats(
            &eval("array.select %a, %b, %c", "2x3xf32", &[cond, a, b]),
            "2x3xf32",
            &[1.0, 2.0, 3.0, 0.0, 0.0, 0.0],
        );
        let cond = bools("3xi1", &[false, true, false]);
        let (a, b) = (ints("i64", &[i64::MAX]), ints("3xi64", &[1, 2, 3]));
        assert_ints(
            &eval("array.select %a, %b, %c", "3xi64", &[cond, a, b]),
            "3xi64",
            &[1, i64::MAX, 3],
        );
        let cond = bools("i1", &[true]);
        let (a, b) = (
            bools("2xi1", &[true, false]),
            bools("2xi1", &[false, false]),
        );
        assert_bools(
            &eval("array.select %a, %b, %c", "2xi1", &[cond, a, b]),
            "2xi1",
            &[true, false],
        );
    }

    #[test]
    fn cast_float_to_int_truncates_and_saturates() {
        let x = floats("6xf32", &[2.75, -2.75, NAN, 1e10, -1e10, -0.5]);
        assert_ints(
            &eval("array.cast %a", "6xi32", &[x]),
            "6xi32",
            &[2, -2, 0, I32_MAX, I32_MIN, 0],
        );
        let x = floats("3xf64", &[300.0, -300.0, 127.9]);
        assert_ints(
            &eval("array.cast %a", "3xi8", &[x]),
            "3xi8",
            &[127, -128, 127],
        );
        let x = floats("3xf64", &[INF, -INF, 9.3e18]);
        assert_ints(
            &eval("array.cast %a", "3xi64", &[x]),
            "3xi64",
            &[i64::MAX, i64::MIN, i64::MAX],
        );
    }

    #[test]
    fn cast_between_integers_and_booleans() {
        // Truncation keeps the low bits: 300 = 0x12c gives 0x2c = 44; -129 gives 127.
        let x = ints("3xi32", &[300, -129, -1]);
        assert_ints(&eval("array.cast %a", "3xi8", &[x]), "3xi8", &[44, 127, -1]);
        let x = ints("2xi8", &[-128, 127]);
        assert_ints(&eval("array.cast %a", "2xi64", &[x]), "2xi64", &[-128, 127]);
        let x = ints("3xi32", &[0, -3, 256]);
        assert_bools(
            &eval("array.cast %a", "3xi1", &[x]),
            "3xi1",
            &[false, true, true],
        );
        let x = floats("4xf32", &[0.0, -0.0, 0.5, NAN]);
        assert_bools(
            &eval("array.cast %a", "4xi1", &[x]),
            "4xi1",
            &[false, false, true, true],
        );
        let x = || bools("2xi1", &[true, false]);
        assert_floats(
            &eval("array.cast %a", "2xbf16", &[x()]),
            "2xbf16",
            &[1.0, 0.0],
        );
        assert_ints(&eval("array.cast %a", "2xi8", &[x()]), "2xi8", &[1, 0]);
        assert_bools(
            &eval("array.cast %a", "2xi1", &[x()]),
            "2xi1",
            &[true, false],
        );
    }

    #[test]
    fn cast_to_float_rounds_once_to_nearest_even() {
        // 2^24 + 1 and 2^24 + 3 are ties in f32: to even.
        let x = ints("2xi32", &[16777217, 16777219]);
        assert_floats(
            &eval("array.cast %a", "2xf32", &[x]),
            "2xf32",
            &[16777216.0, 16777220.0],
        );
        // 257 and 259 are ties in bf16 (8 significant bits).
        let x = ints("2xi32", &[257, 259]);
        assert_floats(
            &eval("array.cast %a", "2xbf16", &[x]),
            "2xbf16",
            &[256.0, 260.0],
        );
        // f16 overflows to infinity from 65520 up.
        let x = ints("2xi32", &[65519, 65520]);
        assert_floats(
            &eval("array.cast %a", "2xf16", &[x]),
            "2xf16",
            &[65504.0, INF],
        );
        // 2^53 + 1 is a tie in f64.
        let x = ints("i64", &[9007199254740993]);
        assert_floats(
            &eval("array.cast %a", "f64", &[x]),
            "f64",
            &[9007199254740992.0],
        );
        // 2^60 + 2^52 + 1 is just above a bf16 midpoint: up to 2^60 + 2^53. Through f64 it
        // would first become the midpoint 2^60 + 2^52, then go to even, 2^60.
        let x = ints("2xi64", &[(1 << 60) + (1 << 52) + 1, (1 << 60) + (1 << 52)]);
        assert_floats(
            &eval("array.cast %a", "2xbf16", &[x]),
            "2xbf16",
            &[1161928703861587968.0, 1152921504606846976.0],
        );
        // Float to float: f64 0.1 to f32, 65520 to f16 (infinity), a bf16 tie.
        let x = floats("3xf64", &[0.1, 65520.0, 1.00390625]);
        assert_floats(
            &eval("array.cast %a", "3xf32", std::slice::from_ref(&x)),
            "3xf32",
            &[0.10000000149011612, 65520.0, 1.00390625],
        );
        assert_floats(
            &eval("array.cast %a", "3xf16", std::slice::from_ref(&x)),
            "3xf16",
            &[0.0999755859375, INF, 1.00390625],
        );
        assert_floats(
            &eval("array.cast %a", "3xbf16", &[x]),
            "3xbf16",
            &[0.10009765625, 65536.0, 1.0],
        );
        let x = floats("2xf16", &[0.0999755859375, -INF]);
        assert_floats(
            &eval("array.cast %a", "2xf64", &[x]),
            "2xf64",
            &[0.0999755859375, -INF],
        );
    }

    #[test]
    fn int_to_float_agrees_with_correctly_rounded_casts() {
        // Rust's `as` rounds integers to f32 and f64 correctly (to nearest, ties to even).
        let mut values = vec![
            0,
            1,
            -1,
            i64::MIN,
            i64::MAX,
            i64::MIN + 1,
            1 << 53,
            (1 << 53) + 1,
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..10_000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            values.push((state as i64) >> (state % 64));
        }
        for v in values {
            assert_eq!(
                int_to_float(i128::from(v), ElementType::F32),
                f64::from(v as f32),
                "{v}"
            );
            assert_eq!(
                int_to_float(i128::from(v), ElementType::F64),
                v as f64,
                "{v}"
            );
            // The same bits as a ui64.
            let u = v as u64;
            assert_eq!(
                int_to_float(i128::from(u), ElementType::F32),
                f64::from(u as f32),
                "{u}"
            );
            assert_eq!(
                int_to_float(i128::from(u), ElementType::F64),
                u as f64,
                "{u}"
            );
        }
        assert_eq!(significand_bits(ElementType::BF16), 8);
    }

    #[test]
    fn matmul() {
        let (a, b) = (
            floats("2x3xf32", &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
            floats("3x2xf32", &[7.0, 8.0, 9.0, 10.0, 11.0, 12.0]),
        );
        assert_floats(
            &eval("array.matmul %a, %b", "2x2xf32", &[a, b]),
            "2x2xf32",
            &[58.0, 64.0, 139.0, 154.0],
        );
        // Batch dimensions [2, 1] and [3] broadcast to [2, 3].
        let a = floats("2x1x1x2xf64", &[1.0, 2.0, 3.0, 4.0]);
        let b = floats("3x2x1xf64", &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
        assert_floats(
            &eval("array.matmul %a, %b", "2x3x1x1xf64", &[a, b]),
            "2x3x1x1xf64",
            &[1.0, 2.0, 3.0, 3.0, 4.0, 7.0],
        );
        // A matrix against a batch.
        let a = floats("1x2xf32", &[1.0, -1.0]);
        let b = floats("2x2x1xf32", &[5.0, 3.0, 2.0, 7.0]);
        assert_floats(
            &eval("array.matmul %a, %b", "2x1x1xf32", &[a, b]),
            "2x1x1xf32",
            &[2.0, -5.0],
        );
        // An empty inner dimension sums nothing.
        let (a, b) = (floats("2x0xf32", &[]), floats("0x3xf32", &[]));
        assert_floats(
            &eval("array.matmul %a, %b", "2x3xf32", &[a, b]),
            "2x3xf32",
            &[0.0; 6],
        );
        // Integers wrap: 2 * 2^32 is 0 in i32, 300 is 44 in i8.
        let (a, b) = (
            ints("1x2xi32", &[65536, 65536]),
            ints("2x1xi32", &[65536, 65536]),
        );
        assert_ints(
            &eval("array.matmul %a, %b", "1x1xi32", &[a, b]),
            "1x1xi32",
            &[0],
        );
        let (a, b) = (ints("1x2xi8", &[100, 100]), ints("2x1xi8", &[2, 1]));
        assert_ints(
            &eval("array.matmul %a, %b", "1x1xi8", &[a, b]),
            "1x1xi8",
            &[44],
        );
    }

    #[test]
    fn transpose() {
        let x = floats("2x3xf32", &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_floats(
            &eval("array.transpose %a {perm = [1, 0]}", "3x2xf32", &[x]),
            "3x2xf32",
            &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0],
        );
        // y[i, j, 0] = x[j, 0, i] = 3j + i for x[a, 0, c] = 3a + c.
        let x = ints("2x1x3xi32", &[0, 1, 2, 3, 4, 5]);
        assert_ints(
            &eval("array.transpose %a {perm = [2, 0, 1]}", "3x2x1xi32", &[x]),
            "3x2x1xi32",
            &[0, 3, 1, 4, 2, 5],
        );
        let x = bools("2x2xi1", &[true, true, false, false]);
        assert_bools(
            &eval("array.transpose %a {perm = [1, 0]}", "2x2xi1", &[x]),
            "2x2xi1",
            &[true, false, true, false],
        );
    }

    #[test]
    fn reshape() {
        let x = floats("2x3xf32", &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_floats(
            &eval("array.reshape %a", "3x2xf32", &[x]),
            "3x2xf32",
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        );
        let x = ints("1x1xi64", &[-7]);
        assert_ints(&eval("array.reshape %a", "i64", &[x]), "i64", &[-7]);
    }

    #[test]
    fn broadcast() {
        let x = floats("3xf32", &[1.0, 2.0, 3.0]);
        assert_floats(
            &eval("array.broadcast %a", "2x3xf32", &[x]),
            "2x3xf32",
            &[1.0, 2.0, 3.0, 1.0, 2.0, 3.0],
        );
        let x = ints("2x1xi32", &[1, 2]);
        assert_ints(
            &eval("array.broadcast %a", "2x3xi32", &[x]),
            "2x3xi32",
            &[1, 1, 1, 2, 2, 2],
        );
        let x = bools("i1", &[true]);
        assert_bools(
            &eval("array.broadcast %a", "2xi1", &[x]),
            "2xi1",
            &[true, true],
        );
    }

    #[test]
    fn concat() {
        // Along the last axis, written -1.
        let (a, b) = (
            floats("2x1xf32", &[1.0, 2.0]),
            floats("2x2xf32", &[3.0, 4.0, 5.0, 6.0]),
        );
        assert_floats(
            &eval("array.concat %a, %b {axis = -1}", "2x3xf32", &[a, b]),
            "2x3xf32",
            &[1.0, 3.0, 4.0, 2.0, 5.0, 6.0],
        );
        let (a, b, c) = (
            ints("1x2xi32", &[1, 2]),
            ints("1x2xi32", &[3, 4]),
            ints("2x2xi32", &[5, 6, 7, 8]),
        );
        assert_ints(
            &eval("array.concat %a, %b, %c {axis = 0}", "4x2xi32", &[a, b, c]),
            "4x2xi32",
            &[1, 2, 3, 4, 5, 6, 7, 8],
        );
        let (a, b) = (bools("1xi1", &[true]), bools("0xi1", &[]));
        assert_bools(
            &eval("array.concat %a, %b {axis = 0}", "1xi1", &[a, b]),
            "1xi1",
            &[true],
        );
    }

    #[test]
    fn slice() {
        // Rows 0 and 2, columns 1 and 3 of [[0, 1, 2, 3], [4, ...], [8, ...]].
        let x = ints("3x4xi32", &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
        assert_ints(
            &eval(
                "array.slice %a {limit = [3, 4], start = [0, 1], stride = [2, 2]}",
                "2x2xi32",
                std::slice::from_ref(&x),
            ),
            "2x2xi32",
            &[1, 3, 9, 11],
        );
        assert_ints(
            &eval(
                "array.slice %a {limit = [2, 2], start = [1, 0]}",
                "1x2xi32",
                std::slice::from_ref(&x),
            ),
            "1x2xi32",
            &[4, 5],
        );
        // ceil((4 - 1) / 2) = 2 columns: 1 and 3.
        assert_ints(
            &eval(
                "array.slice %a {limit = [1, 4], start = [0, 1], stride = [1, 2]}",
                "1x2xi32",
                &[x],
            ),
            "1x2xi32",
            &[1, 3],
        );
    }

    #[test]
    fn pad() {
        let x = floats("2x2xf32", &[1.0, 2.0, 3.0, 4.0]);
        assert_floats(
            &eval(
                "array.pad %a {high = [0, 1], low = [1, 0], value = -1.5}",
                "3x3xf32",
                &[x],
            ),
            "3x3xf32",
            &[-1.5, -1.5, -1.5, 1.0, 2.0, -1.5, 3.0, 4.0, -1.5],
        );
        let x = ints("2xi32", &[7, 8]);
        assert_ints(
            &eval("array.pad %a {high = [2], low = [1]}", "5xi32", &[x]),
            "5xi32",
            &[0, 7, 8, 0, 0],
        );
        let x = bools("1xi1", &[false]);
        assert_bools(
            &eval(
                "array.pad %a {high = [1], low = [1], value = 1}",
                "3xi1",
                &[x],
            ),
            "3xi1",
            &[true, false, true],
        );
        // The padding value is rounded to the element type.
        let x = floats("1xf16", &[1.0]);
        assert_floats(
            &eval(
                "array.pad %a {high = [1], low = [0], value = 0.1}",
                "2xf16",
                &[x],
            ),
            "2xf16",
            &[1.0, 0.0999755859375],
        );
    }

    #[test]
    fn reduce_sum() {
        let x = || floats("2x3xf32", &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_floats(
            &eval("array.reduce_sum %a {axes = [0]}", "3xf32", &[x()]),
            "3xf32",
            &[5.0, 7.0, 9.0],
        );
        assert_floats(
            &eval(
                "array.reduce_sum %a {axes = [-1], keepdims = true}",
                "2x1xf32",
                &[x()],
            ),
            "2x1xf32",
            &[6.0, 15.0],
        );
        assert_floats(
            &eval("array.reduce_sum %a {axes = [1, 0]}", "f32", &[x()]),
            "f32",
            &[21.0],
        );
        assert_floats(
            &eval("array.reduce_sum %a {axes = []}", "2x3xf32", &[x()]),
            "2x3xf32",
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        );
        let x = ints("2xi8", &[100, 100]);
        assert_ints(
            &eval("array.reduce_sum %a {axes = [0]}", "i8", &[x]),
            "i8",
            &[-56],
        );
        // The sum of no elements is 0.
        let x = floats("2x0xf32", &[]);
        assert_floats(
            &eval("array.reduce_sum %a {axes = [1]}", "2xf32", &[x]),
            "2xf32",
            &[0.0, 0.0],
        );
        let x = ints("0xi32", &[]);
        assert_ints(
            &eval("array.reduce_sum %a {axes = [0]}", "i32", &[x]),
            "i32",
            &[0],
        );
    }

    #[test]
    fn gather_picks_clamps_and_wraps() {
        let table = || floats("3x2xf32", &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        // Rows 2, 0, -1 (the last), and 7 and -9, clamped to the last and the first.
        let ids = ints("5xi64", &[2, 0, -1, 7, -9]);
        assert_floats(
            &eval("array.gather %a, %b", "5x2xf32", &[table(), ids]),
            "5x2xf32",
            &[5.0, 6.0, 1.0, 2.0, 5.0, 6.0, 5.0, 6.0, 1.0, 2.0],
        );
        // Along the last axis with a 2-d index tensor: y[r, i, j] = x[r, ids[i, j]].
        let ids = ints("2x2xi32", &[1, 0, 0, 0]);
        assert_floats(
            &eval(
                "array.gather %a, %b {axis = -1}",
                "3x2x2xf32",
                &[table(), ids],
            ),
            "3x2x2xf32",
            &[2.0, 1.0, 1.0, 1.0, 4.0, 3.0, 3.0, 3.0, 6.0, 5.0, 5.0, 5.0],
        );
        // A scalar index removes the axis.
        let one = ints("i64", &[1]);
        assert_floats(
            &eval("array.gather %a, %b", "2xf32", &[table(), one]),
            "2xf32",
            &[3.0, 4.0],
        );
    }

    #[test]
    fn reduce_prod() {
        let x = || floats("2x3xf32", &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_floats(
            &eval("array.reduce_prod %a {axes = [0]}", "3xf32", &[x()]),
            "3xf32",
            &[4.0, 10.0, 18.0],
        );
        assert_floats(
            &eval(
                "array.reduce_prod %a {axes = [1], keepdims = true}",
                "2x1xf32",
                &[x()],
            ),
            "2x1xf32",
            &[6.0, 120.0],
        );
        // Integers wrap: 16 * 16 = 256 is 0 in i8; the product of no elements is 1.
        let x = ints("2xi8", &[16, 16]);
        assert_ints(
            &eval("array.reduce_prod %a {axes = [0]}", "i8", &[x]),
            "i8",
            &[0],
        );
        let x = ints("0xi64", &[]);
        assert_ints(
            &eval("array.reduce_prod %a {axes = [0]}", "i64", &[x]),
            "i64",
            &[1],
        );
        let x = floats("2x0xf32", &[]);
        assert_floats(
            &eval("array.reduce_prod %a {axes = [1]}", "2xf32", &[x]),
            "2xf32",
            &[1.0, 1.0],
        );
    }

    #[test]
    fn reduce_max() {
        let x = || floats("2x3xf32", &[1.0, NAN, 3.0, -1.0, -5.0, -2.0]);
        assert_floats(
            &eval("array.reduce_max %a {axes = [1]}", "2xf32", &[x()]),
            "2xf32",
            &[NAN, -1.0],
        );
        assert_floats(
            &eval("array.reduce_max %a {axes = [0]}", "3xf32", &[x()]),
            "3xf32",
            &[1.0, NAN, 3.0],
        );
        let x = ints("2x2xi32", &[3, -7, 2, 9]);
        assert_ints(
            &eval(
                "array.reduce_max %a {axes = [-2], keepdims = true}",
                "1x2xi32",
                &[x],
            ),
            "1x2xi32",
            &[3, 9],
        );
        // The maximum of no elements is the lowest value of the type.
        let x = floats("2x0xf64", &[]);
        assert_floats(
            &eval("array.reduce_max %a {axes = [1]}", "2xf64", &[x]),
            "2xf64",
            &[-INF, -INF],
        );
        let x = ints("0xi8", &[]);
        assert_ints(
            &eval("array.reduce_max %a {axes = [0]}", "i8", &[x]),
            "i8",
            &[-128],
        );
    }

    #[test]
    fn reduce_min() {
        let x = floats("2x3xf64", &[1.0, NAN, 3.0, -1.0, -5.0, -2.0]);
        assert_floats(
            &eval("array.reduce_min %a {axes = [1]}", "2xf64", &[x]),
            "2xf64",
            &[NAN, -5.0],
        );
        let x = ints("2x2xi64", &[3, -7, 2, 9]);
        assert_ints(
            &eval("array.reduce_min %a {axes = [0, 1]}", "i64", &[x]),
            "i64",
            &[-7],
        );
        // The minimum of no elements is the highest value of the type.
        let x = floats("0x2xf64", &[]);
        assert_floats(
            &eval("array.reduce_min %a {axes = [0]}", "2xf64", &[x]),
            "2xf64",
            &[INF, INF],
        );
        let x = ints("0xi32", &[]);
        assert_ints(
            &eval("array.reduce_min %a {axes = [0]}", "i32", &[x]),
            "i32",
            &[I32_MAX],
        );
    }

    #[test]
    fn reduce_mean() {
        let x = || floats("2x2xf64", &[1.0, 2.0, 3.0, 4.0]);
        assert_floats(
            &eval("array.reduce_mean %a {axes = [0, 1]}", "f64", &[x()]),
            "f64",
            &[2.5],
        );
        assert_floats(
            &eval(
                "array.reduce_mean %a {axes = [-1], keepdims = true}",
                "2x1xf64",
                &[x()],
            ),
            "2x1xf64",
            &[1.5, 3.5],
        );
        // 4/3 rounded to f32.
        let x = floats("3xf32", &[1.0, 1.0, 2.0]);
        assert_floats(
            &eval("array.reduce_mean %a {axes = [0]}", "f32", &[x]),
            "f32",
            &[1.3333333730697632],
        );
        // The mean of no elements is NaN.
        let x = floats("0xf32", &[]);
        assert_floats(
            &eval("array.reduce_mean %a {axes = [0]}", "f32", &[x]),
            "f32",
            &[NAN],
        );
    }

    #[test]
    fn argmax() {
        // Ties give the first index.
        let x = || floats("2x3xf32", &[1.0, 3.0, 3.0, 5.0, 2.0, 5.0]);
        assert_ints(
            &eval("array.argmax %a {axis = 1}", "2xi64", &[x()]),
            "2xi64",
            &[1, 0],
        );
        assert_ints(
            &eval("array.argmax %a {axis = -2}", "3xi64", &[x()]),
            "3xi64",
            &[1, 0, 1],
        );
        // A NaN is the maximum; the first NaN wins.
        let x = floats("2x4xf64", &[1.0, NAN, 5.0, NAN, NAN, 7.0, INF, 0.0]);
        assert_ints(
            &eval("array.argmax %a {axis = 1}", "2xi64", &[x]),
            "2xi64",
            &[1, 0],
        );
        // -0 and 0 are equal; -inf alone is still a maximum.
        let x = floats("2x2xf32", &[-0.0, 0.0, -INF, -INF]);
        assert_ints(
            &eval("array.argmax %a {axis = 1}", "2xi64", &[x]),
            "2xi64",
            &[0, 0],
        );
        let x = ints("3xi8", &[3, -1, 3]);
        assert_ints(
            &eval("array.argmax %a {axis = 0}", "i64", &[x]),
            "i64",
            &[0],
        );
    }

    #[test]
    fn constant() {
        let run = |literal: &str, t: &str| eval(&format!("array.constant {literal}"), t, &[]);
        assert_floats(&run("dense<0.5>", "2xf32"), "2xf32", &[0.5, 0.5]);
        assert_floats(
            &run("dense<[[1.0, 2.0], [3.0, 4.5]]>", "2x2xf64"),
            "2x2xf64",
            &[1.0, 2.0, 3.0, 4.5],
        );
        // The literal is rounded to the element type once, from its decimal text.
        assert_floats(
            &run("dense<[0.1, -inf, nan]>", "3xf16"),
            "3xf16",
            &[0.0999755859375, -INF, NAN],
        );
        assert_bools(&run("dense<[true, false]>", "2xi1"), "2xi1", &[true, false]);
        assert_ints(
            &run(
                "dense<[-9223372036854775808, 9223372036854775807]>",
                "2xi64",
            ),
            "2xi64",
            &[i64::MIN, i64::MAX],
        );
        assert_ints(&run("dense<-3>", "i8"), "i8", &[-3]);
        assert_floats(&run("dense<1.0>", "0x4xf32"), "0x4xf32", &[]);
    }

    #[test]
    fn ops_compose_through_a_function() {
        // mean((x - max(x))^2) of [1, 2, 3, 6]: max 6, squares 25, 16, 9, 0, mean 12.5.
        let text = "
func @f(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %m = array.reduce_max %x {axes = [0]} : tensor<f32>
  %d = array.sub %x, %m : tensor<4xf32>
  %s = array.mul %d, %d : tensor<4xf32>
  %y = array.reduce_mean %s {axes = [0]} : tensor<f32>
  return %y, %d : tensor<f32>, tensor<4xf32>
}
";
        let results = try_run(text, &[floats("4xf32", &[1.0, 2.0, 3.0, 6.0])]).expect("runs");
        assert_floats(&results[0], "f32", &[12.5]);
        assert_floats(&results[1], "4xf32", &[-5.0, -4.0, -3.0, 0.0]);
    }

    #[test]
    fn results_too_large_for_the_host_are_refused() {
        let text = "
func @f(%x: tensor<f32>) -> tensor<100000x100000xf32> {
  %y = array.broadcast %x : tensor<100000x100000xf32>
  return %y : tensor<100000x100000xf32>
}
";
        let error = try_run(text, &[floats("f32", &[1.0])]).expect_err("refused");
        assert_eq!(
            error.0,
            "in @f: 'array.broadcast' would produce tensor<100000x100000xf32>, more than the interpreter's limit of 268435456 elements"
        );
    }
}
