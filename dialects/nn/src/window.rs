//! Sliding-window geometry shared by convolution and pooling: padding (explicit, `"same"`
//! with TensorFlow's arithmetic, or `"valid"`) and output sizes.

use tessera::attr::Attribute;

/// The resolved geometry of a 2-d window over an NHWC input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowGeometry {
    /// Padding `[top, bottom, left, right]`.
    pub padding: [u64; 4],
    /// Output height and width.
    pub output: [u64; 2],
}

/// Why a window has no output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WindowError {
    /// The padding attribute is malformed.
    Padding(String),
    /// The window does not fit in the padded input.
    TooLarge(String),
}

/// Resolves `padding` for an input of `input` (H, W) under a window of `window` (H, W) with
/// `strides` and `dilations`, or says why no output exists.
///
/// `"valid"`: no padding. `"same"` (TensorFlow): output `ceil(in / stride)`, total padding
/// `max((out - 1) * stride + (window - 1) * dilation + 1 - in, 0)`, the smaller half on top
/// (left). A list is `[top, bottom, left, right]`.
pub fn window_geometry(
    padding: &Attribute,
    input: [u64; 2],
    window: [u64; 2],
    strides: [u64; 2],
    dilations: [u64; 2],
) -> Result<WindowGeometry, WindowError> {
    // u128 arithmetic: sizes and attributes are each below 2^63, so nothing here overflows.
    let effective = |i: usize| u128::from(window[i] - 1) * u128::from(dilations[i]) + 1;
    let wide = |v: u64| u128::from(v);
    let pads: [u64; 4] = match padding {
        Attribute::Str(s) if s == "same" => {
            let mut pads = [0; 4];
            for i in 0..2 {
                let out = wide(input[i].div_ceil(strides[i]));
                let total = ((out.max(1) - 1) * wide(strides[i]) + effective(i))
                    .saturating_sub(wide(input[i]));
                let overflow = |_| WindowError::Padding("padding overflows".into());
                pads[2 * i] = u64::try_from(total / 2).map_err(overflow)?;
                pads[2 * i + 1] = u64::try_from(total - total / 2).map_err(overflow)?;
            }
            pads
        }
        Attribute::List(items) => {
            let values: Vec<i64> = items.iter().filter_map(Attribute::as_int).collect();
            if values.len() != 4 {
                return Err(WindowError::Padding(format!(
                    "attribute 'padding' must have 4 elements [top, bottom, left, right], but has {}",
                    items.len()
                )));
            }
            if let Some(bad) = values.iter().find(|&&v| v < 0) {
                return Err(WindowError::Padding(format!(
                    "attribute 'padding' must be non-negative, but has {bad}"
                )));
            }
            [
                values[0] as u64,
                values[1] as u64,
                values[2] as u64,
                values[3] as u64,
            ]
        }
        _ => [0; 4],
    };
    let mut output = [0; 2];
    for i in 0..2 {
        let padded = wide(input[i]) + wide(pads[2 * i]) + wide(pads[2 * i + 1]);
        if padded < effective(i) {
            let dim = ["height", "width"][i];
            let size = match dilations[i] {
                1 => window[i].to_string(),
                _ => format!("{}, dilated from {}", effective(i), window[i]),
            };
            return Err(WindowError::TooLarge(format!(
                "window {dim} ({size}) exceeds the padded input {dim} ({padded})"
            )));
        }
        output[i] = u64::try_from((padded - effective(i)) / wide(strides[i]) + 1)
            .map_err(|_| WindowError::Padding("output size overflows".into()))?;
    }
    Ok(WindowGeometry {
        padding: pads,
        output,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(input: u64, window: u64, stride: u64) -> WindowGeometry {
        let s = Attribute::Str("same".into());
        window_geometry(
            &s,
            [input, input],
            [window, window],
            [stride, stride],
            [1, 1],
        )
        .unwrap()
    }

    #[test]
    fn same_padding_matches_tensorflow() {
        // tf.nn.conv2d(padding="SAME"): in 5, k 3, s 2 -> out 3, pad 1/1.
        assert_eq!(
            same(5, 3, 2),
            WindowGeometry {
                padding: [1, 1, 1, 1],
                output: [3, 3]
            }
        );
        // in 4, k 3, s 2 -> out 2, total 1: 0 on top, 1 below.
        assert_eq!(
            same(4, 3, 2),
            WindowGeometry {
                padding: [0, 1, 0, 1],
                output: [2, 2]
            }
        );
        // in 28, k 3, s 1 -> out 28, pad 1/1.
        assert_eq!(same(28, 3, 1).output, [28, 28]);
        // in 4, k 2, s 2 -> no padding.
        assert_eq!(same(4, 2, 2).padding, [0; 4]);
    }

    #[test]
    fn valid_and_explicit_padding() {
        let valid = Attribute::Str("valid".into());
        let g = window_geometry(&valid, [28, 28], [3, 3], [1, 1], [2, 2]).unwrap();
        assert_eq!(g.output, [24, 24]);
        assert!(window_geometry(&valid, [2, 8], [3, 3], [1, 1], [1, 1]).is_err());
        let list = Attribute::List([1, 2, 0, 0].map(Attribute::Int).to_vec());
        let g = window_geometry(&list, [4, 4], [3, 3], [1, 1], [1, 1]).unwrap();
        assert_eq!(g.output, [5, 2]);
    }
}
