//! `RotaryEmbedding`: each pair of a head's first `rotary_embedding_dim` features rotated by
//! the angle of its position (cosines and sines from caches, picked by position ids), the
//! pairs being the two halves or, `interleaved`, neighbours.

use super::{input, Inputs};
use crate::graph::{invalid, Graph, NodeResult, Val};
use crate::node::Node;
use tessera::attr::Attribute;

/// `RotaryEmbedding(X, cos_cache, sin_cache, position_ids?)` on `[B, H, S, D]` or
/// `[B, S, H * D]` (with `num_heads`).
pub fn rotary_embedding(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let (mut cos, mut sin) = (input(inputs, 1)?, input(inputs, 2)?);
    let ty = g.ty(&x);
    // As [B, S, H, D].
    let x4 = match ty.rank() {
        4 => g.transpose(&x, &[0, 2, 1, 3])?,
        3 => {
            let heads = node.int("num_heads", 0);
            if heads <= 0 || ty.shape[2] % heads as u64 != 0 {
                return invalid(format!(
                    "3-d input {ty} needs num_heads dividing its last dimension"
                ));
            }
            let heads = heads as u64;
            g.reshape(
                &x,
                vec![ty.shape[0], ty.shape[1], heads, ty.shape[2] / heads],
            )?
        }
        _ => return invalid(format!("its input is {ty}, not 3-d or 4-d")),
    };
    let shape = g.ty(&x4).shape;
    let (b, s, h, d) = (shape[0], shape[1], shape[2], shape[3]);
    let rotated = match node.int("rotary_embedding_dim", 0) {
        0 => d,
        r if r > 0 && r as u64 <= d && r % 2 == 0 => r as u64,
        r => {
            return invalid(format!(
                "rotary_embedding_dim {r} does not fit head size {d}"
            ))
        }
    };
    let half = rotated / 2;
    if let Some(Some(ids)) = inputs.get(3) {
        let pick = |g: &mut Graph, cache: &Val| {
            g.op(
                "array.gather",
                &[cache.clone(), ids.clone()],
                &[("axis", Attribute::Int(0))],
                None,
            )
        };
        cos = pick(g, &cos)?;
        sin = pick(g, &sin)?;
    }
    for cache in [&cos, &sin] {
        let cache_ty = g.ty(cache);
        if cache_ty.shape.last() != Some(&half) {
            return invalid(format!(
                "a cache is {cache_ty}, but rotating {rotated} features needs {half} per position"
            ));
        }
    }
    // [.., S, half] -> [B or 1, S, 1, half].
    let spread = |g: &mut Graph, cache: &Val| {
        let shape = g.ty(cache).shape;
        let batch = if shape.len() == 3 { shape[0] } else { 1 };
        g.reshape(cache, vec![batch, s, 1, half])
    };
    let (cos, sin) = (spread(g, &cos)?, spread(g, &sin)?);
    let part = |g: &mut Graph, from: u64, to: u64, stride: u64| {
        g.slice(&x4, &[0, 0, 0, from], &[b, s, h, to], &[1, 1, 1, stride])
    };
    let interleaved = node.int("interleaved", 0) != 0;
    let (x1, x2) = if interleaved {
        (part(g, 0, rotated, 2)?, part(g, 1, rotated, 2)?)
    } else {
        (part(g, 0, half, 1)?, part(g, half, rotated, 1)?)
    };
    let cos_x1 = g.binary("array.mul", &cos, &x1)?;
    let sin_x2 = g.binary("array.mul", &sin, &x2)?;
    let real = g.binary("array.sub", &cos_x1, &sin_x2)?;
    let sin_x1 = g.binary("array.mul", &sin, &x1)?;
    let cos_x2 = g.binary("array.mul", &cos, &x2)?;
    let imag = g.binary("array.add", &sin_x1, &cos_x2)?;
    let concat = |g: &mut Graph, parts: &[Val], axis: i64| {
        g.op(
            "array.concat",
            parts,
            &[("axis", Attribute::Int(axis))],
            None,
        )
    };
    let mut y = if interleaved {
        let real = g.reshape(&real, vec![b, s, h, half, 1])?;
        let imag = g.reshape(&imag, vec![b, s, h, half, 1])?;
        let pairs = concat(g, &[real, imag], 4)?;
        g.reshape(&pairs, vec![b, s, h, rotated])?
    } else {
        concat(g, &[real, imag], 3)?
    };
    if rotated < d {
        let rest = part(g, rotated, d, 1)?;
        y = concat(g, &[y, rest], 3)?;
    }
    Ok(vec![match ty.rank() {
        4 => g.transpose(&y, &[0, 2, 1, 3])?,
        _ => g.reshape(&y, ty.shape)?,
    }])
}
