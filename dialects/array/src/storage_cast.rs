//! Casts from and to the storage-only element types, spelled out in integer, float and table
//! operations on the byte each element is kept in (MLIR 19 lowers no arithmetic on its 8-bit
//! float types to LLVM, and has no 4-bit float type): the 4- and 2-bit integers compute as
//! their byte; an 8- or 4-bit float decodes through a table of what each code stands for and
//! rounds by counting the thresholds below its magnitude (a binary search over a table), which
//! serves nearest-even rounding and `f8E8M0FNU`'s rounding up alike.

use crate::convert::cast_scalar;
use melior::ir::r#type::IntegerType;
use melior::ir::{Type, Value};
use tessera::attr::{DenseValue, Scalar};
use tessera::minifloat::{MiniFloat, Specials};
use tessera::mlir::bridge::emit::{cmpf, cmpi, ConvertResult, Emitter};
use tessera::types::{ElementType, TensorType};

/// The tables a cast between `from` and `to` reads, made once outside its loop body.
pub struct CastTables<'c, 'a> {
    /// What each code of `from` stands for (f32), when `from` is a small float.
    decode: Option<Value<'c, 'a>>,
    /// The rounding thresholds of `to` (f64), padded with NaN to a power of two, when `to`
    /// is a small float.
    thresholds: Option<Value<'c, 'a>>,
}

impl<'c, 'a> CastTables<'c, 'a> {
    /// The tables for a cast from `from` to `to`, as constants of `e`.
    pub fn new(e: &Emitter<'c, 'a>, from: ElementType, to: ElementType) -> ConvertResult<Self> {
        let decode = match from.minifloat() {
            Some(format) => {
                let codes = 1u16 << format.bits();
                let values = (0..codes)
                    .map(|c| Scalar::Float(format.decode(c as u8)))
                    .collect();
                let ty = TensorType::new(vec![u64::from(codes)], ElementType::F32);
                Some(e.constant(&ty, &DenseValue::Elements(values))?)
            }
            None => None,
        };
        let thresholds = match to.minifloat() {
            Some(format) => {
                let mut values: Vec<Scalar> =
                    format.thresholds().into_iter().map(Scalar::Float).collect();
                values.resize(1 << format.bits(), Scalar::Float(f64::NAN));
                let ty = TensorType::new(vec![values.len() as u64], ElementType::F64);
                Some(e.constant(&ty, &DenseValue::Elements(values))?)
            }
            None => None,
        };
        Ok(CastTables { decode, thresholds })
    }
}

/// Converts one element from `from` to `to` (either may be storage-only) with the language's
/// cast semantics, reading `tables`.
pub fn cast_element<'c, 'b>(
    e: &Emitter<'c, 'b>,
    x: Value<'c, 'b>,
    from: ElementType,
    to: ElementType,
    tables: &CastTables<'c, '_>,
) -> ConvertResult<Value<'c, 'b>> {
    if from == to {
        return Ok(x);
    }
    if let (Some(format), Some(table)) = (from.minifloat(), tables.decode) {
        let wide = decode(e, x, format, table)?;
        return cast_element(e, wide, ElementType::F32, to, tables);
    }
    if let (Some(format), Some(table)) = (to.minifloat(), tables.thresholds) {
        let wide = cast_element(e, x, from, ElementType::F64, tables)?;
        return encode(e, wide, format, table);
    }
    if from.is_storage_only() {
        return cast_scalar(e, x, byte_of(from), to);
    }
    if to.is_storage_only() {
        let byte = cast_scalar(e, x, from, byte_of(to))?;
        return match from.is_float() {
            true => clamp(e, byte, to),
            false => wrap(e, byte, to),
        };
    }
    cast_scalar(e, x, from, to)
}

/// The byte type a 4- or 2-bit integer type computes as (sign- or zero-extended).
fn byte_of(element: ElementType) -> ElementType {
    if element.is_unsigned() {
        ElementType::U8
    } else {
        ElementType::I8
    }
}

/// A byte a float was converted to (saturating at the byte's bounds) clamped to the bounds
/// of `to`: the interpreter's float to integer cast, saturating.
fn clamp<'c, 'b>(
    e: &Emitter<'c, 'b>,
    byte: Value<'c, 'b>,
    to: ElementType,
) -> ConvertResult<Value<'c, 'b>> {
    let (low, high) = to.int_bounds();
    let high = byte_const(e, high as i64)?;
    if to.is_unsigned() {
        return e.same("arith.minui", &[byte, high]);
    }
    let above = e.same("arith.maxsi", &[byte, byte_const(e, low as i64)?])?;
    e.same("arith.minsi", &[above, high])
}

/// An integer byte brought into the range of `to` by two's complement wrapping: the low
/// bits kept, sign- or zero-extended back into the byte.
fn wrap<'c, 'b>(
    e: &Emitter<'c, 'b>,
    byte: Value<'c, 'b>,
    to: ElementType,
) -> ConvertResult<Value<'c, 'b>> {
    if to.is_unsigned() {
        let mask = byte_const(e, to.int_bounds().1 as i64)?;
        return e.same("arith.andi", &[byte, mask]);
    }
    let shift = byte_const(e, 8 - i64::from(to.bit_width()))?;
    let up = e.same("arith.shli", &[byte, shift])?;
    e.same("arith.shrsi", &[up, shift])
}

/// The f32 that code `x` (an `i8`) of `format` stands for, read from `table`.
fn decode<'c, 'b>(
    e: &Emitter<'c, 'b>,
    x: Value<'c, 'b>,
    format: MiniFloat,
    table: Value<'c, '_>,
) -> ConvertResult<Value<'c, 'b>> {
    let mask = byte_const(e, (1i64 << format.bits()) - 1)?;
    let code = e.same("arith.andi", &[x, mask])?;
    let at = e.op("arith.index_castui", &[code], e.index_type())?;
    extract(e, table, at, Type::float32(e.context))
}

/// The code of `format` nearest to `x` (an f64), as an `i8`: the number of `thresholds`
/// at or below its magnitude, found by halving, then overflow, NaN and the sign.
fn encode<'c, 'b>(
    e: &Emitter<'c, 'b>,
    x: Value<'c, 'b>,
    format: MiniFloat,
    thresholds: Value<'c, '_>,
) -> ConvertResult<Value<'c, 'b>> {
    let magnitude = e.same("math.absf", &[x])?;
    let mut count = e.index_const(0)?;
    let mut step = 1i64 << (format.bits() - 1);
    while step > 0 {
        let candidate = e.same("arith.addi", &[count, e.index_const(step)?])?;
        let at = e.same("arith.subi", &[candidate, e.index_const(1)?])?;
        let threshold = extract(e, thresholds, at, Type::float64(e.context))?;
        let reaches = e.compare(true, cmpf::OGE, magnitude, threshold)?;
        count = e.select(reaches, candidate, count)?;
        step /= 2;
    }
    let i8_type: Type<'c> = IntegerType::new(e.context, 8).into();
    let code = e.op("arith.index_cast", &[count], i8_type)?;
    let max = i64::from(format.max_code());
    let overflow = match format.specials {
        Specials::Ieee => max + 1,
        Specials::Numbers | Specials::PowersOfTwo => max,
        Specials::Finite | Specials::UnsignedZero => i64::from(format.nan_code()),
    };
    let over = e.compare(false, cmpi::UGT, code, byte_const(e, max)?)?;
    let code = e.select(over, byte_const(e, overflow)?, code)?;
    let nan = e.compare(true, cmpf::UNO, x, x)?;
    let nan_code = byte_const(e, i64::from(format.nan_code()))?;
    if !format.signed() {
        // Powers of two: no sign; infinities have no code either.
        let infinity = e.const_like(magnitude, f64::INFINITY)?;
        let infinite = e.compare(true, cmpf::OEQ, magnitude, infinity)?;
        let special = e.same("arith.ori", &[nan, infinite])?;
        return e.select(special, nan_code, code);
    }
    // The sign from the f64's top bit; no negative zero where the format has none.
    let bits = e.op(
        "arith.bitcast",
        &[x],
        IntegerType::new(e.context, 64).into(),
    )?;
    let zero64 = e.scalar_const(ElementType::I64, 0.0)?;
    let mut negative = e.compare(false, cmpi::SLT, bits, zero64)?;
    if format.specials == Specials::UnsignedZero {
        let nonzero = e.compare(false, cmpi::NE, code, byte_const(e, 0)?)?;
        negative = e.same("arith.andi", &[negative, nonzero])?;
    }
    let sign = byte_const(e, 1i64 << (format.bits() - 1))?;
    let signed = e.same("arith.ori", &[code, sign])?;
    let code = e.select(negative, signed, code)?;
    e.select(nan, nan_code, code)
}

/// An `i8` constant with the low 8 bits of `bits`.
fn byte_const<'c, 'b>(e: &Emitter<'c, 'b>, bits: i64) -> ConvertResult<Value<'c, 'b>> {
    e.scalar_const(ElementType::I8, f64::from(bits as u8 as i8))
}

/// `table[at]`.
fn extract<'c, 'b>(
    e: &Emitter<'c, 'b>,
    table: Value<'c, '_>,
    at: Value<'c, 'b>,
    element: Type<'c>,
) -> ConvertResult<Value<'c, 'b>> {
    e.append_value(
        e.builder("tensor.extract")
            .add_operands(&[table, at])
            .add_results(&[element]),
    )
}
