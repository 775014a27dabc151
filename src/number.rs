//! Numbers in the text: rounding a literal to an element type, and printing the shortest text
//! that reads back to the same bits.

use crate::types::ElementType;
use half::{bf16, f16};

/// Rounds `value` to the nearest value of float type `ty` (ties to even; f64 is exact).
pub fn round_to(value: f64, ty: ElementType) -> f64 {
    match ty {
        ElementType::F32 => value as f32 as f64,
        ElementType::F16 => nearest_16_bit(value, f16::from_f64(value).to_bits(), 0x7c00, |b| {
            f16::from_bits(b).to_f64()
        }),
        ElementType::BF16 => nearest_16_bit(value, bf16::from_f64(value).to_bits(), 0x7f80, |b| {
            bf16::from_bits(b).to_f64()
        }),
        _ => ty.minifloat().map_or(value, |format| format.round(value)),
    }
}

/// The largest finite value of float type `ty` (f64's for the others).
pub fn largest_finite(ty: ElementType) -> f64 {
    match ty {
        ElementType::F32 => f64::from(f32::MAX),
        ElementType::F16 => f16::MAX.to_f64(),
        ElementType::BF16 => bf16::MAX.to_f64(),
        _ => match ty.minifloat() {
            Some(format) => format.decode(format.max_code()),
            None => f64::MAX,
        },
    }
}

/// The value of a 16-bit float format nearest to `value`, ties to even, overflowing to
/// infinity as IEEE 754 does. `guess` is a candidate at most one step off (the `half` crate
/// converts through f32 on some hosts, which rounds twice near ties); `infinity_bits` is the
/// format's positive infinity; `decode` reads bits.
fn nearest_16_bit(value: f64, guess: u16, infinity_bits: u16, decode: impl Fn(u16) -> f64) -> f64 {
    if !value.is_finite() {
        return value;
    }
    const SIGN: u16 = 0x8000;
    let sign = if value.is_sign_negative() { SIGN } else { 0 };
    let magnitude = value.abs();
    // The largest finite magnitude is the bit pattern just below infinity's; from half a step
    // above it, IEEE rounding gives infinity.
    let max = decode(infinity_bits - 1);
    let overflow = max + (max - decode(infinity_bits - 2)) / 2.0;
    let rounded = if magnitude >= overflow {
        decode(sign | infinity_bits)
    } else {
        let base = (guess & !SIGN).min(infinity_bits - 1);
        let candidates = [
            base.saturating_sub(1),
            base,
            (base + 1).min(infinity_bits - 1),
        ];
        let best = candidates
            .into_iter()
            .min_by(|&a, &b| {
                let (da, db) = ((decode(a) - magnitude).abs(), (decode(b) - magnitude).abs());
                da.total_cmp(&db).then((a & 1).cmp(&(b & 1)))
            })
            .unwrap_or(base);
        decode(sign | best)
    };
    // Keep the sign of zero.
    if rounded == 0.0 {
        value.signum() * 0.0
    } else {
        rounded
    }
}

/// Parses float literal text (`1.5`, `-2.0e-3`, `inf`, `-inf`, `nan`) to the nearest value of
/// float type `ty`, rounding once from the decimal text.
pub fn parse_float(text: &str, ty: ElementType) -> Option<f64> {
    let value = match text {
        "inf" => f64::INFINITY,
        "-inf" => f64::NEG_INFINITY,
        "nan" => f64::NAN,
        _ if ty == ElementType::F32 => return text.parse::<f32>().ok().map(f64::from),
        _ => text.parse::<f64>().ok()?,
    };
    Some(round_to(value, ty))
}

/// The shortest text that parses back (with [`parse_float`]) to the same bits of `ty`, in the
/// canonical spelling: always a `.` in the mantissa (`1.0`, `1.0e-5`), `inf`, `-inf`, `nan`.
pub fn format_float(value: f64, ty: ElementType) -> String {
    if value.is_nan() {
        return "nan".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.into();
    }
    let shortest = match ty {
        ElementType::F32 => format!("{:?}", value as f32),
        _ if ty.is_float() && ty != ElementType::F64 => shortest_by_search(value, ty),
        _ => format!("{value:?}"),
    };
    with_decimal_point(&shortest)
}

/// The fewest significant digits that round back to `value` in `ty`, for types Rust cannot
/// print directly.
fn shortest_by_search(value: f64, ty: ElementType) -> String {
    (0..17)
        .map(|digits| format!("{value:.digits$e}"))
        .find(|text| parse_float(text, ty).map(f64::to_bits) == Some(value.to_bits()))
        .map(|text| plain_if_short(&text))
        .unwrap_or_else(|| format!("{value:?}"))
}

/// `1.5e0` → `1.5`, `1e-7` stays exponential: the same rule as Rust's `{:?}` for floats.
fn plain_if_short(sci: &str) -> String {
    let value: f64 = sci.parse().unwrap_or(0.0);
    let exponent: i32 = sci
        .split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    if (-5..17).contains(&exponent) {
        format!("{value:?}")
    } else {
        sci.to_string()
    }
}

/// Inserts `.0` into a mantissa that has no decimal point (`1e-5` → `1.0e-5`, `3` → `3.0`).
fn with_decimal_point(text: &str) -> String {
    let (mantissa, exponent) = match text.split_once('e') {
        Some((m, e)) => (m, Some(e)),
        None => (text, None),
    };
    let mantissa = if mantissa.contains('.') {
        mantissa.to_string()
    } else {
        format!("{mantissa}.0")
    };
    match exponent {
        Some(e) => format!("{mantissa}e{e}"),
        None => mantissa,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ElementType::*;

    #[test]
    fn canonical_spelling() {
        assert_eq!(format_float(1.0e-5, F64), "1.0e-5");
        assert_eq!(format_float(0.5, F32), "0.5");
        assert_eq!(format_float(3.0, F64), "3.0");
        assert_eq!(format_float(-0.0, F32), "-0.0");
        assert_eq!(format_float(f64::NEG_INFINITY, F16), "-inf");
        assert_eq!(format_float(parse_float("0.1", F32).unwrap(), F32), "0.1");
        assert_eq!(format_float(parse_float("0.1", F16).unwrap(), F16), "0.1");
        assert_eq!(format_float(parse_float("0.1", BF16).unwrap(), BF16), "0.1");
        assert_eq!(
            format_float(parse_float("1e-7", F16).unwrap(), F16),
            "1.0e-7"
        );
    }

    #[test]
    fn sixteen_bit_rounding_is_correct_near_ties() {
        assert_eq!(parse_float("1.000488281250001", F16), Some(1.0009765625));
        assert_eq!(parse_float("1.00048828125", F16), Some(1.0));
        assert_eq!(parse_float("1.00390625000001", BF16), Some(1.0078125));
        assert_eq!(parse_float("65519.99", F16), Some(65504.0));
        assert_eq!(parse_float("65520", F16), Some(f64::INFINITY));
        assert_eq!(
            parse_float("-1e-9", F16).map(|v| v.to_bits()),
            Some((-0.0f64).to_bits())
        );
        // Just above and below every midpoint between neighbouring positive finite values.
        type Decode = fn(u16) -> f64;
        let formats: [(ElementType, u16, Decode); 2] = [
            (F16, 0x7bff, |b| f16::from_bits(b).to_f64()),
            (BF16, 0x7f7f, |b| bf16::from_bits(b).to_f64()),
        ];
        for (ty, last, decode) in formats {
            for bits in 0..last {
                let (low, high) = (decode(bits), decode(bits + 1));
                let mid = (low + high) / 2.0;
                let step = (high - low) * 1e-6;
                assert_eq!(
                    round_to(mid + step, ty),
                    high,
                    "{ty}: above the midpoint after {bits:#x}"
                );
                assert_eq!(
                    round_to(mid - step, ty),
                    low,
                    "{ty}: below the midpoint after {bits:#x}"
                );
                let even = if bits & 1 == 0 { low } else { high };
                assert_eq!(round_to(mid, ty), even, "{ty}: tie after {bits:#x}");
            }
        }
    }

    #[test]
    fn every_f16_reads_back_to_its_bits() {
        for bits in 0..=u16::MAX {
            for (value, ty) in [
                (f16::from_bits(bits).to_f64(), F16),
                (bf16::from_bits(bits).to_f64(), BF16),
            ] {
                let text = format_float(value, ty);
                let back = parse_float(&text, ty).unwrap();
                assert!(
                    back.to_bits() == value.to_bits() || (back.is_nan() && value.is_nan()),
                    "{ty}: {value:e} printed as {text}, read back as {back:e}"
                );
            }
        }
    }
}
