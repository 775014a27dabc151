//! `Attention` (opsets 23 to 25): scaled dot-product attention with its masks (boolean or
//! additive, shorter than the keys and padded), causal and sliding-window frontiers aligned to
//! the key cache, padded key lengths, past key/value caches, grouped-query heads, softcap and
//! the four `qk_matmul_output` modes, built from `array` ops the way onnx's reference
//! implementation computes it (a fully masked query row gives zeros, not NaN).

use super::{input, Inputs};
use crate::graph::{invalid, unsupported, Graph, NodeResult, Val};
use crate::node::Node;
use crate::tensor::element_type;
use tessera::attr::Attribute;
use tessera::exec::tensor::Tensor;
use tessera::types::{ElementClass, ElementType, TensorType};

/// Where key `j` sits for query `i`: the frontiers are relative to `i + offset`.
enum Offset {
    /// The same for every batch: the past cache's length (or 0).
    Fixed(i64),
    /// Per batch, computed at run time: `nonpad_kv_seqlen[b] - q_len`, shape `[B, 1, 1]`.
    PerBatch(Val),
}

/// `Attention(Q, K, V, attn_mask?, past_key?, past_value?, nonpad_kv_seqlen?)`: `Y`,
/// `present_key`, `present_value`, `qk_matmul_output`.
pub fn attention(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let optional = |i: usize| inputs.get(i).cloned().flatten();
    let (mut q, mut k, mut v) = (input(inputs, 0)?, input(inputs, 1)?, input(inputs, 2)?);
    let (mask, past_key, past_value, nonpad) = (optional(3), optional(4), optional(5), optional(6));
    if past_key.is_some() != past_value.is_some() {
        return invalid("past_key and past_value must be given together");
    }
    if nonpad.is_some() && past_key.is_some() {
        return invalid("nonpad_kv_seqlen cannot be combined with past_key and past_value");
    }
    let q_ty = g.ty(&q);
    let element = q_ty.element;
    if element.class() != ElementClass::Float {
        return invalid(format!("Q is {q_ty}, not a float tensor"));
    }
    let rank = q_ty.rank();
    if ![3, 4].contains(&rank) || g.ty(&k).rank() != rank || g.ty(&v).rank() != rank {
        return invalid(format!(
            "Q, K and V are {q_ty}, {}, {}: all rank 3 or all rank 4",
            g.ty(&k),
            g.ty(&v)
        ));
    }
    if rank == 3 {
        let heads = |name: &str| match node.int(name, 0) {
            h if h > 0 => Ok(h as u64),
            _ => invalid(format!("3-d inputs need a positive {name}")),
        };
        let (q_heads, kv_heads) = (heads("q_num_heads")?, heads("kv_num_heads")?);
        q = split_heads(g, &q, q_heads)?;
        k = split_heads(g, &k, kv_heads)?;
        v = split_heads(g, &v, kv_heads)?;
    }
    if let Some(past) = &past_key {
        k = concat(g, &[past.clone(), k], 2)?;
    }
    if let Some(past) = &past_value {
        v = concat(g, &[past.clone(), v], 2)?;
    }
    let (present_key, present_value) = (k.clone(), v.clone());
    let (q_ty, k_ty, v_ty) = (g.ty(&q), g.ty(&k), g.ty(&v));
    let (batch, q_heads, q_len, head_size) =
        (q_ty.shape[0], q_ty.shape[1], q_ty.shape[2], q_ty.shape[3]);
    let (kv_heads, kv_len) = (k_ty.shape[1], k_ty.shape[2]);
    if k_ty.shape[3] != head_size || v_ty.shape[1] != kv_heads || v_ty.shape[2] != kv_len {
        return invalid(format!(
            "Q {q_ty}, K {k_ty} and V {v_ty} do not agree on head size, heads or key length"
        ));
    }

    let offset = match (&nonpad, &past_key) {
        (Some(lengths), None) => {
            let lengths = g.reshape(lengths, vec![batch, 1, 1])?;
            let q_len_value = g.scalar(q_len as f64, g.ty(&lengths).element);
            Offset::PerBatch(g.binary("array.sub", &lengths, &q_len_value)?)
        }
        _ => Offset::Fixed(past_key.as_ref().map_or(0, |p| g.ty(p).shape[2] as i64)),
    };
    let bias = attention_bias(
        g,
        node,
        mask,
        &offset,
        nonpad.as_ref(),
        [batch, q_len, kv_len],
        element,
    )?;

    // Grouped-query attention: each key/value head serves q_heads / kv_heads query heads.
    if q_heads != kv_heads {
        if q_heads % kv_heads != 0 {
            return invalid(format!(
                "{q_heads} query heads are not a multiple of {kv_heads} key/value heads"
            ));
        }
        k = repeat_heads(g, &k, q_heads / kv_heads)?;
        v = repeat_heads(g, &v, q_heads / kv_heads)?;
    }

    let scale = match node.attr("scale") {
        Some(a) => f64::from(a.f),
        None => 1.0 / (head_size as f64).sqrt(),
    };
    // Q and K are each scaled by sqrt(scale), rounded to their type, as onnx computes it.
    let root = g.scalar(scale.sqrt(), element);
    let q_scaled = g.binary("array.mul", &q, &root)?;
    let k_scaled = g.binary("array.mul", &k, &root)?;
    let k_t = g.transpose(&k_scaled, &[0, 1, 3, 2])?;
    let mut scores = g.op("array.matmul", &[q_scaled, k_t], &[], None)?;
    let softcap = node.float("softcap", 0.0);
    if softcap > 0.0 {
        let cap = g.scalar(softcap, element);
        let ratio = g.binary("array.div", &scores, &cap)?;
        let squashed = g.unary("array.tanh", &ratio)?;
        scores = g.binary("array.mul", &squashed, &cap)?;
    }
    let biased = match &bias {
        Some(b) => g.binary("array.add", &scores, b)?,
        None => scores.clone(),
    };
    let precision = match node.int("softmax_precision", 0) {
        0 => element,
        code => element_type(code as i32)
            .map_err(|e| crate::graph::NodeError::Unsupported(format!("softmax_precision {e}")))?,
    };
    if precision.class() != ElementClass::Float {
        return invalid(format!(
            "softmax_precision is {precision}, not a float type"
        ));
    }
    let guarded = guarded_softmax(g, &biased, bias.as_ref(), precision)?;
    let probabilities = g.cast(&guarded, element)?;
    let qk_output = match node.int("qk_matmul_output_mode", 0) {
        0 | 1 => scores,
        2 => biased,
        3 => probabilities.clone(),
        mode => return invalid(format!("qk_matmul_output_mode is {mode}, not 0 to 3")),
    };
    let mut y = g.op("array.matmul", &[probabilities, v], &[], None)?;
    if rank == 3 {
        let merged = g.transpose(&y, &[0, 2, 1, 3])?;
        let width = g.ty(&merged).shape[2] * g.ty(&merged).shape[3];
        y = g.reshape(&merged, vec![batch, q_len, width])?;
    }
    Ok(vec![y, present_key, present_value, qk_output])
}

/// `[B, S, H * D]` as `[B, H, S, D]`.
fn split_heads(g: &mut Graph, x: &Val, heads: u64) -> NodeResult<Val> {
    let ty = g.ty(x);
    let (batch, len, hidden) = (ty.shape[0], ty.shape[1], ty.shape[2]);
    if hidden % heads != 0 {
        return invalid(format!("{ty} does not split into {heads} heads"));
    }
    let split = g.reshape(x, vec![batch, len, heads, hidden / heads])?;
    g.transpose(&split, &[0, 2, 1, 3])
}

/// `[B, H, S, D]` with each head repeated `times` times in place: `h0 h0 h1 h1 ...`.
fn repeat_heads(g: &mut Graph, x: &Val, times: u64) -> NodeResult<Val> {
    let ty = g.ty(x);
    let [b, h, s, d] = [ty.shape[0], ty.shape[1], ty.shape[2], ty.shape[3]];
    let spread = g.reshape(x, vec![b, h, 1, s, d])?;
    let repeated = g.broadcast(&spread, vec![b, h, times, s, d])?;
    g.reshape(&repeated, vec![b, h * times, s, d])
}

/// `parts` joined along `axis`.
fn concat(g: &mut Graph, parts: &[Val], axis: i64) -> NodeResult<Val> {
    g.op(
        "array.concat",
        parts,
        &[("axis", Attribute::Int(axis))],
        None,
    )
}

/// `allowed ? 0 : -inf`, in `element`.
fn additive(g: &mut Graph, allowed: &Val, element: ElementType) -> NodeResult<Val> {
    let zero = g.scalar(0.0, element);
    let minus_inf = g.scalar(f64::NEG_INFINITY, element);
    g.select(allowed, &zero, &minus_inf)
}

/// The additive bias every score gets (`None` when there is none): the mask, the causal and
/// window frontiers, and the key padding, each `0` where a key may be attended and `-inf`
/// where not.
fn attention_bias(
    g: &mut Graph,
    node: &Node,
    mask: Option<Val>,
    offset: &Offset,
    nonpad: Option<&Val>,
    [batch, q_len, kv_len]: [u64; 3],
    element: ElementType,
) -> NodeResult<Option<Val>> {
    let mut bias = match mask {
        Some(mask) => Some(padded_mask(g, &mask, kv_len, element)?),
        None => None,
    };
    let causal = node.int("is_causal", 0) != 0;
    let (left, right) = (
        node.int("left_window_size", -1),
        node.int("right_window_size", -1),
    );
    if left < -1 || right < -1 {
        return invalid(format!(
            "window sizes {left} and {right} must be -1 (unbounded) or nonnegative"
        ));
    }
    // `d` is how far key j lies behind query i: (i + offset) - j.
    let mut bands = Vec::new();
    if causal {
        bands.push(Band {
            low: Some(0),
            high: None,
        });
    }
    if left >= 0 || right >= 0 {
        let bound = |size: i64| (size >= 0).then_some(size);
        bands.push(Band {
            low: bound(right).map(|r| -r),
            high: bound(left),
        });
    }
    for band in bands {
        let allowed = band_mask(g, offset, [batch, q_len, kv_len], band)?;
        let term = additive(g, &allowed, element)?;
        bias = Some(match bias {
            Some(b) => g.binary("array.add", &b, &term)?,
            None => term,
        });
    }
    if let Some(lengths) = nonpad {
        let keys = g.constant(Tensor::from_numbers(
            &TensorType::new(vec![kv_len], g.ty(lengths).element),
            (0..kv_len).map(|j| j as f64),
        ));
        let lengths = g.reshape(lengths, vec![batch, 1, 1, 1])?;
        let present = g.compare(&keys, &lengths, "lt")?;
        let term = additive(g, &present, element)?;
        bias = Some(match bias {
            Some(b) => g.binary("array.add", &b, &term)?,
            None => term,
        });
    }
    Ok(bias)
}

/// The mask as an additive bias over all `kv_len` keys: a boolean mask becomes `0`/`-inf`;
/// one shorter than the keys is padded with masked positions.
fn padded_mask(g: &mut Graph, mask: &Val, kv_len: u64, element: ElementType) -> NodeResult<Val> {
    let ty = g.ty(mask);
    let additive_mask = match ty.element {
        ElementType::I1 => additive(g, mask, element)?,
        e if e == element => mask.clone(),
        other => {
            return unsupported(format!(
                "an attention mask of {other} with {element} queries"
            ))
        }
    };
    let width = ty.shape.last().copied().unwrap_or(1);
    if ty.rank() == 0 || width >= kv_len {
        return Ok(additive_mask);
    }
    let mut pad_shape = ty.shape.clone();
    *pad_shape.last_mut().expect("rank >= 1") = kv_len - width;
    let pad = g.splat(
        tessera::attr::Scalar::Float(f64::NEG_INFINITY),
        TensorType::new(pad_shape, element),
    );
    concat(g, &[additive_mask, pad], -1)
}

/// The keys a query may attend: those whose distance behind it, `d = (i + offset) - j`, is
/// within `low <= d <= high` (a side `None` is unbounded).
#[derive(Clone, Copy)]
struct Band {
    low: Option<i64>,
    high: Option<i64>,
}

impl Band {
    fn contains(self, d: i64) -> bool {
        self.low.is_none_or(|l| d >= l) && self.high.is_none_or(|h| d <= h)
    }
}

/// Whether query `i` may attend key `j` under `band`: `[q, kv]` for a fixed offset, else
/// `[B, 1, q, kv]`.
fn band_mask(
    g: &mut Graph,
    offset: &Offset,
    [batch, q_len, kv_len]: [u64; 3],
    band: Band,
) -> NodeResult<Val> {
    match offset {
        Offset::Fixed(offset) => {
            let ty = TensorType::new(vec![q_len, kv_len], ElementType::I1);
            let values = (0..q_len as i64).flat_map(|i| {
                (0..kv_len as i64).map(move |j| f64::from(u8::from(band.contains(i + offset - j))))
            });
            Ok(g.constant(Tensor::from_numbers(&ty, values)))
        }
        Offset::PerBatch(offsets) => {
            // (i - j) for every pair, plus each batch's offset, then tested against the band.
            let element = g.ty(offsets).element;
            let ty = TensorType::new(vec![q_len, kv_len], element);
            let distances =
                (0..q_len as i64).flat_map(|i| (0..kv_len as i64).map(move |j| (i - j) as f64));
            let distance = g.constant(Tensor::from_numbers(&ty, distances));
            let d = g.binary("array.add", &distance, offsets)?;
            let mut allowed = g.splat(
                tessera::attr::Scalar::Bool(true),
                TensorType::new(vec![batch, q_len, kv_len], ElementType::I1),
            );
            for (bound, predicate) in [(band.low, "ge"), (band.high, "le")] {
                if let Some(bound) = bound {
                    let bound = g.scalar(bound as f64, element);
                    let test = g.compare(&d, &bound, predicate)?;
                    let no = g.scalar(0.0, ElementType::I1);
                    allowed = g.select(&test, &allowed, &no)?;
                }
            }
            g.reshape(&allowed, vec![batch, 1, q_len, kv_len])
        }
    }
}

/// Softmax over the keys in `precision`, where a row whose bias is all `-inf` (no key may be
/// attended) gives zeros: its maximum is taken as 0 and its sum as 1 so nothing is NaN, then
/// the row is zeroed by the bias (onnx's reference decides on the bias, not the scores).
fn guarded_softmax(
    g: &mut Graph,
    scores: &Val,
    bias: Option<&Val>,
    precision: ElementType,
) -> NodeResult<Val> {
    // f16 and bf16 are computed in f32 and rounded once, as nn.softmax does.
    let precision = precision.accumulator();
    let x = g.cast(scores, precision)?;
    let Some(bias) = bias else {
        return g.op("nn.softmax", &[x], &[("axis", Attribute::Int(-1))], None);
    };
    let last = g.ty(&x).rank() as i64 - 1;
    let minus_inf = g.scalar(f64::NEG_INFINITY, precision);
    let zero = g.scalar(0.0, precision);
    let one = g.scalar(1.0, precision);
    let max = g.reduce("array.reduce_max", &x, &[last], true)?;
    let empty_row = g.compare(&max, &minus_inf, "eq")?;
    let safe_max = g.select(&empty_row, &zero, &max)?;
    let shifted = g.binary("array.sub", &x, &safe_max)?;
    let e = g.unary("array.exp", &shifted)?;
    let sum = g.reduce("array.reduce_sum", &e, &[last], true)?;
    let nothing = g.compare(&sum, &zero, "eq")?;
    let sum = g.select(&nothing, &one, &sum)?;
    let p = g.binary("array.div", &e, &sum)?;
    let bias_rank = g.ty(bias).rank() as i64;
    let bias_max = g.reduce("array.reduce_max", bias, &[bias_rank - 1], true)?;
    let bias_minus_inf = g.scalar(f64::NEG_INFINITY, g.ty(bias).element);
    let masked_row = g.compare(&bias_max, &bias_minus_inf, "eq")?;
    g.select(&masked_row, &zero, &p)
}
