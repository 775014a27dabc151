//! Affine maps for linalg indexing maps, built through the MLIR C API (melior 0.22 has no
//! constructor for them).

use melior::ir::Attribute;
use melior::Context;

/// One result of an indexing map: a loop dimension or the constant 0 (a broadcast size-1 dim).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapExpr {
    /// Loop dimension `d<i>`.
    Dim(usize),
    /// The constant `0`.
    Zero,
}

/// The attribute `affine_map<(d0, ..., d<dims-1>) -> (results)>`.
pub fn affine_map_attr<'c>(
    context: &'c Context,
    dims: usize,
    results: &[MapExpr],
) -> Attribute<'c> {
    let raw_context = context.to_raw();
    // SAFETY: the context is alive for 'c; the expressions are created in it and passed to
    // mlirAffineMapGet together with their exact count; the map attribute is owned by the
    // context, which outlives the returned Attribute<'c>.
    unsafe {
        let mut exprs: Vec<mlir_sys::MlirAffineExpr> = results
            .iter()
            .map(|expr| match *expr {
                MapExpr::Dim(d) => mlir_sys::mlirAffineDimExprGet(raw_context, d as isize),
                MapExpr::Zero => mlir_sys::mlirAffineConstantExprGet(raw_context, 0),
            })
            .collect();
        let map = mlir_sys::mlirAffineMapGet(
            raw_context,
            dims as isize,
            0,
            exprs.len() as isize,
            exprs.as_mut_ptr(),
        );
        Attribute::from_raw(mlir_sys::mlirAffineMapAttrGet(map))
    }
}

/// The map of an operand of `shape` read in a loop nest of `rank` dimensions under numpy
/// broadcasting: aligned on the right; a size-1 dimension against a larger loop extent reads
/// index 0.
pub fn broadcast_map(shape: &[u64], loop_shape: &[u64]) -> Vec<MapExpr> {
    let offset = loop_shape.len() - shape.len();
    shape
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            if d == 1 && loop_shape[i + offset] != 1 {
                MapExpr::Zero
            } else {
                MapExpr::Dim(i + offset)
            }
        })
        .collect()
}

/// The identity map's results for `rank` loops.
pub fn identity(rank: usize) -> Vec<MapExpr> {
    (0..rank).map(MapExpr::Dim).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mlir::MlirContext;

    #[test]
    fn builds_broadcast_maps() {
        assert_eq!(
            broadcast_map(&[4, 1], &[3, 4, 5]),
            [MapExpr::Dim(1), MapExpr::Zero]
        );
        assert_eq!(broadcast_map(&[], &[3]), []);
        let context = MlirContext::new();
        let map = affine_map_attr(context.context(), 3, &[MapExpr::Dim(1), MapExpr::Zero]);
        assert_eq!(map.to_string(), "affine_map<(d0, d1, d2) -> (d1, 0)>");
    }
}
