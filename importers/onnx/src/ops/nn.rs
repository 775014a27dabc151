//! Layers over NCHW tensors: `Conv`, `ConvTranspose`, `MaxPool`, `AveragePool`, the global
//! pools, and the normalizations (`BatchNormalization` at inference, `LayerNormalization`,
//! `InstanceNormalization`) and `LRN`, over 1, 2 or 3 spatial axes. tessera's convolution and
//! pooling are 2-d and channels-last: the input is transposed to channels-last and the
//! result back (a transpose that undoes the one before it vanishes), filters are transposed
//! to HWCF at import time; 1-d runs beside a unit axis, 3-d as 2-d over depth slices.

use super::{input, Inputs};
use crate::graph::{invalid, unsupported, Graph, NodeResult, Val};
use crate::node::Node;
use tessera::attr::Attribute;
use tessera::exec::tensor::Tensor;
use tessera::types::{ElementClass, ElementType, TensorType};

/// An integer list attribute value.
fn ints(values: &[i64]) -> Attribute {
    Attribute::List(values.iter().map(|&v| Attribute::Int(v)).collect())
}

/// One spatial axis of a window: its size, stride, dilation and the padding on each side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Axis {
    kernel: u64,
    stride: u64,
    dilation: u64,
    begin: u64,
    end: u64,
}

impl Axis {
    /// The axis of extent 1 that a 1-d window is placed beside.
    const UNIT: Axis = Axis {
        kernel: 1,
        stride: 1,
        dilation: 1,
        begin: 0,
        end: 0,
    };

    /// The window's span: from its first position to its last, dilations included.
    fn span(&self) -> u64 {
        (self.kernel - 1)
            .saturating_mul(self.dilation)
            .saturating_add(1)
    }
}

/// The window of `node` along each spatial axis of an input whose spatial extents are
/// `input`, for a kernel of extents `kernel`, padded as `auto_pad` says.
fn window_axes(
    node: &Node,
    input: &[u64],
    kernel: &[u64],
    auto_pad: &str,
) -> NodeResult<Vec<Axis>> {
    let n = input.len();
    let per_axis = |values: Vec<i64>, name: &str| -> NodeResult<Vec<u64>> {
        if values.len() != n || values.iter().any(|&v| v < 0) {
            return invalid(format!(
                "{name} {values:?} does not fit {n} spatial dimension(s)"
            ));
        }
        Ok(values.iter().map(|&v| v as u64).collect())
    };
    let kernel = per_axis(kernel.iter().map(|&k| k as i64).collect(), "kernel_shape")?;
    let strides = per_axis(node.ints("strides").unwrap_or(vec![1; n]), "strides")?;
    let dilations = per_axis(node.ints("dilations").unwrap_or(vec![1; n]), "dilations")?;
    if strides.contains(&0) || dilations.contains(&0) || kernel.contains(&0) {
        return invalid("kernel sizes, strides and dilations must be positive");
    }
    let mut axes: Vec<Axis> = (0..n)
        .map(|d| Axis {
            kernel: kernel[d],
            stride: strides[d],
            dilation: dilations[d],
            begin: 0,
            end: 0,
        })
        .collect();
    match auto_pad {
        "NOTSET" => {
            let pads = node.ints("pads").unwrap_or(vec![0; 2 * n]);
            if pads.len() != 2 * n || pads.iter().any(|&v| v < 0) {
                return invalid(format!("pads {pads:?} do not fit {n} spatial dimension(s)"));
            }
            for (d, axis) in axes.iter_mut().enumerate() {
                axis.begin = pads[d] as u64;
                axis.end = pads[d + n] as u64;
            }
        }
        "VALID" => {}
        "SAME_UPPER" | "SAME_LOWER" => {
            for (axis, &extent) in axes.iter_mut().zip(input) {
                let out = extent.div_ceil(axis.stride);
                let total = (out.max(1) - 1)
                    .saturating_mul(axis.stride)
                    .saturating_add(axis.span())
                    .saturating_sub(extent);
                let small = total / 2;
                (axis.begin, axis.end) = if auto_pad == "SAME_UPPER" {
                    (small, total - small)
                } else {
                    (total - small, small)
                };
            }
        }
        other => {
            return invalid(format!(
                "auto_pad '{other}' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER"
            ))
        }
    }
    Ok(axes)
}

/// `Conv`: `nn.conv2d`, or `nn.group_conv2d` for more than one group (depthwise included),
/// over 1, 2 or 3 spatial axes (see [`conv_channels_last`]).
pub fn conv(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let w = input(inputs, 1)?;
    let (tx, tw) = (g.ty(&x), g.ty(&w));
    if tx.rank() != tw.rank() || !(3..=5).contains(&tx.rank()) {
        return unsupported(format!(
            "Conv of {tx} with filter {tw} (tessera convolves 1-d, 2-d and 3-d)"
        ));
    }
    let group = node.int("group", 1);
    if group < 1 || tw.shape[1].checked_mul(group as u64) != Some(tx.shape[1]) {
        return invalid(format!(
            "the filter {tw} in {group} group(s) does not fit the input's {} channels",
            tx.shape[1]
        ));
    }
    let axes = window_axes(
        node,
        &tx.shape[2..],
        &tw.shape[2..],
        &node.string("auto_pad", "NOTSET"),
    )?;
    let xt = channels_last(g, &x)?;
    // Filters [M, C, k...] to [k..., C, M].
    let rank = tw.rank() as i64;
    let mut perm: Vec<i64> = (2..rank).collect();
    perm.extend([1, 0]);
    let filter = g.transpose(&w, &perm)?;
    let bias = inputs.get(2).cloned().flatten();
    let y = conv_channels_last(g, xt, filter, &axes, group as u64, bias)?;
    Ok(vec![channels_first(g, &y)?])
}

/// `x` (`[N, C, spatial...]`) with its channels last: `[N, spatial..., C]`.
fn channels_last(g: &mut Graph, x: &Val) -> NodeResult<Val> {
    let rank = g.ty(x).rank() as i64;
    let mut perm: Vec<i64> = vec![0];
    perm.extend(2..rank);
    perm.push(1);
    g.transpose(x, &perm)
}

/// `y` (`[N, spatial..., C]`) with its channels second again: `[N, C, spatial...]`.
fn channels_first(g: &mut Graph, y: &Val) -> NodeResult<Val> {
    let rank = g.ty(y).rank() as i64;
    let mut perm: Vec<i64> = vec![0, rank - 1];
    perm.extend(1..rank - 1);
    g.transpose(y, &perm)
}

/// The convolution of channels-last `x` (`[N, spatial..., C]`, 1 to 3 spatial axes) by
/// `filter` (`[k..., C / groups, M]`) along `axes`, in `groups`, plus `bias`, channels-last:
/// `nn.conv2d` or `nn.group_conv2d`; 1-d beside a unit axis; 3-d as a 2-d convolution of
/// every output depth whose input channels are the depth taps (strided slices of the
/// depth-padded input side by side, each group's together), the filter's depth folded into
/// its input channels the same way.
fn conv_channels_last(
    g: &mut Graph,
    x: Val,
    filter: Val,
    axes: &[Axis],
    groups: u64,
    bias: Option<Val>,
) -> NodeResult<Val> {
    let s = g.ty(&x).shape;
    let f = g.ty(&filter).shape;
    match *axes {
        [width] => {
            let x4 = g.reshape(&x, vec![s[0], 1, s[1], s[2]])?;
            let f4 = g.reshape(&filter, vec![1, f[0], f[1], f[2]])?;
            let y = conv2d(g, x4, f4, [Axis::UNIT, width], groups, bias)?;
            let t = g.ty(&y).shape;
            g.reshape(&y, vec![t[0], t[2], t[3]])
        }
        [height, width] => conv2d(g, x, filter, [height, width], groups, bias),
        [depth, height, width] => {
            let (n, c) = (s[0], s[4]);
            let padded_x = if depth.begin > 0 || depth.end > 0 {
                let (low, high) = ([0, depth.begin, 0, 0, 0], [0, depth.end, 0, 0, 0]);
                let attrs = [
                    ("low", ints(&low.map(|v| v.min(i64::MAX as u64) as i64))),
                    ("high", ints(&high.map(|v| v.min(i64::MAX as u64) as i64))),
                ];
                g.op("array.pad", &[x], &attrs, None)?
            } else {
                x
            };
            let padded = s[1].saturating_add(depth.begin).saturating_add(depth.end);
            if padded < depth.span() {
                return invalid(format!(
                    "the window's depth ({}) exceeds the padded input's ({padded})",
                    depth.span()
                ));
            }
            let out = (padded - depth.span()) / depth.stride + 1;
            let taps = (0..depth.kernel)
                .map(|t| {
                    let first = t * depth.dilation;
                    let last = first + (out - 1) * depth.stride + 1;
                    g.slice(
                        &padded_x,
                        &[0, first, 0, 0, 0],
                        &[n, last, s[2], s[3], c],
                        &[1, depth.stride, 1, 1, 1],
                    )
                })
                .collect::<NodeResult<Vec<Val>>>()?;
            let stacked = g.op("array.concat", &taps, &[("axis", Attribute::Int(4))], None)?;
            let (kd, cg) = (depth.kernel, c / groups);
            let stacked = if groups > 1 {
                let apart = g.reshape(&stacked, vec![n, out, s[2], s[3], kd, groups, cg])?;
                let grouped = g.transpose(&apart, &[0, 1, 2, 3, 5, 4, 6])?;
                g.reshape(&grouped, vec![n, out, s[2], s[3], kd * c])?
            } else {
                stacked
            };
            let planes = g.reshape(&stacked, vec![n * out, s[2], s[3], kd * c])?;
            let folded = g.transpose(&filter, &[1, 2, 0, 3, 4])?;
            let folded = g.reshape(&folded, vec![f[1], f[2], kd * cg, f[4]])?;
            let y = conv2d(g, planes, folded, [height, width], groups, bias)?;
            let t = g.ty(&y).shape;
            g.reshape(&y, vec![n, out, t[1], t[2], t[3]])
        }
        _ => unsupported(format!(
            "{} spatial dimensions (tessera convolves 1-d, 2-d and 3-d)",
            axes.len()
        )),
    }
}

/// One NHWC convolution of `x` by HWCF `filter` along height and width, in `groups`, plus
/// `bias`.
fn conv2d(
    g: &mut Graph,
    x: Val,
    filter: Val,
    [h, w]: [Axis; 2],
    groups: u64,
    bias: Option<Val>,
) -> NodeResult<Val> {
    let int = |v: u64| v.min(i64::MAX as u64) as i64;
    let mut attrs = vec![
        ("strides", ints(&[int(h.stride), int(w.stride)])),
        ("dilations", ints(&[int(h.dilation), int(w.dilation)])),
        (
            "padding",
            ints(&[int(h.begin), int(h.end), int(w.begin), int(w.end)]),
        ),
    ];
    let mut operands = vec![x, filter];
    operands.extend(bias);
    if groups == 1 {
        return g.op("nn.conv2d", &operands, &attrs, None);
    }
    attrs.push(("groups", Attribute::Int(int(groups))));
    g.op("nn.group_conv2d", &operands, &attrs, None)
}

/// `MaxPool` and `AveragePool` (and `LpPool`'s sums) over 1, 2 or 3 spatial dimensions.
pub fn pool(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let mut x = input(inputs, 0)?;
    let tx = g.ty(&x);
    let op_type = &node.proto.op_type;
    if !(3..=5).contains(&tx.rank()) {
        return unsupported(format!(
            "{op_type} of {tx} (tessera pools 1-d, 2-d and 3-d)"
        ));
    }
    let max = op_type == "MaxPool";
    let Some(kernel) = node.ints("kernel_shape") else {
        return invalid("it has no kernel_shape");
    };
    let kernel: Vec<u64> = kernel.iter().map(|&k| k.max(0) as u64).collect();
    let ceil_mode = node.int("ceil_mode", 0) != 0;
    // LpPool sums over the window, padding included (as zeros): its average counts the
    // padding whatever count_include_pad says.
    let include_pad = op_type == "LpPool" || (!max && node.int("count_include_pad", 0) != 0);
    let spatial = &tx.shape[2..];
    let mut axes = window_axes(node, spatial, &kernel, &node.string("auto_pad", "NOTSET"))?;
    // With ceil_mode, extra end padding makes the last partial window exist (never counted);
    // a window that would start in the end padding is left out.
    let mut extra = vec![0u64; axes.len()];
    if ceil_mode {
        for ((axis, &extent), extra) in axes.iter().zip(spatial).zip(&mut extra) {
            let padded = extent.saturating_add(axis.begin).saturating_add(axis.end);
            if padded < axis.span() {
                continue;
            }
            let mut out = (padded - axis.span()).div_ceil(axis.stride) + 1;
            if (out - 1).saturating_mul(axis.stride) >= extent.saturating_add(axis.begin) {
                out -= 1;
            }
            let needed = (out - 1)
                .saturating_mul(axis.stride)
                .saturating_add(axis.span());
            *extra = needed.saturating_sub(padded);
        }
    }
    if include_pad && axes.iter().any(|a| a.begin > 0 || a.end > 0) {
        // Padding that counts is data: pad with zeros, pool what remains.
        let sides = |side: fn(&Axis) -> u64| {
            let mut v = vec![0, 0];
            v.extend(axes.iter().map(|a| side(a) as i64));
            ints(&v)
        };
        let (low, high) = (sides(|a| a.begin), sides(|a| a.end));
        x = g.op("array.pad", &[x], &[("low", low), ("high", high)], None)?;
        for axis in &mut axes {
            (axis.begin, axis.end) = (0, 0);
        }
    }
    for (axis, extra) in axes.iter_mut().zip(extra) {
        axis.end = axis.end.saturating_add(extra);
    }
    // Integers up to 16 bits pool exactly in f32 (a maximum only picks one of them).
    let element = tx.element;
    if element.class() != ElementClass::Float {
        if !max || element.bit_width() > 16 {
            return unsupported(format!("{op_type} of {element}"));
        }
        x = g.cast(&x, ElementType::F32)?;
    }
    let name = if max {
        "nn.max_pool2d"
    } else {
        "nn.avg_pool2d"
    };
    let y = pool_channels_last(g, name, &x, &axes)?;
    let mut results = vec![g.cast(&y, element)?];
    if max && has_output(node, 1) {
        results.push(max_pool_indices(g, node, &x, &y, &axes)?);
    }
    Ok(results)
}

/// The most comparisons (window positions × outputs per image and channel) `MaxPool`'s
/// `Indices` is built from: each tap's indices are a constant of its own.
const MAX_INDEX_ELEMENTS: u64 = 1 << 22;

/// `MaxPool`'s `Indices`: for each output, the flat index into `x` of the first position of
/// its window, in row-major order, that holds the maximum `y` (as the ONNX reference picks
/// it), with the spatial axes flattened row-major or, with `storage_order = 1`,
/// column-major; -1 for a window with no position in the input. Built tap by tap: a strided
/// slice of `x` compared with `y`, selecting the tap's constant indices where it holds the
/// maximum, from the last tap to the first so that the first wins.
fn max_pool_indices(
    g: &mut Graph,
    node: &Node,
    x: &Val,
    y: &Val,
    axes: &[Axis],
) -> NodeResult<Val> {
    let (tx, ty) = (g.ty(x), g.ty(y));
    let (spatial, out) = (&tx.shape[2..], &ty.shape[2..]);
    let per_tap: u64 = out.iter().product();
    let taps = axes
        .iter()
        .try_fold(1u64, |n, a| n.checked_mul(a.kernel))
        .filter(|&n| n.saturating_mul(per_tap) <= MAX_INDEX_ELEMENTS);
    let Some(taps) = taps else {
        return unsupported(format!(
            "MaxPool's Indices over more than {MAX_INDEX_ELEMENTS} window positions"
        ));
    };
    // How far one step along each spatial axis moves the flat index.
    let mut place = vec![0u64; spatial.len()];
    let mut plane = 1u64;
    let mut order: Vec<usize> = (0..spatial.len()).collect();
    if node.int("storage_order", 0) == 0 {
        order.reverse();
    }
    for d in order {
        place[d] = plane;
        plane *= spatial[d];
    }
    let padded = if axes.iter().any(|a| a.begin > 0 || a.end > 0) {
        let sides = |side: fn(&Axis) -> u64| {
            let mut v = vec![0, 0];
            v.extend(axes.iter().map(|a| side(a) as i64));
            ints(&v)
        };
        let attrs = [
            ("low", sides(|a| a.begin)),
            ("high", sides(|a| a.end)),
            ("value", Attribute::Float(f64::NEG_INFINITY)),
        ];
        g.op("array.pad", std::slice::from_ref(x), &attrs, None)?
    } else {
        x.clone()
    };
    let index_shape: Vec<u64> = [1, 1].iter().chain(out).copied().collect();
    let mut found = g.scalar(-1.0, ElementType::I64);
    for t in (0..taps).rev() {
        let mut rest = t;
        let mut tap = vec![0u64; axes.len()];
        for d in (0..axes.len()).rev() {
            tap[d] = rest % axes[d].kernel;
            rest /= axes[d].kernel;
        }
        let mut start = vec![0, 0];
        let mut limit = vec![tx.shape[0], tx.shape[1]];
        let mut step = vec![1, 1];
        for (d, axis) in axes.iter().enumerate() {
            let first = tap[d] * axis.dilation;
            start.push(first);
            limit.push(first + (out[d] - 1) * axis.stride + 1);
            step.push(axis.stride);
        }
        let window = g.slice(&padded, &start, &limit, &step)?;
        let holds = g.compare(&window, y, "eq")?;
        // Each output's input position under this tap, when it lies inside the input.
        let mut indices = Vec::with_capacity(per_tap as usize);
        let mut inside = Vec::with_capacity(per_tap as usize);
        for k in 0..per_tap {
            let mut rest = k;
            let mut index = Some(0u64);
            for d in (0..axes.len()).rev() {
                let o = rest % out[d];
                rest /= out[d];
                let at = (o * axes[d].stride + tap[d] * axes[d].dilation)
                    .checked_sub(axes[d].begin)
                    .filter(|&at| at < spatial[d]);
                index = index.zip(at).map(|(i, at)| i + at * place[d]);
            }
            indices.push(index.map_or(-1.0, |i| i as f64));
            inside.push(if index.is_some() { 1.0 } else { 0.0 });
        }
        let holds = if inside.contains(&0.0) {
            let mask_ty = TensorType::new(index_shape.clone(), ElementType::I1);
            let mask = g.constant(Tensor::from_numbers(&mask_ty, inside));
            g.binary("array.and", &holds, &mask)?
        } else {
            holds
        };
        let index_ty = TensorType::new(index_shape.clone(), ElementType::I64);
        let index = g.constant(Tensor::from_numbers(&index_ty, indices));
        found = g.select(&holds, &index, &found)?;
    }
    // Each image and channel's own plane: (n * C + c) * plane.
    let (batch, channels) = (tx.shape[0], tx.shape[1]);
    let mut base_shape = vec![batch, channels];
    base_shape.resize(tx.rank(), 1);
    let base_ty = TensorType::new(base_shape, ElementType::I64);
    let base = g.constant(Tensor::from_numbers(
        &base_ty,
        (0..batch * channels).map(|i| (i * plane) as f64),
    ));
    let flat = g.binary("array.add", &found, &base)?;
    let zero = g.scalar(0.0, ElementType::I64);
    let missing = g.compare(&found, &zero, "lt")?;
    g.select(&missing, &found, &flat)
}

/// Pools `x` (`[N, C, spatial...]`) with the NHWC pool `name` along `axes`, one per spatial
/// dimension, and returns the result in `x`'s layout. A 1-d input lies beside a unit axis; a
/// 3-d one is pooled in two passes, height and width with the depth in the batch, then the
/// depth with height × width as one axis: a maximum or a mean over a box is the maximum or
/// mean over each of its axes in turn (padding and partial windows included, since the
/// positions inside the input form a box too).
fn pool_channels_last(g: &mut Graph, name: &str, x: &Val, axes: &[Axis]) -> NodeResult<Val> {
    let xt = channels_last(g, x)?;
    let s = g.ty(&xt).shape;
    let (n, c) = (s[0], s[s.len() - 1]);
    let y = match *axes {
        [width] => {
            let x4 = g.reshape(&xt, vec![n, 1, s[1], c])?;
            let y = pool2d(g, name, &x4, [Axis::UNIT, width])?;
            let length = g.ty(&y).shape[2];
            g.reshape(&y, vec![n, length, c])?
        }
        [height, width] => pool2d(g, name, &xt, [height, width])?,
        [depth, height, width] => {
            let planes = g.reshape(&xt, vec![n * s[1], s[2], s[3], c])?;
            let pooled = pool2d(g, name, &planes, [height, width])?;
            let p = g.ty(&pooled).shape;
            let columns = g.reshape(&pooled, vec![n, s[1], p[1] * p[2], c])?;
            let y = pool2d(g, name, &columns, [depth, Axis::UNIT])?;
            let d = g.ty(&y).shape[1];
            g.reshape(&y, vec![n, d, p[1], p[2], c])?
        }
        _ => {
            return unsupported(format!(
                "{} spatial dimensions (tessera pools 1-d, 2-d and 3-d)",
                axes.len()
            ))
        }
    };
    channels_first(g, &y)
}

/// One NHWC pool `name` of `x` along height and width.
fn pool2d(g: &mut Graph, name: &str, x: &Val, [h, w]: [Axis; 2]) -> NodeResult<Val> {
    let int = |v: u64| v.min(i64::MAX as u64) as i64;
    let mut attrs = vec![
        ("window", ints(&[int(h.kernel), int(w.kernel)])),
        ("strides", ints(&[int(h.stride), int(w.stride)])),
        (
            "padding",
            ints(&[int(h.begin), int(h.end), int(w.begin), int(w.end)]),
        ),
    ];
    if (h.dilation, w.dilation) != (1, 1) {
        attrs.push(("dilations", ints(&[int(h.dilation), int(w.dilation)])));
    }
    g.op(name, std::slice::from_ref(x), &attrs, None)
}

/// `GlobalAveragePool` and `GlobalMaxPool`: a reduction over the spatial axes, kept.
pub fn global_pool(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let rank = g.ty(&x).rank() as i64;
    if rank < 3 {
        return invalid("its input has no spatial dimensions");
    }
    let axes: Vec<i64> = (2..rank).collect();
    let name = if node.proto.op_type == "GlobalMaxPool" {
        "array.reduce_max"
    } else {
        "array.reduce_mean"
    };
    Ok(vec![g.reduce(name, &x, &axes, true)?])
}

/// A per-channel vector `v` (`[C]`) shaped to broadcast over `[N, C, ...]` of rank `rank`.
fn per_channel(g: &mut Graph, v: &Val, rank: usize) -> NodeResult<Val> {
    let c = g.ty(v).shape.iter().product();
    let mut shape = vec![c];
    shape.resize(rank.saturating_sub(1), 1);
    g.reshape(v, shape)
}

/// True when output `index` of `node` is used (named).
fn has_output(node: &Node, index: usize) -> bool {
    node.proto.output.get(index).is_some_and(|o| !o.is_empty())
}

/// `BatchNormalization` at inference: `x · a + b` with `a = scale / sqrt(var + eps)` and
/// `b = bias - mean · a`, per channel (folded when the statistics are constants).
pub fn batch_norm(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let rank = g.ty(&x).rank();
    if rank < 2 {
        return invalid("its input has no channel dimension");
    }
    let training = node.int("training_mode", 0) != 0 || (1..3).any(|i| has_output(node, i));
    if training {
        return batch_norm_training(g, node, inputs, &x);
    }
    let element = g.ty(&x).element;
    let mut params = Vec::new();
    for i in 1..5 {
        let v = input(inputs, i)?;
        params.push(per_channel(g, &v, rank)?);
    }
    let eps = g.scalar(node.float("epsilon", 1e-5), element);
    let shifted = g.binary("array.add", &params[3], &eps)?;
    let inv = g.unary("array.rsqrt", &shifted)?;
    let a = g.binary("array.mul", &params[0], &inv)?;
    let ma = g.binary("array.mul", &params[2], &a)?;
    let b = g.binary("array.sub", &params[1], &ma)?;
    let xa = g.binary("array.mul", &x, &a)?;
    Ok(vec![g.binary("array.add", &xa, &b)?])
}

/// `BatchNormalization` in training mode: normalized by the batch's own mean and (biased)
/// variance over every axis but the channels', and the running statistics updated with
/// `momentum`: `Y`, `running_mean`, `running_var`.
fn batch_norm_training(
    g: &mut Graph,
    node: &Node,
    inputs: &Inputs,
    x: &Val,
) -> NodeResult<Vec<Val>> {
    let ty = g.ty(x);
    let (rank, element) = (ty.rank(), ty.element);
    let axes: Vec<i64> = (0..rank as i64).filter(|&a| a != 1).collect();
    let mean = g.reduce("array.reduce_mean", x, &axes, true)?;
    let centered = g.binary("array.sub", x, &mean)?;
    let squares = g.binary("array.mul", &centered, &centered)?;
    let variance = g.reduce("array.reduce_mean", &squares, &axes, true)?;
    let eps = g.scalar(node.float("epsilon", 1e-5), element);
    let shifted = g.binary("array.add", &variance, &eps)?;
    let inv = g.unary("array.rsqrt", &shifted)?;
    let scale = per_channel(g, &input(inputs, 1)?, rank)?;
    let bias = per_channel(g, &input(inputs, 2)?, rank)?;
    let normalized = g.binary("array.mul", &centered, &inv)?;
    let scaled = g.binary("array.mul", &normalized, &scale)?;
    let y = g.binary("array.add", &scaled, &bias)?;
    let momentum = node.float("momentum", 0.9);
    let (keep, take) = (
        g.scalar(momentum, element),
        g.scalar(1.0 - momentum, element),
    );
    let channels = vec![ty.shape[1]];
    let running = |g: &mut Graph, old: Val, batch: &Val| -> NodeResult<Val> {
        let batch = g.reshape(batch, channels.clone())?;
        let kept = g.binary("array.mul", &old, &keep)?;
        let taken = g.binary("array.mul", &batch, &take)?;
        g.binary("array.add", &kept, &taken)
    };
    let running_mean = running(g, input(inputs, 3)?, &mean)?;
    let running_var = running(g, input(inputs, 4)?, &variance)?;
    Ok(vec![y, running_mean, running_var])
}

/// `LayerNormalization` (opset 17): `nn.layer_norm` with the scale and bias broadcast to the
/// normalized shape.
pub fn layer_norm(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let ty = g.ty(&x);
    let rank = ty.rank() as i64;
    let axis = node.int("axis", -1);
    if axis < -rank || axis >= rank {
        return invalid(format!("axis {axis} is out of range for {ty}"));
    }
    let axis = if axis < 0 { axis + rank } else { axis };
    let normalized = ty.shape[axis as usize..].to_vec();
    let scale = input(inputs, 1)?;
    let gamma = g.broadcast(&scale, normalized.clone())?;
    let beta = match inputs.get(2).cloned().flatten() {
        Some(b) => g.broadcast(&b, normalized)?,
        None => {
            let zero = g.scalar(0.0, ty.element);
            g.broadcast(&zero, normalized)?
        }
    };
    let epsilon = node.float("epsilon", 1e-5);
    if !has_output(node, 1) && !has_output(node, 2) {
        let attrs = [
            ("axis", Attribute::Int(axis)),
            ("epsilon", Attribute::Float(epsilon)),
        ];
        return Ok(vec![g.op(
            "nn.layer_norm",
            &[x, gamma, beta],
            &attrs,
            None,
        )?]);
    }
    // The statistics are outputs too: the same steps as `nn.layer_norm`'s decomposition,
    // the mean and the inverse deviation kept (in the stash type, f32 by default).
    let axes: Vec<i64> = (axis..rank).collect();
    let mean = g.reduce("array.reduce_mean", &x, &axes, true)?;
    let centered = g.binary("array.sub", &x, &mean)?;
    let squares = g.binary("array.mul", &centered, &centered)?;
    let variance = g.reduce("array.reduce_mean", &squares, &axes, true)?;
    let eps = g.scalar(epsilon, ty.element);
    let shifted = g.binary("array.add", &variance, &eps)?;
    let inv = g.unary("array.rsqrt", &shifted)?;
    let normalized = g.binary("array.mul", &centered, &inv)?;
    let scaled = g.binary("array.mul", &normalized, &gamma)?;
    let y = g.binary("array.add", &scaled, &beta)?;
    let stash = if node.int("stash_type", 1) == 1 {
        ElementType::F32
    } else {
        ty.element
    };
    let mean = g.cast(&mean, stash)?;
    let inv = g.cast(&inv, stash)?;
    Ok(vec![y, mean, inv])
}

/// `LpPool`: `(sum |x|^p)^(1/p)` over each window (padding as zeros), as `k` times the
/// window's average with the padding counted, for any integer `p`.
pub fn lp_pool(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let element = g.ty(&x).element;
    if !element.is_float() {
        return invalid(format!("its input is {}, not a float tensor", g.ty(&x)));
    }
    let p = node.int("p", 2);
    if p < 1 {
        return invalid(format!("p = {p} is not a positive integer"));
    }
    let magnitude = g.unary("array.abs", &x)?;
    let powered = match p {
        1 => magnitude,
        2 => g.binary("array.mul", &x, &x)?,
        _ => {
            let exponent = g.scalar(p as f64, element);
            g.binary("array.pow", &magnitude, &exponent)?
        }
    };
    let average = pool(g, node, &[Some(powered)])?.remove(0);
    let count: i64 = node
        .ints("kernel_shape")
        .unwrap_or_default()
        .iter()
        .product();
    let k = g.scalar(count as f64, element);
    let total = g.binary("array.mul", &average, &k)?;
    Ok(vec![match p {
        1 => total,
        2 => g.unary("array.sqrt", &total)?,
        _ => {
            let root = g.scalar(1.0 / p as f64, element);
            g.binary("array.pow", &total, &root)?
        }
    }])
}

/// `InstanceNormalization`: per sample and channel, over the spatial axes.
pub fn instance_norm(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let ty: TensorType = g.ty(&x);
    let rank = ty.rank();
    if rank < 3 {
        return invalid("its input has no spatial dimensions");
    }
    let axes: Vec<i64> = (2..rank as i64).collect();
    let mean = g.reduce("array.reduce_mean", &x, &axes, true)?;
    let centered = g.binary("array.sub", &x, &mean)?;
    let squares = g.binary("array.mul", &centered, &centered)?;
    let variance = g.reduce("array.reduce_mean", &squares, &axes, true)?;
    let eps = g.scalar(node.float("epsilon", 1e-5), ty.element);
    let shifted = g.binary("array.add", &variance, &eps)?;
    let inv = g.unary("array.rsqrt", &shifted)?;
    let normalized = g.binary("array.mul", &centered, &inv)?;
    let scale = input(inputs, 1)?;
    let scale = per_channel(g, &scale, rank)?;
    let bias = input(inputs, 2)?;
    let bias = per_channel(g, &bias, rank)?;
    let scaled = g.binary("array.mul", &normalized, &scale)?;
    Ok(vec![g.binary("array.add", &scaled, &bias)?])
}

/// `LRN` across channels: `x / (bias + alpha / size * sum of x^2 over the size channels around
/// each)^beta`, the sum an average pool of the zero-padded squares along the channels.
pub fn lrn(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let ty = g.ty(&x);
    if ty.rank() < 3 {
        return invalid(format!("its input {ty} has no spatial dimensions"));
    }
    let size = node.int("size", 0);
    if size < 1 {
        return invalid(format!("size {size} is not positive"));
    }
    let (n, c) = (ty.shape[0], ty.shape[1]);
    let spatial: u64 = ty.shape[2..].iter().product();
    let squares = g.binary("array.mul", &x, &x)?;
    // [N, C, H*W, 1] is NHWC with the channels as rows: a window of `size` rows.
    let rows = g.reshape(&squares, vec![n, c, spatial, 1])?;
    let before = (size - 1) / 2;
    let low = Attribute::List([0, before, 0, 0].map(Attribute::Int).to_vec());
    let high = Attribute::List([0, size - 1 - before, 0, 0].map(Attribute::Int).to_vec());
    let padded = g.op("array.pad", &[rows], &[("low", low), ("high", high)], None)?;
    let mean = g.op(
        "nn.avg_pool2d",
        &[padded],
        &[("window", ints(&[size, 1])), ("strides", ints(&[1, 1]))],
        None,
    )?;
    let mean = g.reshape(&mean, ty.shape.clone())?;
    let alpha = g.scalar(node.float("alpha", 1e-4), ty.element);
    let bias = g.scalar(node.float("bias", 1.0), ty.element);
    let beta = g.scalar(node.float("beta", 0.75), ty.element);
    let scaled = g.binary("array.mul", &alpha, &mean)?;
    let base = g.binary("array.add", &bias, &scaled)?;
    let denominator = g.binary("array.pow", &base, &beta)?;
    Ok(vec![g.binary("array.div", &x, &denominator)?])
}

/// `ConvTranspose` as a convolution: the input spread out by the strides (zeros between its
/// pixels), padded by the kernel's reach less the given padding (output padding at the end),
/// convolved with the kernel reversed in space and its channel roles swapped; with groups,
/// one such convolution per group on its channels, joined.
pub fn conv_transpose(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let w = input(inputs, 1)?;
    let bias = inputs.get(2).cloned().flatten();
    let (tx, tw) = (g.ty(&x), g.ty(&w));
    if tx.rank() != tw.rank() || !(3..=5).contains(&tx.rank()) {
        return unsupported(format!(
            "ConvTranspose of {tx} with filter {tw} (tessera does 1-d, 2-d and 3-d)"
        ));
    }
    let group = node.int("group", 1);
    let c = tx.shape[1];
    if group < 1 || tw.shape[0] != c || c % group as u64 != 0 {
        return invalid(format!(
            "the filter {tw} in {group} group(s) does not fit the input's {c} channels"
        ));
    }
    let group = group as u64;
    if group == 1 {
        return Ok(vec![transposed_conv(g, node, x, w, bias)?]);
    }
    let (cg, mg) = (c / group, tw.shape[1]);
    let rank = tx.rank();
    let mut parts = Vec::with_capacity(group as usize);
    for k in 0..group {
        let channels = |t: &TensorType, axis: usize, size: u64| {
            let mut from = vec![0; t.rank()];
            let mut to = t.shape.clone();
            from[axis] = k * size;
            to[axis] = (k + 1) * size;
            (from, to)
        };
        let (from, to) = channels(&tx, 1, cg);
        let xs = g.slice(&x, &from, &to, &vec![1; rank])?;
        let (from, to) = channels(&tw, 0, cg);
        let ws = g.slice(&w, &from, &to, &vec![1; rank])?;
        let bs = match &bias {
            Some(b) => Some(g.slice(b, &[k * mg], &[(k + 1) * mg], &[1])?),
            None => None,
        };
        parts.push(transposed_conv(g, node, xs, ws, bs)?);
    }
    Ok(vec![g.op(
        "array.concat",
        &parts,
        &[("axis", Attribute::Int(1))],
        None,
    )?])
}

/// One group's transposed convolution of `x` (`[N, C, spatial...]`, 1 to 3 spatial axes) by
/// `w` (`[C, M, k...]`): the input spread by the strides, padded by the window's span less
/// the padding (cropped where the padding is larger, output padding added at the end), then
/// convolved with the kernel reversed in space.
fn transposed_conv(
    g: &mut Graph,
    node: &Node,
    x: Val,
    w: Val,
    bias: Option<Val>,
) -> NodeResult<Val> {
    let (tx, tw) = (g.ty(&x), g.ty(&w));
    let spatial = tx.shape[2..].to_vec();
    let n = spatial.len();
    let auto_pad = node.string("auto_pad", "NOTSET");
    // The explicit pads; auto_pad means something else here (below).
    let mut axes = window_axes(node, &spatial, &tw.shape[2..], "NOTSET")?;
    let mut extra: Vec<u64> = match node.ints("output_padding") {
        Some(p) if p.len() == n && p.iter().all(|&v| v >= 0) => {
            p.iter().map(|&v| v as u64).collect()
        }
        Some(p) => {
            return invalid(format!(
                "output_padding {p:?} does not fit {n} spatial dimension(s)"
            ))
        }
        None => vec![0; n],
    };
    // The output size asked for (output_shape, or SAME's input x stride) fixes the padding.
    let wanted: Option<Vec<u64>> = match (node.ints("output_shape"), auto_pad.as_str()) {
        (Some(shape), _) => Some(shape.iter().map(|&v| v.max(0) as u64).collect()),
        (None, "SAME_UPPER" | "SAME_LOWER") => Some(
            spatial
                .iter()
                .zip(&axes)
                .map(|(&i, a)| i.saturating_mul(a.stride))
                .collect(),
        ),
        (None, "NOTSET") => None,
        (None, "VALID") => {
            for axis in &mut axes {
                (axis.begin, axis.end) = (0, 0);
            }
            None
        }
        (None, other) => {
            return invalid(format!(
                "auto_pad '{other}' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER"
            ))
        }
    };
    if let Some(wanted) = wanted {
        if wanted.len() != n {
            return invalid(format!(
                "output_shape {wanted:?} does not fit {n} spatial dimension(s)"
            ));
        }
        for d in 0..n {
            let axis = &mut axes[d];
            let full = axis
                .stride
                .saturating_mul(spatial[d] - 1)
                .saturating_add(extra[d])
                .saturating_add(axis.span());
            if wanted[d] > full {
                // Larger than the convolution makes: the rest is output padding.
                extra[d] += wanted[d] - full;
                (axis.begin, axis.end) = (0, 0);
                continue;
            }
            let total = full - wanted[d];
            (axis.begin, axis.end) = if auto_pad == "SAME_UPPER" {
                (total / 2, total - total / 2)
            } else {
                (total - total / 2, total / 2)
            };
        }
    }
    // Spread the channels-last input along each strided axis: a unit axis after it padded
    // to the stride, merged, the trailing gap cut.
    let mut spread = channels_last(g, &x)?;
    for (d, axis) in axes.iter().enumerate() {
        if axis.stride == 1 {
            continue;
        }
        let shape = g.ty(&spread).shape;
        let mut apart = shape.clone();
        apart.insert(d + 2, 1);
        let apart = g.reshape(&spread, apart)?;
        let mut high = vec![0i64; shape.len() + 1];
        high[d + 2] = axis.stride.min(i64::MAX as u64) as i64 - 1;
        let low = vec![0i64; shape.len() + 1];
        let spaced = g.op(
            "array.pad",
            &[apart],
            &[("low", ints(&low)), ("high", ints(&high))],
            None,
        )?;
        let mut merged = shape.clone();
        merged[d + 1] *= axis.stride;
        let merged_val = g.reshape(&spaced, merged.clone())?;
        let mut limit = merged;
        limit[d + 1] = (shape[d + 1] - 1) * axis.stride + 1;
        let rank = limit.len();
        spread = g.slice(&merged_val, &vec![0; rank], &limit, &vec![1; rank])?;
    }
    // Pad by the span less one less the padding (crop where the padding is larger).
    let shape = g.ty(&spread).shape;
    let rank = shape.len();
    let mut low = vec![0i64; rank];
    let mut high = vec![0i64; rank];
    for (d, axis) in axes.iter().enumerate() {
        let reach = axis.span().min(i64::MAX as u64) as i64 - 1;
        low[d + 1] = reach - axis.begin.min(i64::MAX as u64) as i64;
        high[d + 1] = reach - axis.end.min(i64::MAX as u64) as i64 + extra[d] as i64;
    }
    let from: Vec<u64> = low.iter().map(|&p| (-p).max(0) as u64).collect();
    let to: Vec<u64> = (0..rank)
        .map(|d| (shape[d] as i64 + high[d].min(0)).max(from[d] as i64) as u64)
        .collect();
    let cropped = g.slice(&spread, &from, &to, &vec![1; rank])?;
    let list = |v: &[i64]| Attribute::List(v.iter().map(|&p| Attribute::Int(p.max(0))).collect());
    let padded = if low.iter().chain(&high).any(|&p| p > 0) {
        g.op(
            "array.pad",
            &[cropped],
            &[("low", list(&low)), ("high", list(&high))],
            None,
        )?
    } else {
        cropped
    };
    // The kernel [C, M, k...] reversed in space, as [k..., C, M].
    let mut flipped = w;
    for axis in 2..tw.rank() {
        let reversed: Vec<f64> = (0..tw.shape[axis]).rev().map(|i| i as f64).collect();
        let ty = TensorType::new(vec![tw.shape[axis]], ElementType::I64);
        let order = g.constant(Tensor::from_numbers(&ty, reversed));
        flipped = g.op(
            "array.gather",
            &[flipped, order],
            &[("axis", Attribute::Int(axis as i64))],
            None,
        )?;
    }
    let mut perm: Vec<i64> = (2..tw.rank() as i64).collect();
    perm.extend([0, 1]);
    let kernel = g.transpose(&flipped, &perm)?;
    let forward: Vec<Axis> = axes
        .iter()
        .map(|a| Axis {
            stride: 1,
            begin: 0,
            end: 0,
            ..*a
        })
        .collect();
    let y = conv_channels_last(g, padded, kernel, &forward, 1, bias)?;
    channels_first(g, &y)
}
