//! Matmuls with a narrow N computed as dot products with K in the vector lanes
//! (`tessera-lane-dot-products`): for both vector units' register tiles, fused and unfused,
//! on one thread and three, with K no multiple of the lanes (a masked last step), rows no
//! multiple of the register tile's (a tail of single rows), N from 1 to 12, and B passed in
//! (transposed as the call runs) or constant (transposed at compile time), the JIT's results
//! agree with the reference interpreter (lit-tests/tessera-tile/lane_dot_products.tsr checks
//! that such kernels get the rewrite).

use crate::common::{compiled_code_lock, dense_disagreements};

/// The cases: (rows, depth, columns, constant weights).
const CASES: [(usize, usize, usize, bool); 6] = [
    (64, 784, 10, false),
    (37, 100, 10, false),
    (40, 72, 12, false),
    (33, 64, 1, false),
    (18, 50, 5, false),
    (5, 40, 3, true),
];

#[test]
fn narrow_matmuls_match_the_reference_interpreter() {
    let _exclusive = compiled_code_lock();
    let failures: Vec<String> = CASES
        .iter()
        .flat_map(|&(rows, depth, columns, constant)| {
            dense_disagreements(rows, depth, columns, constant, &["avx2", "avx512"])
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
