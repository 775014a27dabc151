//! Indexed reads and writes of ONNX: `GatherND`, `ScatterElements` (and the older
//! `Scatter`), `ScatterND` and `TensorScatter`. Every position is turned into a linear index
//! into the flattened data; a gather is then `array.gather` on rows, and a scatter compares
//! each written row with every row of the data (a `[writes, rows]` mask), combines the
//! writes that land on a row (`reduction`: none, add, mul, max, min) and keeps the data where
//! nothing lands. Indices may be computed at run time; negative ones count from the end.

use super::{axis_in, input, Inputs};
use crate::graph::{invalid, Graph, NodeResult, Val};
use crate::node::Node;
use tessera::attr::{Attribute, Scalar};
use tessera::exec::tensor::Tensor;
use tessera::types::{ElementClass, ElementType, TensorType};

/// `indices` (any integer type) as i64, negative ones counted from the end of a `dim`-long
/// axis.
fn wrapped(g: &mut Graph, indices: &Val, dim: u64) -> NodeResult<Val> {
    let i = g.cast(indices, ElementType::I64)?;
    let zero = g.scalar(0.0, ElementType::I64);
    let size = g.scalar(dim as f64, ElementType::I64);
    let negative = g.compare(&i, &zero, "lt")?;
    let shifted = g.binary("array.add", &i, &size)?;
    g.select(&negative, &shifted, &i)
}

/// `0, 1, ..., n - 1` as i64 along axis `axis` of a rank-`rank` tensor.
fn positions(g: &Graph, n: u64, axis: usize, rank: usize) -> Val {
    let mut shape = vec![1; rank];
    shape[axis] = n;
    g.constant(Tensor::from_numbers(
        &TensorType::new(shape, ElementType::I64),
        (0..n).map(|i| i as f64),
    ))
}

/// `sum_i parts[i] * strides[i]` (the parts broadcast together).
fn linear(g: &mut Graph, parts: &[Val], strides: &[u64]) -> NodeResult<Val> {
    let mut total: Option<Val> = None;
    for (part, &stride) in parts.iter().zip(strides) {
        let s = g.scalar(stride as f64, ElementType::I64);
        let term = g.binary("array.mul", part, &s)?;
        total = Some(match total {
            Some(t) => g.binary("array.add", &t, &term)?,
            None => term,
        });
    }
    Ok(total.unwrap_or_else(|| g.scalar(0.0, ElementType::I64)))
}

/// Row-major strides of `shape`.
fn strides(shape: &[u64]) -> Vec<u64> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// The `k` index components of `indices` (`[..., k]`), each `[...]`, wrapped against `dims`.
fn components(g: &mut Graph, indices: &Val, dims: &[u64]) -> NodeResult<Vec<Val>> {
    let shape = g.ty(indices).shape;
    let rank = shape.len();
    let outer = shape[..rank - 1].to_vec();
    let mut parts = Vec::new();
    for (i, &dim) in dims.iter().enumerate() {
        let mut start = vec![0; rank];
        start[rank - 1] = i as u64;
        let mut limit = shape.clone();
        limit[rank - 1] = i as u64 + 1;
        let part = g.slice(indices, &start, &limit, &vec![1; rank])?;
        let part = g.reshape(&part, outer.clone())?;
        parts.push(wrapped(g, &part, dim)?);
    }
    Ok(parts)
}

/// How writes landing on the same row combine.
#[derive(Clone, Copy, PartialEq)]
enum Reduction {
    None,
    Add,
    Mul,
    Max,
    Min,
}

fn reduction(node: &Node) -> NodeResult<Reduction> {
    Ok(match node.string("reduction", "none").as_str() {
        "none" => Reduction::None,
        "add" => Reduction::Add,
        "mul" => Reduction::Mul,
        "max" => Reduction::Max,
        "min" => Reduction::Min,
        other => return invalid(format!("reduction '{other}' is unknown")),
    })
}

/// `data` (`[P, R]`) with the rows `rows` (`[n]`, i64) written from `updates` (`[n, R]`).
fn scatter_rows(
    g: &mut Graph,
    data: &Val,
    rows: &Val,
    updates: &Val,
    how: Reduction,
) -> NodeResult<Val> {
    let ty = g.ty(data);
    let (p, r, n) = (ty.shape[0], ty.shape[1], g.ty(rows).shape[0]);
    let element = ty.element;
    let at = g.reshape(rows, vec![n, 1])?;
    let all = positions(g, p, 1, 2);
    let lands = g.compare(&at, &all, "eq")?;
    let lands3 = g.reshape(&lands, vec![n, p, 1])?;
    let writes = g.reshape(updates, vec![n, 1, r])?;
    let (low, high) = match element.class() {
        ElementClass::Float => (f64::NEG_INFINITY, f64::INFINITY),
        _ => {
            let (l, h) = element.int_bounds();
            (l as f64, h as f64)
        }
    };
    let (identity, reduce) = match how {
        Reduction::None | Reduction::Add => (0.0, "array.reduce_sum"),
        Reduction::Mul => (1.0, "array.reduce_prod"),
        Reduction::Max => (low, "array.reduce_max"),
        Reduction::Min => (high, "array.reduce_min"),
    };
    let identity = g.scalar(identity, element);
    let contributions = g.select(&lands3, &writes, &identity)?;
    let contributions = g.broadcast(&contributions, vec![n, p, r])?;
    let combined = g.reduce(reduce, &contributions, &[0], false)?;
    let counts = g.cast(&lands, ElementType::I32)?;
    let hits = g.reduce("array.reduce_max", &counts, &[0], false)?;
    let hits = g.reshape(&hits, vec![p, 1])?;
    let none = g.scalar(0.0, ElementType::I32);
    let hit = g.compare(&hits, &none, "gt")?;
    Ok(match how {
        Reduction::None => g.select(&hit, &combined, data)?,
        Reduction::Add => g.binary("array.add", data, &combined)?,
        Reduction::Mul => g.binary("array.mul", data, &combined)?,
        Reduction::Max | Reduction::Min => {
            let name = if how == Reduction::Max {
                "array.max"
            } else {
                "array.min"
            };
            let both = g.binary(name, data, &combined)?;
            g.select(&hit, &both, data)?
        }
    })
}

/// `data` with `updates` written at `indices` along `axis` (ScatterElements' meaning).
fn scatter_along(
    g: &mut Graph,
    data: &Val,
    indices: &Val,
    updates: &Val,
    axis: usize,
    how: Reduction,
) -> NodeResult<Val> {
    let (d_ty, i_ty) = (g.ty(data), g.ty(indices));
    let rank = d_ty.rank();
    if i_ty.rank() != rank || g.ty(updates).shape != i_ty.shape {
        return invalid(format!(
            "indices {i_ty} and updates {} must have one shape, of the rank of the data {d_ty}",
            g.ty(updates)
        ));
    }
    let along = wrapped(g, indices, d_ty.shape[axis])?;
    let parts: Vec<Val> = (0..rank)
        .map(|d| {
            if d == axis {
                along.clone()
            } else {
                positions(g, i_ty.shape[d], d, rank)
            }
        })
        .collect();
    let flat_index = linear(g, &parts, &strides(&d_ty.shape))?;
    let flat_index = g.broadcast(&flat_index, i_ty.shape.clone())?;
    let n = i_ty.num_elements().unwrap_or(0);
    let total = d_ty.num_elements().unwrap_or(0);
    let rows = g.reshape(&flat_index, vec![n])?;
    let writes = g.reshape(updates, vec![n, 1])?;
    let table = g.reshape(data, vec![total, 1])?;
    let written = scatter_rows(g, &table, &rows, &writes, how)?;
    g.reshape(&written, d_ty.shape)
}

/// `ScatterElements(data, indices, updates)` and `Scatter` (opsets 9 and 10).
pub fn scatter_elements(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let (data, indices, updates) = (input(inputs, 0)?, input(inputs, 1)?, input(inputs, 2)?);
    let axis = axis_in(node.int("axis", 0), g.ty(&data).rank())?;
    let how = reduction(node)?;
    Ok(vec![scatter_along(
        g, &data, &indices, &updates, axis, how,
    )?])
}

/// `ScatterND(data, indices [..., k], updates)`: whole slices `data[i_0, ..., i_{k-1}]`
/// written.
pub fn scatter_nd(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let (data, indices, updates) = (input(inputs, 0)?, input(inputs, 1)?, input(inputs, 2)?);
    let (d_ty, i_ty) = (g.ty(&data), g.ty(&indices));
    let k = i_ty.shape.last().copied().unwrap_or(0) as usize;
    if i_ty.rank() == 0 || k == 0 || k > d_ty.rank() {
        return invalid(format!("indices {i_ty} do not index data {d_ty}"));
    }
    let (indexed, rest) = d_ty.shape.split_at(k);
    let parts = components(g, &indices, indexed)?;
    let flat_index = linear(g, &parts, &strides(indexed))?;
    let n: u64 = i_ty.shape[..i_ty.rank() - 1].iter().product();
    let (p, r): (u64, u64) = (indexed.iter().product(), rest.iter().product());
    let rows = g.reshape(&flat_index, vec![n])?;
    let writes = g.reshape(&updates, vec![n, r])?;
    let table = g.reshape(&data, vec![p, r])?;
    let written = scatter_rows(g, &table, &rows, &writes, reduction(node)?)?;
    Ok(vec![g.reshape(&written, d_ty.shape.clone())?])
}

/// `GatherND(data, indices [..., k])` with `batch_dims` leading dimensions shared.
pub fn gather_nd(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let (data, indices) = (input(inputs, 0)?, input(inputs, 1)?);
    let (d_ty, i_ty) = (g.ty(&data), g.ty(&indices));
    let b = node.int("batch_dims", 0);
    let k = i_ty.shape.last().copied().unwrap_or(0) as usize;
    if b < 0 || i_ty.rank() == 0 || b as usize + k > d_ty.rank() || b as usize >= i_ty.rank() {
        return invalid(format!(
            "indices {i_ty} with batch_dims {b} do not index data {d_ty}"
        ));
    }
    let b = b as usize;
    if d_ty.shape[..b] != i_ty.shape[..b] {
        return invalid(format!(
            "data {d_ty} and indices {i_ty} differ in their {b} batch dimensions"
        ));
    }
    let batch = &d_ty.shape[..b];
    let indexed = &d_ty.shape[b..b + k];
    let rest = &d_ty.shape[b + k..];
    let mut parts = components(g, &indices, indexed)?;
    let outer = i_ty.rank() - 1;
    // The batch coordinates, as positions along the indices' leading dimensions.
    let mut all_strides = Vec::new();
    let p: u64 = indexed.iter().product();
    for (d, s) in strides(batch).into_iter().enumerate() {
        parts.push(positions(g, batch[d], d, outer));
        all_strides.push(s * p);
    }
    let mut local = strides(indexed);
    local.extend(all_strides);
    let flat_index = linear(g, &parts, &local)?;
    let flat_index = g.broadcast(&flat_index, i_ty.shape[..outer].to_vec())?;
    let rows: u64 = batch.iter().product::<u64>() * p;
    let mut table_shape = vec![rows];
    table_shape.extend(rest);
    let table = g.reshape(&data, table_shape)?;
    let picked = g.op(
        "array.gather",
        &[table, flat_index],
        &[("axis", Attribute::Int(0))],
        None,
    )?;
    Ok(vec![picked])
}

/// `TensorScatter(past_cache, update, write_indices?)`: each batch's update written along
/// `axis` from its write index on (`circular`: wrapping around the cache).
pub fn tensor_scatter(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let (cache, update) = (input(inputs, 0)?, input(inputs, 1)?);
    let (c_ty, u_ty) = (g.ty(&cache), g.ty(&update));
    let rank = c_ty.rank();
    let axis = axis_in(node.int("axis", -2), rank)?;
    if axis == 0 || u_ty.rank() != rank {
        return invalid(format!(
            "update {u_ty} does not fit cache {c_ty} along axis {axis}"
        ));
    }
    let batch = c_ty.shape[0];
    let starts = match inputs.get(2).cloned().flatten() {
        Some(w) => g.cast(&w, ElementType::I64)?,
        None => g.splat(
            Scalar::Int(0),
            TensorType::new(vec![batch], ElementType::I64),
        ),
    };
    let mut start_shape = vec![1; rank];
    start_shape[0] = batch;
    let starts = g.reshape(&starts, start_shape)?;
    let steps = positions(g, u_ty.shape[axis], axis, rank);
    let mut at = g.binary("array.add", &starts, &steps)?;
    match node.string("mode", "linear").as_str() {
        "linear" => {}
        "circular" => {
            let size = g.scalar(c_ty.shape[axis] as f64, ElementType::I64);
            at = g.binary("array.rem", &at, &size)?;
        }
        other => return invalid(format!("mode '{other}' is not linear or circular")),
    }
    let at = g.broadcast(&at, u_ty.shape.clone())?;
    Ok(vec![scatter_along(
        g,
        &cache,
        &at,
        &update,
        axis,
        Reduction::None,
    )?])
}
