//! The 8- and 4-bit float formats of ONNX and MLIR (`f8E4M3FN`, `f8E4M3FNUZ`, `f8E5M2`,
//! `f8E5M2FNUZ`, `f4E2M1FN`, and the scale format `f8E8M0FNU`): what each code stands for,
//! and rounding to a code.

/// What a format's extreme codes mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Specials {
    /// IEEE 754: the all-ones exponent holds the infinities and NaNs.
    Ieee,
    /// No infinities; only the all-ones code (each sign) is NaN (`FN`).
    Finite,
    /// No infinities and no negative zero: its code, the sign bit alone, is the one NaN
    /// (`FNUZ`).
    UnsignedZero,
    /// No infinities and no NaN: every code is a number.
    Numbers,
    /// No sign, no mantissa, no zero: the powers of two, the all-ones code NaN (`f8E8M0FNU`,
    /// the scales of the OCP MX formats). Magnitudes round up (ONNX's default), saturating;
    /// the sign is dropped.
    PowersOfTwo,
}

/// A small binary float format: a sign bit, `exponent` bits and `mantissa` bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MiniFloat {
    /// Exponent bits.
    pub exponent: u32,
    /// Mantissa bits (without the implicit one).
    pub mantissa: u32,
    /// The exponent bias.
    pub bias: i32,
    /// What the extreme codes mean.
    pub specials: Specials,
}

/// `f8E4M3FN`: 4 exponent bits, 3 mantissa bits, largest finite 448.
pub const F8E4M3FN: MiniFloat = MiniFloat {
    exponent: 4,
    mantissa: 3,
    bias: 7,
    specials: Specials::Finite,
};
/// `f8E4M3FNUZ`: as `f8E4M3FN` with bias 8, no negative zero, largest finite 240.
pub const F8E4M3FNUZ: MiniFloat = MiniFloat {
    exponent: 4,
    mantissa: 3,
    bias: 8,
    specials: Specials::UnsignedZero,
};
/// `f8E5M2`: IEEE-like, 5 exponent bits, 2 mantissa bits, largest finite 57344.
pub const F8E5M2: MiniFloat = MiniFloat {
    exponent: 5,
    mantissa: 2,
    bias: 15,
    specials: Specials::Ieee,
};
/// `f8E5M2FNUZ`: bias 16, no infinities, no negative zero, largest finite 57344.
pub const F8E5M2FNUZ: MiniFloat = MiniFloat {
    exponent: 5,
    mantissa: 2,
    bias: 16,
    specials: Specials::UnsignedZero,
};
/// `f8E8M0FNU`: 8 exponent bits and nothing else: 2^-127 ... 2^127.
pub const F8E8M0FNU: MiniFloat = MiniFloat {
    exponent: 8,
    mantissa: 0,
    bias: 127,
    specials: Specials::PowersOfTwo,
};
/// `f4E2M1FN`: 2 exponent bits, 1 mantissa bit: ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}.
pub const F4E2M1FN: MiniFloat = MiniFloat {
    exponent: 2,
    mantissa: 1,
    bias: 1,
    specials: Specials::Numbers,
};

impl MiniFloat {
    /// Bits per code, the sign included.
    pub fn bits(self) -> u32 {
        self.exponent + self.mantissa + u32::from(self.signed())
    }

    /// True when the format has a sign bit (all but `PowersOfTwo`).
    pub fn signed(self) -> bool {
        self.specials != Specials::PowersOfTwo
    }

    /// The sign bit (none: 0).
    pub fn sign(self) -> u8 {
        match self.signed() {
            true => 1 << (self.exponent + self.mantissa),
            false => 0,
        }
    }

    /// The codes of the magnitudes (all codes for an unsigned format).
    fn magnitude_mask(self) -> u8 {
        ((1u16 << (self.exponent + self.mantissa)) - 1) as u8
    }

    /// The largest code of a finite positive number; the positive codes up to it stand for
    /// increasing numbers.
    pub fn max_code(self) -> u8 {
        let magnitude = self.magnitude_mask();
        match self.specials {
            Specials::Ieee => magnitude - (1 << self.mantissa),
            Specials::Finite | Specials::PowersOfTwo => magnitude - 1,
            Specials::UnsignedZero | Specials::Numbers => magnitude,
        }
    }

    /// The code a NaN becomes (`Numbers` has none: NaN becomes zero).
    pub fn nan_code(self) -> u8 {
        match self.specials {
            Specials::Ieee | Specials::Finite | Specials::PowersOfTwo => self.magnitude_mask(),
            Specials::UnsignedZero => self.sign(),
            Specials::Numbers => 0,
        }
    }

    /// The number `code` stands for (its low `bits()` bits).
    pub fn decode(self, code: u8) -> f64 {
        let code = code & ((1u16 << self.bits()) - 1) as u8;
        let negative = code & self.sign() != 0;
        let magnitude = code & self.magnitude_mask();
        let exponent = i32::from(magnitude >> self.mantissa);
        let mantissa = f64::from(magnitude & ((1 << self.mantissa) - 1));
        let all_ones = (1 << self.exponent) - 1;
        let value = match self.specials {
            Specials::UnsignedZero if code == self.sign() => return f64::NAN,
            Specials::Finite | Specials::PowersOfTwo if magnitude == self.magnitude_mask() => {
                return f64::NAN
            }
            Specials::PowersOfTwo => 2f64.powi(exponent - self.bias),
            Specials::Ieee if exponent == all_ones && mantissa == 0.0 => f64::INFINITY,
            Specials::Ieee if exponent == all_ones => return f64::NAN,
            _ if exponent == 0 => mantissa * 2f64.powi(1 - self.bias - self.mantissa as i32),
            _ => (1.0 + mantissa / f64::from(1 << self.mantissa)) * 2f64.powi(exponent - self.bias),
        };
        if negative {
            -value
        } else {
            value
        }
    }

    /// The code nearest to `value`, ties to the even code, as IEEE 754 rounds. Beyond the
    /// largest finite number (from half a step above it, ties to even) a value overflows to
    /// infinity (`Ieee`), NaN (`Finite`, `UnsignedZero`) or the largest number (`Numbers`,
    /// which has neither); NaN becomes the format's NaN (zero for `Numbers`).
    ///
    /// `PowersOfTwo` rounds the magnitude up to a power of two (ONNX's default): zero and
    /// anything up to 2^-127 to 2^-127, beyond 2^127 to 2^127 (saturating); infinities and
    /// NaN become NaN.
    pub fn encode(self, value: f64) -> u8 {
        if value.is_nan() || (self.specials == Specials::PowersOfTwo && value.is_infinite()) {
            return self.nan_code();
        }
        let sign = if value.is_sign_negative() {
            self.sign()
        } else {
            0
        };
        let code = match self.round_magnitude(value.abs()) {
            Some(code) => code,
            None => match self.specials {
                Specials::Ieee => self.max_code() + 1,
                Specials::Numbers | Specials::PowersOfTwo => self.max_code(),
                Specials::Finite | Specials::UnsignedZero => return self.nan_code() | sign,
            },
        };
        match self.specials {
            Specials::UnsignedZero if code == 0 => 0,
            _ => code | sign,
        }
    }

    /// The nearest value of the format to `value`, as [`MiniFloat::encode`] rounds.
    pub fn round(self, value: f64) -> f64 {
        self.decode(self.encode(value))
    }

    /// The positive code nearest to `magnitude` (≥ 0, not NaN; for `PowersOfTwo` the code
    /// at or above it), or `None` when it overflows.
    fn round_magnitude(self, magnitude: f64) -> Option<u8> {
        if self.specials == Specials::PowersOfTwo {
            return self.round_up(magnitude);
        }
        let below = (0..=self.max_code())
            .rev()
            .find(|&c| self.decode(c) <= magnitude)
            .unwrap_or(0);
        if self.decode(below) == magnitude {
            return Some(below);
        }
        // Past the largest number, the next code up is one step of its binade beyond it.
        let step = self.decode(self.max_code()) - self.decode(self.max_code() - 1);
        let above = match below.checked_add(1).filter(|&c| c <= self.max_code()) {
            Some(c) => self.decode(c),
            None => self.decode(below) + step,
        };
        let (low, high) = (magnitude - self.decode(below), above - magnitude);
        let up = high < low || (high == low && below % 2 == 1);
        match up {
            false => Some(below),
            true if below < self.max_code() => Some(below + 1),
            true => None,
        }
    }

    /// `PowersOfTwo`'s code for `magnitude`: the first power of two at or above it.
    fn round_up(self, magnitude: f64) -> Option<u8> {
        (0..=self.max_code()).find(|&c| self.decode(c) >= magnitude)
    }

    /// For codes `1..=max_code() + 1`, the smallest magnitude that rounds to that code or
    /// beyond (the last: the smallest that overflows), in `f64`: the midpoint of the two
    /// neighbouring numbers, or the next float above it when the tie goes down. For
    /// `PowersOfTwo` (rounding up): the next f64 above each power of two; nothing overflows
    /// (its last threshold is NaN).
    pub fn thresholds(self) -> Vec<f64> {
        if self.specials == Specials::PowersOfTwo {
            let above = |c: u8| f64::from_bits(self.decode(c).to_bits() + 1);
            return (0..self.max_code())
                .map(above)
                .chain(std::iter::once(f64::NAN))
                .collect();
        }
        let step = self.decode(self.max_code()) - self.decode(self.max_code() - 1);
        (1..=u16::from(self.max_code()) + 1)
            .map(|code| {
                let low = self.decode((code - 1) as u8);
                let high = match u8::try_from(code).ok().filter(|&c| c <= self.max_code()) {
                    Some(c) => self.decode(c),
                    None => low + step,
                };
                let middle = (low + high) / 2.0;
                // A tie rounds to the even code.
                if code % 2 == 0 {
                    middle
                } else {
                    f64::from_bits(middle.to_bits() + 1)
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_numbers_and_specials() {
        assert_eq!(F8E4M3FN.decode(F8E4M3FN.max_code()), 448.0);
        assert_eq!(F8E4M3FNUZ.decode(F8E4M3FNUZ.max_code()), 240.0);
        assert_eq!(F8E5M2.decode(F8E5M2.max_code()), 57344.0);
        assert_eq!(F8E5M2.decode(F8E5M2.max_code() + 1), f64::INFINITY);
        assert_eq!(F8E5M2FNUZ.decode(F8E5M2FNUZ.max_code()), 57344.0);
        assert_eq!(F4E2M1FN.decode(F4E2M1FN.max_code()), 6.0);
        assert!(F8E4M3FN.decode(0xff).is_nan() && F8E4M3FNUZ.decode(0x80).is_nan());
        assert_eq!(F8E4M3FN.decode(0x80), 0.0);
        // The smallest subnormals: 2^-9, 2^-10 and 2^-16.
        assert_eq!(F8E4M3FN.decode(1), 2f64.powi(-9));
        assert_eq!(F8E4M3FNUZ.decode(1), 2f64.powi(-10));
        assert_eq!(F8E5M2.decode(1), 2f64.powi(-16));
        let f4: Vec<f64> = (0..8).map(|c| F4E2M1FN.decode(c)).collect();
        assert_eq!(f4, [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
    }

    #[test]
    fn rounding_is_to_nearest_even_with_each_formats_overflow() {
        // ONNX's test values (test_cast_FLOAT_to_FLOAT8E4M3FN and no_saturate).
        for (x, y) in [
            (0.47892547, 0.46875),
            (0.49968487, 0.5),
            (0.8191054, 0.8125),
            (0.7229038, 0.75),
        ] {
            assert_eq!(F8E4M3FN.round(x), y, "{x}");
        }
        assert!(F8E4M3FN.round(1e6).is_nan());
        assert_eq!(F8E4M3FN.round(-1e-7), 0.0);
        assert!(F8E4M3FN.round(-1e-7).is_sign_negative());
        assert!(F8E4M3FNUZ.round(-1e-7).is_sign_positive());
        assert_eq!(F8E5M2.round(-1e6), f64::NEG_INFINITY);
        assert_eq!(F8E5M2.round(f64::INFINITY), f64::INFINITY);
        // Ties: 464 lies between 448 (even code) and the overflow: it stays 448; 61440 lies
        // between 57344 (odd code) and 65536: it overflows.
        assert_eq!(F8E4M3FN.round(464.0), 448.0);
        assert!(F8E4M3FN.round(464.1).is_nan());
        assert_eq!(F8E5M2.round(61440.0), f64::INFINITY);
        assert_eq!(F8E5M2.round(61439.0), 57344.0);
        // f4E2M1FN saturates and has no NaN.
        assert_eq!(F4E2M1FN.round(1e6), 6.0);
        assert_eq!(F4E2M1FN.round(-3.5), -4.0);
        assert_eq!(F4E2M1FN.round(0.25), 0.0);
        assert_eq!(F4E2M1FN.round(f64::NAN), 0.0);
    }

    #[test]
    fn scales_round_up_to_powers_of_two() {
        let e8m0 = F8E8M0FNU;
        assert_eq!(
            (e8m0.bits(), e8m0.max_code(), e8m0.nan_code()),
            (8, 254, 255)
        );
        assert_eq!(e8m0.decode(127), 1.0);
        assert_eq!(e8m0.decode(0), 2f64.powi(-127));
        assert!(e8m0.decode(255).is_nan());
        // ONNX's test_cast_e8m0_FLOAT_to_FLOAT8E8M0 (round_mode "up", saturate).
        let inputs = [0.0, 0.124, 0.25, 0.5, 1.1, 2.0, 4.0, 8.0];
        let outputs: Vec<f64> = inputs.iter().map(|&x| e8m0.round(x)).collect();
        assert_eq!(
            outputs,
            [2f64.powi(-127), 0.125, 0.25, 0.5, 2.0, 2.0, 4.0, 8.0]
        );
        assert_eq!(e8m0.encode(-3.0), e8m0.encode(3.0));
        assert_eq!(e8m0.encode(1e-40), 0);
        assert_eq!(e8m0.encode(2f64.powi(-127) * 1.5), 1);
        assert_eq!(e8m0.encode(1e300), 254);
        assert_eq!(e8m0.encode(f64::INFINITY), 255);
        // Its thresholds count the codes below a magnitude.
        let thresholds = e8m0.thresholds();
        for x in [0.0, 1e-45, 2f64.powi(-126), 0.3, 1.0, 1.0000001, 3e38] {
            let count = thresholds.iter().filter(|&&t| x >= t).count();
            assert_eq!(count, usize::from(e8m0.encode(x)), "{x}");
        }
    }

    #[test]
    fn thresholds_agree_with_rounding() {
        for format in [F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, F4E2M1FN] {
            let thresholds = format.thresholds();
            for (i, &t) in thresholds.iter().enumerate() {
                let code = i as u16 + 1;
                let below = f64::from_bits(t.to_bits() - 1);
                assert_eq!(
                    format.round_magnitude(below).map(u16::from),
                    Some(code - 1),
                    "{format:?} {t}"
                );
                let at = format
                    .round_magnitude(t)
                    .map_or(u16::from(format.max_code()) + 1, u16::from);
                assert_eq!(at, code, "{format:?} {t}");
            }
        }
    }
}
