//! The loops of a linalg op as the targets' strategies and fusion read them: their extents
//! and which reduce, how often an operand's elements are read, the results of indexing maps,
//! the divisors that keep tiles static, and the mark of loops whose iterations are
//! independent.

use crate::mlir::bridge::walk::WalkedOp;

/// The attribute stages put on an `scf.for` whose iterations are independent (fusion's and
/// tiling's loops over parallel dimensions), which a target may run in parallel.
pub const PARALLEL: &str = "tessera.parallel";

/// The loops of a structured op: extent and whether it is a reduction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loops(pub Vec<(i64, bool)>);

impl Loops {
    /// The iterations of the whole nest (the product of the extents, saturating): a measure
    /// of the op's work.
    pub fn iterations(&self) -> i64 {
        self.0
            .iter()
            .fold(1i64, |product, &(extent, _)| product.saturating_mul(extent))
    }
}

/// The linalg ops the targets' strategies size tiles for and fusion fuses (any other keeps
/// the loops upstream lowers it to).
const STRUCTURED: &[&str] = &[
    "linalg.matmul",
    "linalg.batch_matmul",
    "linalg.conv_2d_nhwc_hwcf",
    "linalg.pooling_nhwc_max",
    "linalg.pooling_nhwc_sum",
    "linalg.transpose",
    "linalg.fill",
    "linalg.copy",
    "linalg.generic",
];

/// The loops of `op`, when it is a structured op on tensors whose loop ranges follow from its
/// operand and result shapes (read through MLIR's `LinalgOp` interface), and every range is
/// static and non-empty. An op with an empty loop (a tensor with a size-0 dimension) does
/// nothing, or only writes its initial value: it is neither tiled, fused nor vectorized
/// (MLIR's tiling divides by the extent).
pub fn loops(op: &WalkedOp<'_>) -> Option<Loops> {
    if op.result_count() == 0 {
        return None;
    }
    static_loops(op)
}

/// The loops of `op`, as [`loops`] says, when it is a structured op on buffers (bufferized:
/// it writes its outputs in place and has no results).
pub fn buffer_loops(op: &WalkedOp<'_>) -> Option<Loops> {
    if op.result_count() != 0 {
        return None;
    }
    static_loops(op)
}

/// The loops of structured `op`, when every range is static and non-empty.
fn static_loops(op: &WalkedOp<'_>) -> Option<Loops> {
    if !STRUCTURED.contains(&op.name().as_str()) {
        return None;
    }
    op.linalg_loops()?
        .into_iter()
        .map(|(extent, reduction)| extent.filter(|&e| e > 0).map(|e| (e, reduction)))
        .collect::<Option<Vec<_>>>()
        .map(Loops)
}

/// How many times a `linalg.generic` reads each element of its operand `index`: the product
/// of the extents of the loops that operand's map leaves out (1 when every element is read
/// once). A producer fused into that operand is recomputed this many times per element.
pub fn reads_per_element(op: &WalkedOp<'_>, index: usize) -> Option<i64> {
    if op.name() != "linalg.generic" {
        return None;
    }
    let loops = loops(op)?;
    if index >= op.operand_count() {
        return None;
    }
    Some(
        loops
            .0
            .iter()
            .enumerate()
            .filter(|&(d, _)| !op.operand_uses_loop(index, d))
            .map(|(_, &(extent, _))| extent)
            .product(),
    )
}

/// The result expressions of each map in the text of an `indexing_maps` attribute
/// (`[affine_map<(d0, d1) -> (d0, 0)>, ...]` gives `[["d0", "0"], ...]`).
pub fn map_results(text: &str) -> Vec<Vec<String>> {
    text.split("affine_map<")
        .skip(1)
        .filter_map(|map| {
            let results = map.split_once("->")?.1;
            let inner = results.trim().strip_prefix('(')?;
            let inner = &inner[..inner.rfind(')')?];
            Some(
                inner
                    .split(',')
                    .map(|e| e.trim().to_string())
                    .filter(|e| !e.is_empty())
                    .collect(),
            )
        })
        .collect()
}

/// The largest divisor of `extent` not above `target` (1 for an empty extent).
pub fn divisor_at_most(extent: i64, target: i64) -> i64 {
    (1..=target.min(extent).max(1))
        .rev()
        .find(|d| extent % d == 0)
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_indexing_map_results() {
        let maps = "[affine_map<(d0, d1, d2) -> (d0, 0, d2)>, affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d1)>]";
        assert_eq!(
            map_results(maps),
            [vec!["d0", "0", "d2"], vec![], vec!["d1"]]
        );
    }

    #[test]
    fn divisors_keep_tiles_static() {
        assert_eq!(divisor_at_most(64, 16), 16);
        assert_eq!(divisor_at_most(10, 16), 10);
        assert_eq!(divisor_at_most(784, 64), 56);
        assert_eq!(divisor_at_most(13, 8), 1);
        assert_eq!(divisor_at_most(0, 8), 1);
    }
}
