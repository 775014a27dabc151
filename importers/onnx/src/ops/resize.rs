//! `Resize` (opsets 11 to 19): nearest, linear and cubic interpolation with every coordinate
//! transformation, `exclude_outside`, antialiasing, `axes` and `keep_aspect_ratio_policy`.
//! Interpolation is separable and the shapes are static, so each resized axis is one linear
//! map known at import time: nearest picks one source element per output element
//! (`array.gather`, exact for every type); linear and cubic multiply by the axis' weight
//! matrix (`array.matmul`, in f32 for half types). Axes are resized in order, as onnx's
//! reference does; positions `tf_crop_and_resize` puts outside the input take
//! `extrapolation_value`.

use super::{axis_in, Inputs};
use crate::graph::{invalid, unsupported, Graph, NodeResult, Val};
use crate::node::Node;
use tessera::attr::Attribute;
use tessera::exec::tensor::Tensor;
use tessera::types::{ElementType, TensorType};

/// How source weights are computed from the fractional position `ratio` (and the scale).
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Nearest(NearestMode),
    Linear { antialias: bool },
    Cubic { antialias: bool, a: f64 },
}

/// Which neighbour `nearest` takes at a fractional position.
#[derive(Clone, Copy, PartialEq)]
enum NearestMode {
    RoundPreferFloor,
    RoundPreferCeil,
    Floor,
    Ceil,
}

impl Mode {
    /// The weights of the neighbours of a source position whose fraction is `ratio` (1 at
    /// an integer position), as onnx defines them.
    fn coefficients(self, ratio: f64, scale: f64) -> Vec<f64> {
        let flag = |b: bool| f64::from(u8::from(b));
        match self {
            Mode::Nearest(_) if ratio == 1.0 => vec![0.0, 1.0],
            Mode::Nearest(NearestMode::RoundPreferFloor) => {
                vec![flag(ratio <= 0.5), flag(ratio > 0.5)]
            }
            Mode::Nearest(NearestMode::RoundPreferCeil) => {
                vec![flag(ratio < 0.5), flag(ratio >= 0.5)]
            }
            Mode::Nearest(NearestMode::Floor) => vec![1.0, 0.0],
            Mode::Nearest(NearestMode::Ceil) => vec![0.0, 1.0],
            Mode::Linear { antialias: false } => vec![1.0 - ratio, ratio],
            Mode::Linear { antialias: true } => {
                let scale = scale.min(1.0);
                let start = (-1.0 / scale).floor() as i64 + 1;
                let weights: Vec<f64> = (start..2 - start)
                    .map(|i| (1.0 - ((i as f64 - ratio) * scale).abs()).clamp(0.0, 1.0))
                    .collect();
                normalized(weights)
            }
            Mode::Cubic {
                antialias: false,
                a,
            } => {
                let r = ratio;
                vec![
                    ((a * (r + 1.0) - 5.0 * a) * (r + 1.0) + 8.0 * a) * (r + 1.0) - 4.0 * a,
                    ((a + 2.0) * r - (a + 3.0)) * r * r + 1.0,
                    ((a + 2.0) * (1.0 - r) - (a + 3.0)) * (1.0 - r) * (1.0 - r) + 1.0,
                    ((a * (2.0 - r) - 5.0 * a) * (2.0 - r) + 8.0 * a) * (2.0 - r) - 4.0 * a,
                ]
            }
            Mode::Cubic { antialias: true, a } => {
                let scale = scale.min(1.0);
                let kernel = |x: f64| {
                    let x = x.abs();
                    if x <= 1.0 {
                        (a + 2.0) * x.powi(3) - (a + 3.0) * x * x + 1.0
                    } else if x < 2.0 {
                        a * x.powi(3) - 5.0 * a * x * x + 8.0 * a * x - 4.0 * a
                    } else {
                        0.0
                    }
                };
                let start = (-2.0 / scale).floor() as i64 + 1;
                normalized(
                    (start..2 - start)
                        .map(|i| kernel(scale * (i as f64 - ratio)))
                        .collect(),
                )
            }
        }
    }
}

/// `weights` divided by their sum.
fn normalized(weights: Vec<f64>) -> Vec<f64> {
    let sum: f64 = weights.iter().sum();
    weights.into_iter().map(|w| w / sum).collect()
}

/// One axis' resize: for each output position, its source weights (input index, weight), or
/// `None` where `tf_crop_and_resize` extrapolates.
type AxisMap = Vec<Option<Vec<(usize, f64)>>>;

/// The settings every axis shares.
struct Settings {
    mode: Mode,
    transform: String,
    exclude_outside: bool,
}

/// The map of an axis of `input` elements to `output` elements at `scale`, `roi` its
/// `[start, end]` (for `tf_crop_and_resize`).
fn axis_map(s: &Settings, input: u64, output: u64, scale: f64, roi: [f64; 2]) -> AxisMap {
    let (in_w, out_f) = (input as f64, scale * input as f64);
    (0..output)
        .map(|y| {
            let y = y as f64;
            let x = match s.transform.as_str() {
                "align_corners" if out_f == 1.0 => 0.0,
                "align_corners" => y * (in_w - 1.0) / (out_f - 1.0),
                "asymmetric" => y / scale,
                "tf_crop_and_resize" => {
                    let span = (roi[1] - roi[0]) * (in_w - 1.0);
                    let x = if out_f == 1.0 {
                        span / 2.0
                    } else {
                        y * span / (out_f - 1.0)
                    } + roi[0] * (in_w - 1.0);
                    if x < 0.0 || x > in_w - 1.0 {
                        return None;
                    }
                    x
                }
                "pytorch_half_pixel" if out_f == 1.0 => -0.5,
                "half_pixel_symmetric" => {
                    let offset = in_w / 2.0 * (1.0 - output as f64 / out_f);
                    offset + (y + 0.5) / scale - 0.5
                }
                _ => (y + 0.5) / scale - 0.5,
            };
            let ratio = if x == x.floor() { 1.0 } else { x - x.floor() };
            let mut weights = s.mode.coefficients(ratio, scale);
            let n = weights.len() as i64;
            let pad = (n + 1) / 2;
            let padded = x + pad as f64;
            let fraction = padded - padded.floor();
            let offset = if n % 2 == 0 {
                if fraction == 0.0 {
                    -(n / 2)
                } else {
                    -(n / 2) + 1
                }
            } else {
                let base = -((n - 1) / 2);
                if fraction <= 0.5 {
                    base
                } else {
                    base + 1
                }
            };
            let start = padded.floor() as i64 + offset - pad;
            let sources: Vec<i64> = (start..start + n).collect();
            if s.exclude_outside {
                for (w, &i) in weights.iter_mut().zip(&sources) {
                    if i < 0 || i >= input as i64 {
                        *w = 0.0;
                    }
                }
                let sum: f64 = weights.iter().sum();
                let sum = if sum == 0.0 { 1.0 } else { sum };
                weights.iter_mut().for_each(|w| *w /= sum);
            }
            Some(
                sources
                    .iter()
                    .map(|&i| i.clamp(0, input as i64 - 1) as usize)
                    .zip(weights)
                    .collect(),
            )
        })
        .collect()
}

/// `Resize(X, roi?, scales?, sizes?)`.
pub fn resize(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    if node.opset < 11 {
        return unsupported("Resize before opset 11 (scales as its second input)");
    }
    let x = super::input(inputs, 0)?;
    let ty = g.ty(&x);
    let rank = ty.rank();
    let given = |i: usize| {
        inputs
            .get(i)
            .cloned()
            .flatten()
            .filter(|v| g.ty(v).num_elements() != Some(0))
    };
    let (roi, scales, sizes) = (given(1), given(2), given(3));
    let axes: Vec<usize> = match node.ints("axes") {
        Some(axes) => axes
            .into_iter()
            .map(|a| axis_in(a, rank))
            .collect::<NodeResult<_>>()?,
        None => (0..rank).collect(),
    };
    let mut roi_of = vec![[0.0, 1.0]; rank];
    if let Some(roi) = roi {
        let values = g.numbers(&roi, "the roi input")?;
        if values.len() != 2 * axes.len() {
            return invalid(format!(
                "roi has {} values for {} axes",
                values.len(),
                axes.len()
            ));
        }
        for (i, &a) in axes.iter().enumerate() {
            roi_of[a] = [values[i], values[axes.len() + i]];
        }
    }
    let mut scale_of = vec![1.0; rank];
    let mut size_of = ty.shape.clone();
    match (scales, sizes) {
        (_, Some(sizes)) => {
            let sizes = g.ints(&sizes, "the sizes input")?;
            if sizes.len() != axes.len() || sizes.iter().any(|&s| s < 0) {
                return invalid(format!("sizes {sizes:?} do not fit {} axes", axes.len()));
            }
            for (&a, &size) in axes.iter().zip(&sizes) {
                scale_of[a] = size as f64 / ty.shape[a] as f64;
                size_of[a] = size as u64;
            }
            let policy = node.string("keep_aspect_ratio_policy", "stretch");
            if policy != "stretch" {
                let picked = axes.iter().map(|&a| scale_of[a]);
                let scale = match policy.as_str() {
                    "not_larger" => picked.fold(f64::INFINITY, f64::min),
                    "not_smaller" => picked.fold(f64::NEG_INFINITY, f64::max),
                    other => {
                        return invalid(format!("keep_aspect_ratio_policy '{other}' is unknown"))
                    }
                };
                for &a in &axes {
                    scale_of[a] = scale;
                    size_of[a] = (scale * ty.shape[a] as f64 + 0.5) as u64;
                }
            }
        }
        (Some(scales), None) => {
            let scales = g.numbers(&scales, "the scales input")?;
            if scales.len() != axes.len() || scales.iter().any(|&s| s.is_nan() || s <= 0.0) {
                return invalid(format!("scales {scales:?} do not fit {} axes", axes.len()));
            }
            for (&a, &scale) in axes.iter().zip(&scales) {
                scale_of[a] = scale;
                size_of[a] = (scale * ty.shape[a] as f64) as u64;
            }
        }
        (None, None) => return invalid("it has neither scales nor sizes"),
    }
    let antialias = node.int("antialias", 0) != 0;
    let mode = match node.string("mode", "nearest").as_str() {
        "nearest" => Mode::Nearest(
            match node.string("nearest_mode", "round_prefer_floor").as_str() {
                "round_prefer_floor" => NearestMode::RoundPreferFloor,
                "round_prefer_ceil" => NearestMode::RoundPreferCeil,
                "floor" => NearestMode::Floor,
                "ceil" => NearestMode::Ceil,
                other => return invalid(format!("nearest_mode '{other}' is unknown")),
            },
        ),
        "linear" => Mode::Linear { antialias },
        "cubic" => Mode::Cubic {
            antialias,
            a: node.float("cubic_coeff_a", -0.75),
        },
        other => return invalid(format!("mode '{other}' is unknown")),
    };
    let transform = node.string("coordinate_transformation_mode", "half_pixel");
    let known = [
        "half_pixel",
        "half_pixel_symmetric",
        "pytorch_half_pixel",
        "align_corners",
        "asymmetric",
        "tf_crop_and_resize",
    ];
    if !known.contains(&transform.as_str()) {
        return invalid(format!(
            "coordinate_transformation_mode '{transform}' is unknown"
        ));
    }
    let settings = Settings {
        mode,
        transform,
        exclude_outside: node.int("exclude_outside", 0) != 0,
    };
    let extrapolation = node.float("extrapolation_value", 0.0);
    let mut y = x;
    for axis in 0..rank {
        let trivial = (scale_of[axis] - 1.0).abs() < 1e-9
            && size_of[axis] == ty.shape[axis]
            && roi_of[axis] == [0.0, 1.0];
        if trivial {
            continue;
        }
        let map = axis_map(
            &settings,
            ty.shape[axis],
            size_of[axis],
            scale_of[axis],
            roi_of[axis],
        );
        y = resize_axis(
            g,
            &y,
            axis,
            &map,
            matches!(mode, Mode::Nearest(_)),
            extrapolation,
        )?;
    }
    Ok(vec![y])
}

/// `x` with axis `axis` mapped by `map`: picked (nearest) or weighted (a matmul), then the
/// extrapolated positions set to `extrapolation`.
fn resize_axis(
    g: &mut Graph,
    x: &Val,
    axis: usize,
    map: &AxisMap,
    nearest: bool,
    extrapolation: f64,
) -> NodeResult<Val> {
    let ty = g.ty(x);
    let (input, output) = (ty.shape[axis] as usize, map.len() as u64);
    let mut y = if nearest {
        let picks = map.iter().map(|row| {
            row.as_ref()
                .and_then(|w| w.iter().find(|(_, weight)| *weight == 1.0))
                .map_or(0.0, |&(i, _)| i as f64)
        });
        let indices = g.constant(Tensor::from_numbers(
            &TensorType::new(vec![output], ElementType::I64),
            picks,
        ));
        g.op(
            "array.gather",
            &[x.clone(), indices],
            &[("axis", Attribute::Int(axis as i64))],
            None,
        )?
    } else {
        if !ty.element.is_float() {
            return unsupported(format!("linear or cubic Resize of {}", ty.element));
        }
        // [.., in] x [in, out], the axis moved last; weights summed where clamping made
        // several neighbours one.
        let wide = ty.element.accumulator();
        let mut weights = vec![0.0; input * output as usize];
        for (o, row) in map.iter().enumerate() {
            for &(i, w) in row.iter().flatten() {
                weights[i * output as usize + o] += w;
            }
        }
        let matrix = g.constant(Tensor::from_numbers(
            &TensorType::new(vec![input as u64, output], wide),
            weights,
        ));
        let rank = ty.rank();
        let mut perm: Vec<i64> = (0..rank as i64).filter(|&d| d != axis as i64).collect();
        perm.push(axis as i64);
        let moved = g.transpose(x, &perm)?;
        let rows: u64 = g.ty(&moved).shape[..rank - 1].iter().product();
        let flat = g.reshape(&moved, vec![rows, input as u64])?;
        let flat = g.cast(&flat, wide)?;
        let product = g.op("array.matmul", &[flat, matrix], &[], None)?;
        let product = g.cast(&product, ty.element)?;
        let mut shape = g.ty(&moved).shape;
        shape[rank - 1] = output;
        let unflat = g.reshape(&product, shape)?;
        let mut inverse = vec![0i64; rank];
        for (position, &d) in perm.iter().enumerate() {
            inverse[d as usize] = position as i64;
        }
        g.transpose(&unflat, &inverse)?
    };
    if map.iter().any(Option::is_none) {
        let mut shape = vec![1; ty.rank()];
        shape[axis] = output;
        let outside = g.constant(Tensor::from_numbers(
            &TensorType::new(shape, ElementType::I1),
            map.iter().map(|row| f64::from(u8::from(row.is_none()))),
        ));
        let value = g.scalar(extrapolation, ty.element);
        y = g.select(&outside, &value, &y)?;
    }
    Ok(y)
}
