//! The GPU strategy: how each kernel's work is split over blocks and threads. Every op with
//! parallel loops is tiled twice: its block tile (what one block computes) and, inside it, one
//! tile per thread. Both go along the innermost parallel loops (at most three: the grid's and
//! a block's x, y and z), x on the innermost, so that neighbouring threads touch neighbouring
//! elements (coalesced loads and stores); loops of extent 1 take no dimension; loops beyond
//! three, and reductions, stay whole, run in sequence by each thread. Every size divides its
//! extent, so tiles stay static and need no bounds checks.
//!
//! The choice: a block is [`BLOCK_THREADS`] threads, one element of the block tile each (a
//! row of up to 256 along the innermost loop, then rows of the next loops); inside a fusion
//! group, whose tiles fusion chose, each op spreads its tile over as many threads, each thread
//! taking an equal share. Reductions run in sequence in each thread, and contractions read
//! global memory directly: correct everywhere, the base that block-wide reductions and
//! shared-memory tiles improve on. The stage reads the sizes from `tessera.gpu_block_tiles` and
//! `tessera.gpu_thread_tiles` attributes, which the strategy writes where none is written: a
//! test or a user can pin them.

use crate::mlir::pipeline::loop_nest::{divisor_at_most, Loops};

/// The block tiles the strategy writes and `tessera-map-to-gpu` reads (one size per loop, 0
/// for a loop left whole).
pub const BLOCK_TILES: &str = "tessera.gpu_block_tiles";

/// The thread tiles (within a block tile) the strategy writes and `tessera-map-to-gpu` reads.
pub const THREAD_TILES: &str = "tessera.gpu_thread_tiles";

/// Threads per block: enough warps (8) to hide memory latency with a few blocks per
/// multiprocessor, few enough that a block's registers never limit occupancy.
pub const BLOCK_THREADS: i64 = 256;

/// The most blocks along the grid's y and z (x takes up to 2^31 - 1).
const GRID_YZ: i64 = 65_535;

/// The grid has three dimensions, and so has a block.
const DIMENSIONS: usize = 3;

/// The loops tiles are spread along: the innermost parallel loops of extent above 1, at most
/// `dimensions`, innermost first; when there is none (every parallel loop has extent 1), the
/// innermost parallel loop, so that one worker takes the op; none for an op without parallel
/// loops.
fn distributed(loops: &Loops, dimensions: usize) -> Vec<usize> {
    let parallel = (0..loops.0.len()).rev().filter(|&d| !loops.0[d].1);
    let wide: Vec<usize> = parallel
        .clone()
        .filter(|&d| loops.0[d].0 > 1)
        .take(dimensions)
        .collect();
    match wide.is_empty() {
        true => parallel.take(1).collect(),
        false => wide,
    }
}

/// Tiles of `loops` that give each of up to `budget` workers one tile, along up to
/// `dimensions` of [`distributed`]'s loops; the others stay whole (0). With `whole_tiles`, a
/// worker's tile is one element along those loops and the tile is what `budget` workers
/// cover (a block's); otherwise the tile is a worker's equal share of the whole extent (a
/// thread's), and a loop with one worker stays whole unless it is the only one.
fn tiles(loops: &Loops, budget: i64, whole_tiles: bool, dimensions: usize) -> Vec<i64> {
    let mut sizes = vec![0; loops.0.len()];
    let mut left = budget;
    let along = distributed(loops, dimensions);
    let only = along.len() == 1;
    for d in along {
        let extent = loops.0[d].0;
        let workers = divisor_at_most(extent, left.max(1));
        left /= workers;
        sizes[d] = match (whole_tiles, workers) {
            (true, _) => workers,
            (false, 1) if !only => 0,
            (false, _) => extent / workers,
        };
    }
    sizes
}

/// The smallest divisor of `extent` not below `least`.
fn divisor_at_least(extent: i64, least: i64) -> i64 {
    (least.max(1)..=extent.max(1))
        .find(|d| extent % d == 0)
        .unwrap_or(extent.max(1))
}

/// The block tiles of an op with `loops` that stands alone (not in a fusion group): up to
/// [`BLOCK_THREADS`] elements, one per thread; a grid dimension past x never exceeds what
/// the hardware launches (larger tiles there instead).
pub fn block_tiles(loops: &Loops) -> Vec<i64> {
    let mut sizes = tiles(loops, BLOCK_THREADS, true, DIMENSIONS);
    for (rank, d) in distributed(loops, DIMENSIONS).into_iter().enumerate() {
        let extent = loops.0[d].0;
        if rank > 0 && extent / sizes[d] > GRID_YZ {
            sizes[d] = divisor_at_least(extent, (extent + GRID_YZ - 1) / GRID_YZ);
        }
    }
    sizes
}

/// The thread tiles of an op whose block tile (its loops inside the block) is `loops`: its
/// elements spread over at most [`BLOCK_THREADS`] threads along up to `dimensions` loops (3,
/// or 1 where the ops of a kernel would together need more threads than a block has).
pub fn thread_tiles(loops: &Loops, dimensions: usize) -> Vec<i64> {
    tiles(loops, BLOCK_THREADS, false, dimensions.min(DIMENSIONS))
}

/// The threads along x, y and z that `sizes` (tiles of `loops`) give: for each tiled loop, its
/// extent over its tile, the innermost tiled loop on x.
pub fn threads(loops: &Loops, sizes: &[i64]) -> Vec<i64> {
    loops
        .0
        .iter()
        .zip(sizes)
        .rev()
        .filter(|&(_, &size)| size > 0)
        .map(|(&(extent, _), &size)| (extent + size - 1) / size)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loops(extents: &[(i64, bool)]) -> Loops {
        Loops(extents.to_vec())
    }

    #[test]
    fn blocks_hold_rows_of_up_to_256_elements() {
        // Elementwise 128 x 256: a row of 256 per block, 128 blocks along y.
        assert_eq!(block_tiles(&loops(&[(128, false), (256, false)])), [1, 256]);
        // 128 x 64: four rows of 64.
        assert_eq!(block_tiles(&loops(&[(128, false), (64, false)])), [4, 64]);
        // A matmul 32 x 10 (K = 64): 16 rows of 10; the reduction stays whole.
        assert_eq!(
            block_tiles(&loops(&[(32, false), (10, false), (64, true)])),
            [16, 10, 0]
        );
        // A unit loop takes no grid dimension.
        assert_eq!(
            block_tiles(&loops(&[(6, false), (1, false), (512, false)])),
            [1, 0, 256]
        );
    }

    #[test]
    fn grid_y_stays_within_what_the_hardware_launches() {
        // 2^20 rows of 256: 2^20 blocks along y are too many; 32 rows per block instead.
        let sizes = block_tiles(&loops(&[(1 << 20, false), (256, false)]));
        assert_eq!(sizes, [32, 256]);
        assert!((1 << 20) / sizes[0] <= GRID_YZ);
    }

    #[test]
    fn threads_share_a_tile_innermost_first() {
        // A fused row tile of 8 x 256: 256 threads along the row, each all 8 rows of a column.
        let tile = loops(&[(8, false), (256, false)]);
        assert_eq!(thread_tiles(&tile, 3), [0, 1]);
        assert_eq!(threads(&tile, &thread_tiles(&tile, 3)), [256]);
        // A row mean over the tile (8 x 1, reducing 256): a thread per row.
        let mean = loops(&[(8, false), (1, false), (256, true)]);
        assert_eq!(thread_tiles(&mean, 3), [1, 0, 0]);
        assert_eq!(threads(&mean, &thread_tiles(&mean, 3)), [8]);
        // 16 x 64 (an epilogue tile): 64 along x, 4 along y, 4 rows each.
        let epilogue = loops(&[(16, false), (64, false)]);
        assert_eq!(thread_tiles(&epilogue, 3), [4, 1]);
        assert_eq!(threads(&epilogue, &thread_tiles(&epilogue, 3)), [64, 4]);
        assert_eq!(thread_tiles(&epilogue, 1), [0, 1]);
        // A tile of one element (1 x 1) still goes to one thread, not to all of them.
        let unit = loops(&[(1, false), (1, false)]);
        assert_eq!(thread_tiles(&unit, 3), [0, 1]);
        assert_eq!(threads(&unit, &thread_tiles(&unit, 3)), [1]);
    }
}
