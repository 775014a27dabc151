//! Matmuls split along their rows so that most rows take the vector unit's whole register
//! tiles (`matmul_row_split`: AVX2's 6 rows where M is no multiple of 6): whole and within
//! fused tiles, with B passed in (its panels packed once and read by both parts) or constant,
//! fused and unfused, on one thread and three, the JIT's results agree with the reference
//! interpreter (lit-tests/tessera-tile/row_split.mlir checks where the splits fall).

use crate::common::{compiled_code_lock, dense_disagreements};

/// The cases: (rows, depth, columns, constant weights). 256 rows: 252 + 4 unfused, each fused
/// tile of 16 rows 12 + 4; 100 rows: 96 + 4; 50 rows: 48 + 2.
const CASES: [(usize, usize, usize, bool); 3] = [
    (256, 64, 32, false),
    (100, 48, 48, false),
    (50, 40, 16, true),
];

#[test]
fn split_matmuls_match_the_reference_interpreter() {
    let _exclusive = compiled_code_lock();
    let failures: Vec<String> = CASES
        .iter()
        .flat_map(|&(rows, depth, columns, constant)| {
            dense_disagreements(rows, depth, columns, constant, &["avx2"])
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
