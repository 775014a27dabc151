//! Layers over NCHW tensors: `Conv`, `MaxPool`, `AveragePool`, the global pools, and the
//! normalizations (`BatchNormalization` at inference, `LayerNormalization`,
//! `InstanceNormalization`) and `LRN`. tessera's convolution and pooling are channels-last: the input
//! is transposed to NHWC and the result back (a transpose that undoes the one before it
//! vanishes), filters are transposed to HWCF at import time.

use super::{input, Inputs};
use crate::graph::{invalid, unsupported, Graph, NodeResult, Val};
use crate::node::Node;
use tessera::attr::Attribute;
use tessera::types::{ElementClass, ElementType, TensorType};

/// An integer list attribute value.
fn ints(values: &[i64]) -> Attribute {
    Attribute::List(values.iter().map(|&v| Attribute::Int(v)).collect())
}

/// The spatial geometry of a convolution or pooling node over a 2-d (or 1-d, as 1 × L) input.
struct Window {
    kernel: [u64; 2],
    strides: [u64; 2],
    dilations: [u64; 2],
    /// `[top, left, bottom, right]` (ONNX's begin..., end...).
    pads: [u64; 4],
}

/// Reads `kernel_shape`, `strides`, `dilations`, `pads`/`auto_pad` of `node` for spatial
/// input extents `input` (1 or 2 of them) and kernel extents `kernel`; 1-d values are
/// placed on the second axis, the first being 1.
fn window(node: &Node, input: &[u64], kernel: &[u64]) -> NodeResult<Window> {
    window_padded(node, input, kernel, &node.string("auto_pad", "NOTSET"))
}

/// [`window`] with `auto_pad` given (a transposed convolution reads only the explicit pads).
fn window_padded(node: &Node, input: &[u64], kernel: &[u64], auto_pad: &str) -> NodeResult<Window> {
    let n = input.len();
    let two = |values: Vec<i64>, name: &str, fill: i64| -> NodeResult<[u64; 2]> {
        if values.len() != n || values.iter().any(|&v| v < 0) {
            return invalid(format!(
                "{name} {values:?} does not fit {n} spatial dimension(s)"
            ));
        }
        Ok(if n == 1 {
            [fill as u64, values[0] as u64]
        } else {
            [values[0] as u64, values[1] as u64]
        })
    };
    let kernel = two(
        kernel.iter().map(|&k| k as i64).collect(),
        "kernel_shape",
        1,
    )?;
    let strides = two(node.ints("strides").unwrap_or(vec![1; n]), "strides", 1)?;
    let dilations = two(node.ints("dilations").unwrap_or(vec![1; n]), "dilations", 1)?;
    if strides.contains(&0) || dilations.contains(&0) || kernel.contains(&0) {
        return invalid("kernel sizes, strides and dilations must be positive");
    }
    let input2 = if n == 1 {
        [1, input[0]]
    } else {
        [input[0], input[1]]
    };
    let pads = match auto_pad {
        "NOTSET" => {
            let p = node.ints("pads").unwrap_or(vec![0; 2 * n]);
            if p.len() != 2 * n || p.iter().any(|&v| v < 0) {
                return invalid(format!("pads {p:?} do not fit {n} spatial dimension(s)"));
            }
            let p: Vec<u64> = p.iter().map(|&v| v as u64).collect();
            if n == 1 {
                [0, p[0], 0, p[1]]
            } else {
                [p[0], p[1], p[2], p[3]]
            }
        }
        "VALID" => [0; 4],
        "SAME_UPPER" | "SAME_LOWER" => {
            let mut pads = [0; 4];
            for d in 0..2 {
                let out = input2[d].div_ceil(strides[d]);
                let span = (kernel[d] - 1) * dilations[d] + 1;
                let total = ((out.max(1) - 1) * strides[d] + span).saturating_sub(input2[d]);
                let small = total / 2;
                let (begin, end) = if auto_pad == "SAME_UPPER" {
                    (small, total - small)
                } else {
                    (total - small, small)
                };
                pads[d] = begin;
                pads[d + 2] = end;
            }
            pads
        }
        other => {
            return invalid(format!(
                "auto_pad '{other}' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER"
            ))
        }
    };
    Ok(Window {
        kernel,
        strides,
        dilations,
        pads,
    })
}

/// `x` as NHWC: rank 4 transposed, rank 3 (`[N, C, L]`) as `[N, 1, L, C]`.
fn to_nhwc(g: &mut Graph, x: &Val) -> NodeResult<Val> {
    let ty = g.ty(x);
    match ty.rank() {
        4 => g.transpose(x, &[0, 2, 3, 1]),
        3 => {
            let x4 = g.reshape(x, vec![ty.shape[0], ty.shape[1], 1, ty.shape[2]])?;
            g.transpose(&x4, &[0, 2, 3, 1])
        }
        r => unsupported(format!(
            "a {r}-d input (tessera convolves and pools 1-d and 2-d)"
        )),
    }
}

/// NHWC `y` back to the layout of an input of rank `rank` (NCHW, or `[N, C, L]`).
fn from_nhwc(g: &mut Graph, y: &Val, rank: usize) -> NodeResult<Val> {
    let back = g.transpose(y, &[0, 3, 1, 2])?;
    if rank == 3 {
        let s = g.ty(&back).shape;
        return g.reshape(&back, vec![s[0], s[1], s[3]]);
    }
    Ok(back)
}

/// `Conv`: `nn.conv2d`, or `nn.group_conv2d` for more than one group (depthwise included).
pub fn conv(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let w = input(inputs, 1)?;
    let (tx, tw) = (g.ty(&x), g.ty(&w));
    if tx.rank() != tw.rank() || !(3..=4).contains(&tx.rank()) {
        return unsupported(format!(
            "Conv of {tx} with filter {tw} (tessera convolves 1-d and 2-d)"
        ));
    }
    let group = node.int("group", 1);
    if group < 1 || tw.shape[1].checked_mul(group as u64) != Some(tx.shape[1]) {
        return invalid(format!(
            "the filter {tw} in {group} group(s) does not fit the input's {} channels",
            tx.shape[1]
        ));
    }
    let spatial = &tx.shape[2..];
    let geometry = window(node, spatial, &tw.shape[2..])?;
    let xt = to_nhwc(g, &x)?;
    // Filters [M, C, kh, kw] (or [M, C, k]) to HWCF.
    let w4 = if tw.rank() == 3 {
        g.reshape(&w, vec![tw.shape[0], tw.shape[1], 1, tw.shape[2]])?
    } else {
        w
    };
    let wt = g.transpose(&w4, &[2, 3, 1, 0])?;
    let mut operands = vec![xt, wt];
    if let Some(Some(b)) = inputs.get(2) {
        operands.push(b.clone());
    }
    let p = geometry.pads;
    let attrs = [
        ("strides", ints(&geometry.strides.map(|v| v as i64))),
        ("dilations", ints(&geometry.dilations.map(|v| v as i64))),
        ("padding", ints(&[p[0], p[2], p[1], p[3]].map(|v| v as i64))),
    ];
    let y = if group == 1 {
        g.op("nn.conv2d", &operands, &attrs, None)?
    } else {
        let mut attrs = attrs.to_vec();
        attrs.push(("groups", Attribute::Int(group)));
        g.op("nn.group_conv2d", &operands, &attrs, None)?
    };
    Ok(vec![from_nhwc(g, &y, tx.rank())?])
}

/// `MaxPool` and `AveragePool`.
pub fn pool(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let tx = g.ty(&x);
    if !(3..=4).contains(&tx.rank()) {
        return unsupported(format!(
            "{} of {tx} (tessera pools 1-d and 2-d)",
            node.proto.op_type
        ));
    }
    let max = node.proto.op_type == "MaxPool";
    if max && node.proto.output.get(1).is_some_and(|o| !o.is_empty()) {
        return unsupported("MaxPool's Indices output");
    }
    let Some(kernel) = node.ints("kernel_shape") else {
        return invalid("it has no kernel_shape");
    };
    let kernel: Vec<u64> = kernel.iter().map(|&k| k.max(0) as u64).collect();
    let ceil_mode = node.int("ceil_mode", 0) != 0;
    // LpPool sums over the window, padding included (as zeros): its average counts the
    // padding whatever count_include_pad says.
    let include_pad =
        node.proto.op_type == "LpPool" || (!max && node.int("count_include_pad", 0) != 0);
    let mut geometry = window(node, &tx.shape[2..], &kernel)?;
    if geometry.dilations != [1, 1] {
        return unsupported(format!("{} with dilations", node.proto.op_type));
    }
    let spatial = if tx.rank() == 3 {
        [1, tx.shape[2]]
    } else {
        [tx.shape[2], tx.shape[3]]
    };
    // With ceil_mode, extra end padding makes the last partial window exist (never counted);
    // a window that would start in the end padding is left out.
    let mut extra = [0u64; 2];
    if ceil_mode {
        for (d, &extent) in spatial.iter().enumerate() {
            let padded = extent + geometry.pads[d] + geometry.pads[d + 2];
            if padded < geometry.kernel[d] {
                continue;
            }
            let mut out = (padded - geometry.kernel[d]).div_ceil(geometry.strides[d]) + 1;
            if (out - 1) * geometry.strides[d] >= extent + geometry.pads[d] {
                out -= 1;
            }
            let needed = (out - 1) * geometry.strides[d] + geometry.kernel[d];
            extra[d] = needed.saturating_sub(padded);
        }
    }
    let mut xt = to_nhwc(g, &x)?;
    if include_pad && geometry.pads.iter().any(|&p| p > 0) {
        // Padding that counts is data: pad with zeros, pool what remains.
        let p = geometry.pads;
        let low = Attribute::List(
            [0, p[0], p[1], 0]
                .map(|v| Attribute::Int(v as i64))
                .to_vec(),
        );
        let high = Attribute::List(
            [0, p[2], p[3], 0]
                .map(|v| Attribute::Int(v as i64))
                .to_vec(),
        );
        xt = g.op("array.pad", &[xt], &[("low", low), ("high", high)], None)?;
        geometry.pads = [0; 4];
    }
    geometry.pads[2] += extra[0];
    geometry.pads[3] += extra[1];
    let p = geometry.pads;
    let attrs = [
        ("window", ints(&geometry.kernel.map(|v| v as i64))),
        ("strides", ints(&geometry.strides.map(|v| v as i64))),
        ("padding", ints(&[p[0], p[2], p[1], p[3]].map(|v| v as i64))),
    ];
    let name = if max {
        "nn.max_pool2d"
    } else {
        "nn.avg_pool2d"
    };
    // Integers up to 16 bits pool exactly in f32 (a maximum only picks one of them).
    let element = tx.element;
    if element.class() != ElementClass::Float {
        if !max || element.bit_width() > 16 {
            return unsupported(format!("{} of {element}", node.proto.op_type));
        }
        xt = g.cast(&xt, ElementType::F32)?;
    }
    let y = g.op(name, &[xt], &attrs, None)?;
    let y = g.cast(&y, element)?;
    Ok(vec![from_nhwc(g, &y, tx.rank())?])
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
    if tx.rank() != tw.rank() || !(3..=4).contains(&tx.rank()) {
        return unsupported(format!(
            "ConvTranspose of {tx} with filter {tw} (tessera does 1-d and 2-d)"
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

/// One group's transposed convolution of NCHW (or `[N, C, L]`) `x` by `w` (`[C, M, kh, kw]`).
fn transposed_conv(
    g: &mut Graph,
    node: &Node,
    x: Val,
    w: Val,
    bias: Option<Val>,
) -> NodeResult<Val> {
    let (tx, tw) = (g.ty(&x), g.ty(&w));
    let spatial = &tx.shape[2..];
    let n = spatial.len();
    let auto_pad = node.string("auto_pad", "NOTSET");
    // The explicit pads; auto_pad means something else here (below).
    let mut geometry = window_padded(node, spatial, &tw.shape[2..], "NOTSET")?;
    let output_padding = match node.ints("output_padding") {
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
    // Output padding per 2-d axis (1-d values on the second).
    let mut extra: [u64; 2] = if n == 1 {
        [0, output_padding[0]]
    } else {
        [output_padding[0], output_padding[1]]
    };
    let input2 = if n == 1 {
        [1, spatial[0]]
    } else {
        [spatial[0], spatial[1]]
    };
    let reach = |d: usize| (geometry.kernel[d] - 1) * geometry.dilations[d] + 1;
    // The output size asked for (output_shape, or SAME's input x stride) fixes the padding.
    let wanted: Option<Vec<u64>> = match (node.ints("output_shape"), auto_pad.as_str()) {
        (Some(shape), _) => Some(shape.iter().map(|&v| v.max(0) as u64).collect()),
        (None, "SAME_UPPER" | "SAME_LOWER") => Some(
            spatial
                .iter()
                .zip(if n == 1 {
                    &geometry.strides[1..]
                } else {
                    &geometry.strides[..]
                })
                .map(|(&i, &s)| i * s)
                .collect(),
        ),
        (None, "NOTSET") => None,
        (None, "VALID") => {
            geometry.pads = [0; 4];
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
        for d in 0..2 {
            let out = if n == 1 { [1, wanted[0]][d] } else { wanted[d] };
            let full = geometry.strides[d] * (input2[d] - 1) + extra[d] + reach(d);
            if out > full {
                // Larger than the convolution makes: the rest is output padding.
                extra[d] += out - full;
                geometry.pads[d] = 0;
                geometry.pads[d + 2] = 0;
                continue;
            }
            let total = full - out;
            let (begin, end) = if auto_pad == "SAME_UPPER" {
                (total / 2, total - total / 2)
            } else {
                (total - total / 2, total / 2)
            };
            geometry.pads[d] = begin;
            geometry.pads[d + 2] = end;
        }
    }
    // Spread the NHWC input: [N, H, 1, W, 1, C] padded to [N, H, s, W, s, C], merged, cut.
    let xt = to_nhwc(g, &x)?;
    let t = g.ty(&xt).shape;
    let (s0, s1) = (geometry.strides[0], geometry.strides[1]);
    let mut spread = xt;
    if s0 > 1 || s1 > 1 {
        let apart = g.reshape(&spread, vec![t[0], t[1], 1, t[2], 1, t[3]])?;
        let high = Attribute::List(
            [0, 0, s0 - 1, 0, s1 - 1, 0]
                .map(|v| Attribute::Int(v as i64))
                .to_vec(),
        );
        let low = Attribute::List(vec![Attribute::Int(0); 6]);
        let spaced = g.op("array.pad", &[apart], &[("low", low), ("high", high)], None)?;
        let merged = g.reshape(&spaced, vec![t[0], t[1] * s0, t[2] * s1, t[3]])?;
        let limit = [t[0], (t[1] - 1) * s0 + 1, (t[2] - 1) * s1 + 1, t[3]];
        spread = g.slice(&merged, &[0; 4], &limit, &[1; 4])?;
    }
    // Pad by the reach less the padding (crop where the padding is larger).
    let shape = g.ty(&spread).shape;
    let mut low = [0i64; 4];
    let mut high = [0i64; 4];
    for d in 0..2 {
        let r = reach(d) as i64 - 1;
        low[d + 1] = r - geometry.pads[d] as i64;
        high[d + 1] = r - geometry.pads[d + 2] as i64 + extra[d] as i64;
    }
    let from: Vec<u64> = low.iter().map(|&p| (-p).max(0) as u64).collect();
    let to: Vec<u64> = (0..4)
        .map(|d| (shape[d] as i64 + high[d].min(0)).max(from[d] as i64) as u64)
        .collect();
    let cropped = g.slice(&spread, &from, &to, &[1; 4])?;
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
    // The kernel [C, M, kh, kw] reversed in space, as HWCF [kh, kw, C, M].
    let w4 = if tw.rank() == 3 {
        g.reshape(&w, vec![tw.shape[0], tw.shape[1], 1, tw.shape[2]])?
    } else {
        w
    };
    let k4 = g.ty(&w4).shape;
    let mut flipped = w4;
    for axis in [2usize, 3] {
        let reversed: Vec<f64> = (0..k4[axis]).rev().map(|i| i as f64).collect();
        let ty = TensorType::new(vec![k4[axis]], ElementType::I64);
        let order = g.constant(tessera::exec::tensor::Tensor::from_numbers(&ty, reversed));
        flipped = g.op(
            "array.gather",
            &[flipped, order],
            &[("axis", Attribute::Int(axis as i64))],
            None,
        )?;
    }
    let kernel = g.transpose(&flipped, &[2, 3, 0, 1])?;
    let mut operands = vec![padded, kernel];
    operands.extend(bias);
    let attrs = [("dilations", ints(&geometry.dilations.map(|v| v as i64)))];
    let y = g.op("nn.conv2d", &operands, &attrs, None)?;
    from_nhwc(g, &y, tx.rank())
}
