//! Conversion of `array` ops to MLIR: linalg named ops where they exist (matmul,
//! batch_matmul, transpose, fill), `linalg.generic` with broadcasting indexing maps elsewhere,
//! tensor ops for slices and reshapes. Broadcasts are never materialized.

use crate::constant::Constant;
use crate::elementwise::{Binary, BinaryKind, Cast, Compare, Select, Unary, UnaryKind};
use crate::layout::{Broadcast, Concat, Gather, Pad, Reshape, Slice, TakeAlong, Transpose};
use crate::matmul::Matmul;
use crate::reduce::{Argmax, Reduce, ReduceKind};
use crate::storage_cast::{cast_element, CastTables};
use crate::transcendental;
use melior::ir::r#type::IntegerType;
use melior::ir::{Type, Value};
use tessera::attr::{Attribute as TsrAttribute, Scalar};
use tessera::exec::tensor::significand_bits;
use tessera::mlir::bridge::affine::{identity, MapExpr};
use tessera::mlir::bridge::emit::{
    cmpf, cmpi, scalar_of, ConvertError, ConvertResult, Emitter, Indexed, IteratorKind,
};
use tessera::mlir::bridge::layout::ReductionIdentity;
use tessera::mlir::bridge::lowering::{ConvertToMlir, OpConversion};
use tessera::number::largest_finite;
use tessera::types::{ElementClass, ElementType};

type Results<'c, 'a> = ConvertResult<Vec<Value<'c, 'a>>>;

impl ConvertToMlir for Unary {
    fn lowering(&self) -> &'static str {
        "`linalg.generic` applying `arith`/`math` (`negf`, `math.exp`, ...; `rsqrt` as `1 / sqrt`, inverse trigonometric and hyperbolic functions as careful formulas of `exp`, `expm1`, `log1p`, `sqrt`, `atan`)"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        let kind = self.kind;
        let float = op.result().element.is_float();
        let unsigned = op.result().element.is_unsigned();
        let value = op.emit.elementwise(
            &[(op.operands[0], op.operand_types[0])],
            op.result(),
            |e, x| {
                let x = x[0];
                Ok(match (kind, float) {
                    (UnaryKind::Neg, true) => e.same("arith.negf", &[x])?,
                    (UnaryKind::Neg, false) => {
                        let zero = e.const_like(x, 0.0)?;
                        e.same("arith.subi", &[zero, x])?
                    }
                    (UnaryKind::Abs, true) => e.same("math.absf", &[x])?,
                    (UnaryKind::Abs, false) if unsigned => x,
                    (UnaryKind::Abs, false) => e.same("math.absi", &[x])?,
                    (UnaryKind::Exp, _) => e.same("math.exp", &[x])?,
                    (UnaryKind::Log, _) => e.same("math.log", &[x])?,
                    (UnaryKind::Sqrt, _) => e.same("math.sqrt", &[x])?,
                    (UnaryKind::Rsqrt, _) => {
                        let root = e.same("math.sqrt", &[x])?;
                        let one = e.const_like(x, 1.0)?;
                        e.same("arith.divf", &[one, root])?
                    }
                    (UnaryKind::Tanh, _) => e.same("math.tanh", &[x])?,
                    (UnaryKind::Erf, _) => e.same("math.erf", &[x])?,
                    (UnaryKind::Floor, _) => e.same("math.floor", &[x])?,
                    (UnaryKind::Ceil, _) => e.same("math.ceil", &[x])?,
                    (UnaryKind::Sin, _) => e.same("math.sin", &[x])?,
                    (UnaryKind::Cos, _) => e.same("math.cos", &[x])?,
                    (UnaryKind::Tan, _) => e.same("math.tan", &[x])?,
                    (UnaryKind::Asin, _) => transcendental::asin(e, x)?,
                    (UnaryKind::Acos, _) => transcendental::acos(e, x)?,
                    (UnaryKind::Atan, _) => e.same("math.atan", &[x])?,
                    (UnaryKind::Sinh, _) => transcendental::sinh(e, x)?,
                    (UnaryKind::Cosh, _) => transcendental::cosh(e, x)?,
                    (UnaryKind::Asinh, _) => transcendental::asinh(e, x)?,
                    (UnaryKind::Acosh, _) => transcendental::acosh(e, x)?,
                    (UnaryKind::Atanh, _) => transcendental::atanh(e, x)?,
                })
            },
        )?;
        Ok(vec![value])
    }
}

impl ConvertToMlir for Binary {
    fn lowering(&self) -> &'static str {
        "`linalg.generic` with broadcasting indexing maps (no broadcast is materialized); integer division and remainder guarded against traps"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        let kind = self.kind;
        let element = op.result().element;
        let float = element.is_float();
        let unsigned = element.is_unsigned();
        let inputs = [
            (op.operands[0], op.operand_types[0]),
            (op.operands[1], op.operand_types[1]),
        ];
        let value = op.emit.elementwise(&inputs, op.result(), |e, xs| {
            let (a, b) = (xs[0], xs[1]);
            let name = match (kind, float) {
                (BinaryKind::Add, true) => "arith.addf",
                (BinaryKind::Add, false) => "arith.addi",
                (BinaryKind::Sub, true) => "arith.subf",
                (BinaryKind::Sub, false) => "arith.subi",
                (BinaryKind::Mul, true) => "arith.mulf",
                (BinaryKind::Mul, false) => "arith.muli",
                (BinaryKind::Div, true) => "arith.divf",
                (BinaryKind::Div, false) if unsigned => {
                    return guarded_unsigned(e, "arith.divui", a, b)
                }
                (BinaryKind::Div, false) => return guarded_signed(e, "arith.divsi", a, b),
                (BinaryKind::Max, true) => "arith.maximumf",
                (BinaryKind::Max, false) if unsigned => "arith.maxui",
                (BinaryKind::Max, false) => "arith.maxsi",
                (BinaryKind::Min, true) => "arith.minimumf",
                (BinaryKind::Min, false) if unsigned => "arith.minui",
                (BinaryKind::Min, false) => "arith.minsi",
                (BinaryKind::Pow, _) => "math.powf",
                (BinaryKind::Rem, true) => "arith.remf",
                (BinaryKind::And, _) => "arith.andi",
                (BinaryKind::Or, _) => "arith.ori",
                (BinaryKind::Xor, _) => "arith.xori",
                (BinaryKind::ShiftLeft | BinaryKind::ShiftRight, _) => {
                    return guarded_shift(e, kind, element, a, b)
                }
                (BinaryKind::Rem, false) if unsigned => {
                    return guarded_unsigned(e, "arith.remui", a, b)
                }
                (BinaryKind::Rem, false) => return guarded_signed(e, "arith.remsi", a, b),
            };
            e.same(name, &[a, b])
        })?;
        Ok(vec![value])
    }
}

/// Signed division (`arith.divsi`) or remainder (`arith.remsi`) that never traps: by 0 it
/// gives 0; `MIN / -1` wraps to `MIN` and `MIN rem -1` is 0 (unspecified in the language;
/// these are the reference interpreter's choices too). x86's `idiv` faults on both, which
/// would kill the process: the divisors 0 and -1 are replaced by 1 and the results fixed.
fn guarded_signed<'c, 'b>(
    e: &Emitter<'c, 'b>,
    name: &str,
    a: Value<'c, 'b>,
    b: Value<'c, 'b>,
) -> ConvertResult<Value<'c, 'b>> {
    let zero = e.const_like(b, 0.0)?;
    let one = e.const_like(b, 1.0)?;
    let minus_one = e.const_like(b, -1.0)?;
    let is_zero = e.compare(false, cmpi::EQ, b, zero)?;
    let is_minus_one = e.compare(false, cmpi::EQ, b, minus_one)?;
    let unsafe_divisor = e.same("arith.ori", &[is_zero, is_minus_one])?;
    let divisor = e.select(unsafe_divisor, one, b)?;
    let result = e.same(name, &[a, divisor])?;
    let result = if name == "arith.divsi" {
        let negated = e.same("arith.subi", &[zero, a])?;
        e.select(is_minus_one, negated, result)?
    } else {
        result
    };
    e.select(is_zero, zero, result)
}

/// `a << b` or `a >> b` (arithmetic when signed) with the language's meaning for amounts of
/// the bit width or more (LLVM's shifts make those poison): every bit shifted out.
fn guarded_shift<'c, 'b>(
    e: &Emitter<'c, 'b>,
    kind: BinaryKind,
    element: ElementType,
    a: Value<'c, 'b>,
    b: Value<'c, 'b>,
) -> ConvertResult<Value<'c, 'b>> {
    let bits = element.bit_width();
    let width = e.const_like(b, f64::from(bits))?;
    let in_range = e.compare(false, cmpi::ULT, b, width)?;
    let zero = e.const_like(b, 0.0)?;
    let amount = e.select(in_range, b, zero)?;
    let (name, out_of_range) = match kind {
        BinaryKind::ShiftLeft => ("arith.shli", zero),
        _ if element.is_unsigned() => ("arith.shrui", zero),
        _ => {
            // Every bit shifted out of a signed value leaves copies of its sign: a >> (w - 1).
            let last = e.const_like(b, f64::from(bits - 1))?;
            ("arith.shrsi", e.same("arith.shrsi", &[a, last])?)
        }
    };
    let shifted = e.same(name, &[a, amount])?;
    e.select(in_range, shifted, out_of_range)
}

/// Unsigned division or remainder (`name`) that never traps: by 0 it gives 0.
fn guarded_unsigned<'c, 'b>(
    e: &Emitter<'c, 'b>,
    name: &str,
    a: Value<'c, 'b>,
    b: Value<'c, 'b>,
) -> ConvertResult<Value<'c, 'b>> {
    let zero = e.const_like(b, 0.0)?;
    let one = e.const_like(b, 1.0)?;
    let is_zero = e.compare(false, cmpi::EQ, b, zero)?;
    let divisor = e.select(is_zero, one, b)?;
    let result = e.same(name, &[a, divisor])?;
    e.select(is_zero, zero, result)
}

impl ConvertToMlir for Compare {
    fn lowering(&self) -> &'static str {
        "`linalg.generic` with `arith.cmpf` (ordered; `une` for `ne`) or `arith.cmpi`"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        let element = op.operand_types[0].element;
        let class = element.class();
        let predicate = op
            .attr("predicate")
            .and_then(|p| p.as_str().map(String::from))
            .unwrap_or_default();
        // Booleans order as unsigned integers (false < true).
        let signed = class == ElementClass::Int && !element.is_unsigned();
        let code = match (class, signed, predicate.as_str()) {
            (ElementClass::Float, _, "lt") => cmpf::OLT,
            (ElementClass::Float, _, "le") => cmpf::OLE,
            (ElementClass::Float, _, "gt") => cmpf::OGT,
            (ElementClass::Float, _, "ge") => cmpf::OGE,
            (ElementClass::Float, _, "eq") => cmpf::OEQ,
            (ElementClass::Float, _, _) => cmpf::UNE,
            (_, true, "lt") => cmpi::SLT,
            (_, true, "le") => cmpi::SLE,
            (_, true, "gt") => cmpi::SGT,
            (_, true, "ge") => cmpi::SGE,
            (_, false, "lt") => cmpi::ULT,
            (_, false, "le") => cmpi::ULE,
            (_, false, "gt") => cmpi::UGT,
            (_, false, "ge") => cmpi::UGE,
            (_, _, "eq") => cmpi::EQ,
            (_, _, _) => cmpi::NE,
        };
        let float = class == ElementClass::Float;
        let inputs = [
            (op.operands[0], op.operand_types[0]),
            (op.operands[1], op.operand_types[1]),
        ];
        let value = op.emit.elementwise(&inputs, op.result(), |e, xs| {
            e.compare(float, code, xs[0], xs[1])
        })?;
        Ok(vec![value])
    }
}

impl ConvertToMlir for Select {
    fn lowering(&self) -> &'static str {
        "`linalg.generic` with `arith.select`"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        let inputs: Vec<_> = (0..3)
            .map(|i| (op.operands[i], op.operand_types[i]))
            .collect();
        let value = op
            .emit
            .elementwise(&inputs, op.result(), |e, xs| e.select(xs[0], xs[1], xs[2]))?;
        Ok(vec![value])
    }
}

impl ConvertToMlir for Cast {
    fn lowering(&self) -> &'static str {
        "`linalg.generic` with `arith` conversions (`extf`, `truncf`, `sitofp`, `fptosi`, ...)"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        let (from, to) = (op.operand_types[0].element, op.result().element);
        let tables = CastTables::new(&op.emit, from, to)?;
        let value = op.emit.elementwise(
            &[(op.operands[0], op.operand_types[0])],
            op.result(),
            |e, x| cast_element(e, x[0], from, to, &tables),
        )?;
        Ok(vec![value])
    }
}

/// Converts one element from `from` to `to` with the language's cast semantics.
pub fn cast_scalar<'c, 'b>(
    e: &Emitter<'c, 'b>,
    x: Value<'c, 'b>,
    from: ElementType,
    to: ElementType,
) -> ConvertResult<Value<'c, 'b>> {
    use ElementClass::{Bool, Float, Int};
    if from == to {
        return Ok(x);
    }
    let target = e.element_type(to);
    let (fw, tw) = (from.bit_width(), to.bit_width());
    match (from.class(), to.class()) {
        (Float, Float) if fw == tw => {
            // f16 <-> bf16: through f32, which holds both exactly.
            let wide = e.op("arith.extf", &[x], Type::float32(e.context))?;
            e.op("arith.truncf", &[wide], target)
        }
        (Float, Float) if fw < tw => e.op("arith.extf", &[x], target),
        (Float, Float) => e.op("arith.truncf", &[x], target),
        (Int, Float) if from.is_unsigned() => e.op("arith.uitofp", &[x], target),
        (Int, Float) => e.op("arith.sitofp", &[x], target),
        (Bool, Float) => e.op("arith.uitofp", &[x], target),
        (Float, Int) => saturating_float_to_int(e, x, from, to),
        (Float, Bool) => {
            let zero = e.const_like(x, 0.0)?;
            e.compare(true, cmpf::UNE, x, zero)
        }
        (Int, Int) if fw < tw && from.is_unsigned() => e.op("arith.extui", &[x], target),
        (Int, Int) if fw < tw => e.op("arith.extsi", &[x], target),
        (Int, Int) if fw == tw => Ok(x),
        (Int, Int) => e.op("arith.trunci", &[x], target),
        (Bool, Int) => e.op("arith.extui", &[x], target),
        (Int, Bool) => {
            let zero = e.const_like(x, 0.0)?;
            e.compare(false, cmpi::NE, x, zero)
        }
        (Bool, Bool) => Ok(x),
    }
}

/// Float `x` to integer type `to` as the interpreter converts: toward zero, saturating at
/// the type's bounds, NaN to 0 (`fptosi`/`fptoui` alone are undefined out of range). The
/// input is clamped to the floats the conversion takes exactly; beyond them (infinities
/// included) the result is the type's bound.
fn saturating_float_to_int<'c, 'b>(
    e: &Emitter<'c, 'b>,
    x: Value<'c, 'b>,
    from: ElementType,
    to: ElementType,
) -> ConvertResult<Value<'c, 'b>> {
    let wide = from.accumulator();
    if wide != from {
        // f16 and bf16 are compared and clamped in f32, which holds every value of both.
        let x = e.op("arith.extf", &[x], e.element_type(wide))?;
        return saturating_float_to_int(e, x, wide, to);
    }
    let (low, high) = to.int_bounds();
    let finite = largest_finite(from);
    let top = largest_float_at_most(high, significand_bits(from)).min(finite);
    // The lowest bound is 0 or a negative power of two: exact where it is finite.
    let bottom = (low as f64).max(-finite);
    let (bottom_value, top_value) = (e.const_like(x, bottom)?, e.const_like(x, top)?);
    let above = e.same("arith.maximumf", &[x, bottom_value])?;
    let inside = e.same("arith.minimumf", &[above, top_value])?;
    let name = if to.is_unsigned() {
        "arith.fptoui"
    } else {
        "arith.fptosi"
    };
    let converted = e.op(name, &[inside], e.element_type(to))?;
    let over = e.compare(true, cmpf::OGT, x, top_value)?;
    let saturated = e.select(over, e.int_const(to, to.wrap_int(high))?, converted)?;
    let under = e.compare(true, cmpf::OLT, x, bottom_value)?;
    let saturated = e.select(under, e.int_const(to, to.wrap_int(low))?, saturated)?;
    let nan = e.compare(true, cmpf::UNO, x, x)?;
    e.select(nan, e.int_const(to, 0)?, saturated)
}

/// The largest number with `bits` significant bits at most `bound` (> 0): `bound` with the
/// bits below its precision cleared.
fn largest_float_at_most(bound: i128, bits: u32) -> f64 {
    let width = 128 - bound.leading_zeros();
    let dropped = width.saturating_sub(bits);
    ((bound >> dropped) << dropped) as f64
}

impl ConvertToMlir for Matmul {
    fn lowering(&self) -> &'static str {
        "`linalg.matmul` (rank 2), `linalg.batch_matmul` (equal rank-3 batches), else `linalg.generic` with broadcast batch maps"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        let (a, b) = (op.operand_types[0], op.operand_types[1]);
        let e = &op.emit;
        // f16 and bf16 products accumulate in f32, then round once.
        let result = &op.result().with_element(op.result().element.accumulator());
        let init = e.fill(result, 0.0)?;
        let float = result.element.is_float();
        let (input, element) = (a.element, e.element_type(a.element));
        let accumulator = e.element_type(result.element);
        let block_args = [element, element, accumulator];
        let wide = result.element;
        let (ra, rb) = (a.rank(), b.rank());
        let same_batch = ra == rb && a.shape[..ra - 2] == b.shape[..rb - 2];
        let product = if ra == 2 && rb == 2 {
            e.structured(
                "linalg.matmul",
                &op.operands,
                &[(init, result)],
                vec![],
                &block_args,
                |i, x| Ok(vec![widened_mul_add(i, float, x, input, wide)?]),
            )?
        } else if ra == 3 && same_batch {
            e.structured(
                "linalg.batch_matmul",
                &op.operands,
                &[(init, result)],
                vec![],
                &block_args,
                |i, x| Ok(vec![widened_mul_add(i, float, x, input, wide)?]),
            )?
        } else {
            // Broadcast batch dimensions: loops [batch..., m, n, k].
            let batch = result.rank() - 2;
            let batch_map = |shape: &[u64]| -> Vec<MapExpr> {
                let offset = batch - (shape.len() - 2);
                (0..shape.len() - 2)
                    .map(|j| {
                        if shape[j] == 1 && result.shape[j + offset] != 1 {
                            MapExpr::Zero
                        } else {
                            MapExpr::Dim(j + offset)
                        }
                    })
                    .collect()
            };
            let (m, n, k) = (
                MapExpr::Dim(batch),
                MapExpr::Dim(batch + 1),
                MapExpr::Dim(batch + 2),
            );
            let a_map = [batch_map(&a.shape), vec![m, k]].concat();
            let b_map = [batch_map(&b.shape), vec![k, n]].concat();
            let mut iterators = vec![IteratorKind::Parallel; batch + 2];
            iterators.push(IteratorKind::Reduction);
            e.generic(
                &[
                    Indexed {
                        value: op.operands[0],
                        map: a_map,
                    },
                    Indexed {
                        value: op.operands[1],
                        map: b_map,
                    },
                ],
                &[(
                    Indexed {
                        value: init,
                        map: identity(batch + 2),
                    },
                    result,
                )],
                &iterators,
                |i, x| Ok(vec![widened_mul_add(i, float, x, input, wide)?]),
            )?
        };
        Ok(vec![e.rounded(product[0], result, op.result())?])
    }
}

/// `acc + a * b` of the payload arguments `[a, b, acc]`, `a` and `b` (of element type
/// `input`) first widened to the accumulator's type `wide`.
fn widened_mul_add<'c, 'b>(
    e: &Emitter<'c, 'b>,
    float: bool,
    x: &[Value<'c, 'b>],
    input: ElementType,
    wide: ElementType,
) -> ConvertResult<Value<'c, 'b>> {
    let a = e.float_as(x[0], input, wide)?;
    let b = e.float_as(x[1], input, wide)?;
    mul_add(e, float, a, b, x[2])
}

/// `acc + a * b`.
fn mul_add<'c, 'b>(
    e: &Emitter<'c, 'b>,
    float: bool,
    a: Value<'c, 'b>,
    b: Value<'c, 'b>,
    acc: Value<'c, 'b>,
) -> ConvertResult<Value<'c, 'b>> {
    let (mul, add) = if float {
        ("arith.mulf", "arith.addf")
    } else {
        ("arith.muli", "arith.addi")
    };
    let product = e.same(mul, &[a, b])?;
    e.same(add, &[acc, product])
}

impl ConvertToMlir for Transpose {
    fn lowering(&self) -> &'static str {
        "`linalg.transpose`"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        Ok(vec![op.emit.transpose(
            op.operands[0],
            op.result(),
            &op.int_list("perm"),
        )?])
    }
}

impl ConvertToMlir for Reshape {
    fn lowering(&self) -> &'static str {
        "`tensor.collapse_shape` and `tensor.expand_shape`"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        Ok(vec![op.emit.reshape(
            op.operands[0],
            op.operand_types[0],
            op.result(),
        )?])
    }
}

impl ConvertToMlir for Broadcast {
    fn lowering(&self) -> &'static str {
        "`linalg.generic` copy with a broadcasting indexing map"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        let value = op.emit.elementwise(
            &[(op.operands[0], op.operand_types[0])],
            op.result(),
            |_, x| Ok(x[0]),
        )?;
        Ok(vec![value])
    }
}

impl ConvertToMlir for Concat {
    fn lowering(&self) -> &'static str {
        "`tensor.insert_slice` of each operand into a `tensor.empty`"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        let result = op.result();
        let rank = result.rank() as i64;
        let axis =
            op.attr("axis")
                .and_then(|a| a.as_int())
                .map_or(0, |a| if a < 0 { a + rank } else { a }) as usize;
        let mut dest = op.emit.empty(result)?;
        let mut offset = 0u64;
        for (value, ty) in op.operands.iter().zip(&op.operand_types) {
            let mut offsets = vec![0i64; result.rank()];
            offsets[axis] = offset as i64;
            dest = op.emit.insert_slice(*value, ty, dest, result, &offsets)?;
            offset += ty.shape[axis];
        }
        Ok(vec![dest])
    }
}

impl ConvertToMlir for Slice {
    fn lowering(&self) -> &'static str {
        "`tensor.extract_slice`"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        let rank = op.result().rank();
        let start = op.int_list("start");
        let stride = match op.attr("stride") {
            Some(_) => op.int_list("stride"),
            None => vec![1; rank],
        };
        Ok(vec![op.emit.extract_slice(
            op.operands[0],
            op.result(),
            &start,
            &stride,
        )?])
    }
}

impl ConvertToMlir for Gather {
    fn lowering(&self) -> &'static str {
        "`linalg.generic` over the result reading its index from `indices` (clamped, negative wrapped) and the element with `tensor.extract`"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        // Result loops: x's dimensions before the axis, the indices' q, x's after it.
        let q = op.operand_types[1].rank();
        let axis = indexed_axis(op);
        let indices_map = (axis..axis + q).map(MapExpr::Dim).collect();
        read_along_axis(op, indices_map, |d| if d < axis { d } else { d + q - 1 })
    }
}

/// The `axis` attribute of an op indexed along an axis, normalized.
fn indexed_axis(op: &OpConversion<'_, '_, '_>) -> usize {
    let rank = op.operand_types[0].rank() as i64;
    op.attr("axis")
        .and_then(|a| a.as_int())
        .map_or(0, |a| if a < 0 { a + rank } else { a }) as usize
}

/// A `linalg.generic` over the result that reads an index from the indices operand (through
/// `indices_map`), clamps and wraps it, and extracts `x` there: along the axis at that
/// index, along each other dimension `d` of `x` at result loop `loop_of(d)`.
fn read_along_axis<'c, 'a>(
    op: &OpConversion<'c, 'a, '_>,
    indices_map: Vec<MapExpr>,
    loop_of: impl Fn(usize) -> usize,
) -> Results<'c, 'a> {
    let x_ty = op.operand_types[0];
    let result = op.result();
    let axis = indexed_axis(op);
    let dim = x_ty.shape[axis] as i64;
    let e = &op.emit;
    let x = op.operands[0];
    let element = e.element_type(x_ty.element);
    let out = e.empty(result)?;
    let loops = result.rank();
    e.generic(
        &[Indexed {
            value: op.operands[1],
            map: indices_map,
        }],
        &[(
            Indexed {
                value: out,
                map: identity(loops),
            },
            result,
        )],
        &vec![IteratorKind::Parallel; loops],
        |inner, args| {
            let k = clamped_index(inner, args[0], dim)?;
            let at = (0..x_ty.rank())
                .map(|d| {
                    if d == axis {
                        Ok(k)
                    } else {
                        inner.loop_index(loop_of(d))
                    }
                })
                .collect::<ConvertResult<Vec<_>>>()?;
            Ok(vec![extract(inner, x, &at, element)?])
        },
    )
}

/// The element of tensor `x` at `at` (`index` values), of MLIR type `element`.
fn extract<'c, 'b>(
    inner: &Emitter<'c, 'b>,
    x: Value<'c, '_>,
    at: &[Value<'c, 'b>],
    element: Type<'c>,
) -> ConvertResult<Value<'c, 'b>> {
    inner.append_value(
        inner
            .builder("tensor.extract")
            .add_operands(&[x])
            .add_operands(at)
            .add_results(&[element]),
    )
}

/// Index `raw` (an integer) on an axis of size `dim` as an `index`: clamped into
/// `[-dim, dim - 1]`, then counted from the end when negative, so never outside the axis.
fn clamped_index<'c, 'b>(
    inner: &Emitter<'c, 'b>,
    raw: Value<'c, 'b>,
    dim: i64,
) -> ConvertResult<Value<'c, 'b>> {
    let k = inner.op("arith.index_cast", &[raw], inner.index_type())?;
    let low = inner.index_const(-dim)?;
    let high = inner.index_const(dim - 1)?;
    let k = inner.same("arith.maxsi", &[k, low])?;
    let k = inner.same("arith.minsi", &[k, high])?;
    let zero = inner.index_const(0)?;
    let negative = inner.compare(false, cmpi::SLT, k, zero)?;
    let size = inner.index_const(dim)?;
    let wrapped = inner.same("arith.addi", &[k, size])?;
    inner.select(negative, wrapped, k)
}

impl ConvertToMlir for TakeAlong {
    fn lowering(&self) -> &'static str {
        "`linalg.generic` over the result reading its index from `indices` (clamped, negative wrapped) and the element with `tensor.extract`"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        // The result has the indices' shape; every other dimension reads its own loop.
        read_along_axis(op, identity(op.result().rank()), |d| d)
    }
}

impl ConvertToMlir for Pad {
    fn lowering(&self) -> &'static str {
        "`linalg.fill` of the result and `tensor.insert_slice` of the operand"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        let low: Vec<u64> = op.int_list("low").iter().map(|&v| v as u64).collect();
        let high: Vec<u64> = op.int_list("high").iter().map(|&v| v as u64).collect();
        let element = op.result().element;
        // Integers stay exact (an i64 beyond 2^53 would not survive a trip through f64).
        let value = match (op.attr("value"), element.class()) {
            (Some(TsrAttribute::Int(v)), ElementClass::Int) => Scalar::Int(v),
            (attr, _) => scalar_of(element, attr.and_then(|v| v.as_f64()).unwrap_or(0.0)),
        };
        let (padded, _) = op
            .emit
            .pad(op.operands[0], op.operand_types[0], &low, &high, value)?;
        Ok(vec![padded])
    }
}

impl ConvertToMlir for Reduce {
    fn lowering(&self) -> &'static str {
        "`linalg.fill` of the identity and a `linalg.generic` with reduction iterators (mean: then a division)"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        let x = op.operand_types[0];
        let result = op.result();
        let rank = x.rank() as i64;
        let axes: Vec<usize> = op
            .int_list("axes")
            .iter()
            .map(|&a| (if a < 0 { a + rank } else { a }) as usize)
            .collect();
        let keepdims = op
            .attr("keepdims")
            .and_then(|k| k.as_bool())
            .unwrap_or(false);
        // Reducing no axis is the identity. As a generic, it would be an elementwise op that
        // reads its initial value, which upstream elementwise fusion miscompiles (it keeps
        // that output, written by every iteration of the consumer's broadcast loops).
        if axes.is_empty() {
            return Ok(vec![op.operands[0]]);
        }
        let float = x.element.is_float();
        let unsigned = x.element.is_unsigned();
        let identity_value = match self.kind {
            ReduceKind::Sum | ReduceKind::Mean => ReductionIdentity::Zero,
            ReduceKind::Max => ReductionIdentity::Lowest,
            ReduceKind::Min => ReductionIdentity::Highest,
            ReduceKind::Prod => ReductionIdentity::One,
        };
        let combine = match (self.kind, float) {
            (ReduceKind::Sum | ReduceKind::Mean, true) => "arith.addf",
            (ReduceKind::Sum | ReduceKind::Mean, false) => "arith.addi",
            (ReduceKind::Max, true) => "arith.maximumf",
            (ReduceKind::Max, false) if unsigned => "arith.maxui",
            (ReduceKind::Max, false) => "arith.maxsi",
            (ReduceKind::Min, true) => "arith.minimumf",
            (ReduceKind::Min, false) if unsigned => "arith.minui",
            (ReduceKind::Min, false) => "arith.minsi",
            (ReduceKind::Prod, true) => "arith.mulf",
            (ReduceKind::Prod, false) => "arith.muli",
        };
        let e = &op.emit;
        // f16 and bf16 sums and products accumulate in f32, then round once.
        let accumulator = match self.kind {
            ReduceKind::Sum | ReduceKind::Mean | ReduceKind::Prod => x.element.accumulator(),
            ReduceKind::Max | ReduceKind::Min => x.element,
        };
        let accumulated_ty = result.with_element(accumulator);
        let init = e.fill_scalar(&accumulated_ty, identity_value.scalar(accumulator))?;
        let (in_map, out_map, iterators) = reduction_maps(x.rank(), &axes, keepdims);
        let sums = e.generic(
            &[Indexed {
                value: op.operands[0],
                map: in_map,
            }],
            &[(
                Indexed {
                    value: init,
                    map: out_map,
                },
                &accumulated_ty,
            )],
            &iterators,
            |inner, args| {
                let element = inner.float_as(args[0], x.element, accumulator)?;
                Ok(vec![inner.same(combine, &[args[1], element])?])
            },
        )?[0];
        let reduced = if self.kind == ReduceKind::Mean {
            let count: u64 = axes.iter().map(|&a| x.shape[a]).product();
            e.elementwise(&[(sums, &accumulated_ty)], &accumulated_ty, |inner, s| {
                let n = inner.const_like(s[0], count as f64)?;
                inner.same("arith.divf", &[s[0], n])
            })?
        } else {
            sums
        };
        Ok(vec![e.rounded(reduced, &accumulated_ty, result)?])
    }
}

/// The input map, output map and iterators of a reduction of a rank-`rank` input over `axes`.
/// With `keepdims`, each kept (size-1) output dimension gets a loop of its own, parallel with
/// extent 1, right before its reduced axis' loop: the output map stays a projected
/// permutation (as tiling and fusion need) instead of naming the constant 0, and the input's
/// last axis stays the innermost loop (a unit loop there would leave vectors of one lane).
fn reduction_maps(
    rank: usize,
    axes: &[usize],
    keepdims: bool,
) -> (Vec<MapExpr>, Vec<MapExpr>, Vec<IteratorKind>) {
    let mut iterators = Vec::new();
    let mut in_map = Vec::new();
    let mut out_map = Vec::new();
    for d in 0..rank {
        if !axes.contains(&d) {
            out_map.push(MapExpr::Dim(iterators.len()));
            in_map.push(MapExpr::Dim(iterators.len()));
            iterators.push(IteratorKind::Parallel);
            continue;
        }
        if keepdims {
            out_map.push(MapExpr::Dim(iterators.len()));
            iterators.push(IteratorKind::Parallel);
        }
        in_map.push(MapExpr::Dim(iterators.len()));
        iterators.push(IteratorKind::Reduction);
    }
    (in_map, out_map, iterators)
}

impl ConvertToMlir for Argmax {
    fn lowering(&self) -> &'static str {
        "`linalg.generic` reduction with two outputs (maximum, index from `linalg.index`)"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        let x = op.operand_types[0];
        let rank = x.rank() as i64;
        let axis =
            op.attr("axis")
                .and_then(|a| a.as_int())
                .map_or(0, |a| if a < 0 { a + rank } else { a }) as usize;
        let result = op.result();
        let best_ty = result.with_element(x.element);
        let e = &op.emit;
        let best = e.fill_scalar(&best_ty, ReductionIdentity::Lowest.scalar(x.element))?;
        let index = e.fill(result, 0.0)?;
        let (in_map, out_map, iterators) = reduction_maps(x.rank(), &[axis], false);
        let float = x.element.is_float();
        let unsigned = x.element.is_unsigned();
        let context = e.context;
        let results = e.generic(
            &[Indexed {
                value: op.operands[0],
                map: in_map,
            }],
            &[
                (
                    Indexed {
                        value: best,
                        map: out_map.clone(),
                    },
                    &best_ty,
                ),
                (
                    Indexed {
                        value: index,
                        map: out_map,
                    },
                    result,
                ),
            ],
            &iterators,
            |inner, args| {
                let (v, best, best_index) = (args[0], args[1], args[2]);
                let position = inner.loop_index(axis)?;
                let position = inner.op(
                    "arith.index_cast",
                    &[position],
                    IntegerType::new(context, 64).into(),
                )?;
                let predicate = match (float, unsigned) {
                    (true, _) => cmpf::OGT,
                    (false, true) => cmpi::UGT,
                    (false, false) => cmpi::SGT,
                };
                let greater = inner.compare(float, predicate, v, best)?;
                let take = if float {
                    // The first NaN wins and stays.
                    let v_nan = inner.compare(true, cmpf::UNO, v, v)?;
                    let best_nan = inner.compare(true, cmpf::UNO, best, best)?;
                    let best_ok = inner.const_like(best_nan, 1.0)?;
                    let best_not_nan = inner.same("arith.xori", &[best_nan, best_ok])?;
                    let new_nan = inner.same("arith.andi", &[v_nan, best_not_nan])?;
                    inner.same("arith.ori", &[greater, new_nan])?
                } else {
                    greater
                };
                Ok(vec![
                    inner.select(take, v, best)?,
                    inner.select(take, position, best_index)?,
                ])
            },
        )?;
        Ok(vec![results[1]])
    }
}

impl ConvertToMlir for Constant {
    fn lowering(&self) -> &'static str {
        "`arith.constant dense<...>` (a side file's tensor copied in as one raw buffer)"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        let literal = op
            .literal
            .ok_or_else(|| ConvertError("array.constant without its literal".into()))?;
        Ok(vec![op.emit.constant(op.result(), literal)?])
    }
}
