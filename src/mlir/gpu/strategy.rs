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
//! taking an equal share. Matrix products ([`CONTRACTIONS`]) are staged instead: a block tile
//! of up to 64 x 64 outputs, its reduction walked in steps of up to 32 whose slices of both
//! operands the whole block copies into shared memory (coalesced: consecutive threads take
//! consecutive elements), and a register tile of up to 4 x 4 outputs per thread read from
//! there ([`staging`]). The stage reads the sizes from `tessera.gpu_block_tiles` and
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

/// The named matrix products whose operands are staged through shared memory: their loops are
/// (batch,) rows, columns, reduction, and their operands' tiles are contiguous rows.
pub const CONTRACTIONS: [&str; 2] = ["linalg.matmul", "linalg.batch_matmul"];

/// The named ops whose multiply-adds become fused multiply-adds on the GPU (`fastmath
/// <contract>` on their body's `mulf` and `addf`): one rounding per step instead of two, as
/// the CPU's vector FMAs do, at twice the throughput (NVPTX keeps an uncontracted `mul.rn`
/// and `add.rn` apart).
pub const MULTIPLY_ADDS: [&str; 3] = [
    "linalg.matmul",
    "linalg.batch_matmul",
    "linalg.conv_2d_nhwc_hwcf",
];

/// The largest block tile of a staged contraction along rows and columns: 64 x 64 outputs
/// over 256 threads is a 4 x 4 register tile each, and on a 1024-square product still 256
/// blocks, about two per multiprocessor of the largest chips.
const CONTRACTION_BLOCK: i64 = 64;

/// The longest step along a staged contraction's reduction: two 64 x 32 fp32 slices are
/// 16 KiB of shared memory, a third of what a block has, so that several blocks share a
/// multiprocessor; each step reads its slices once from global memory for 64 x 64 x 32 FMAs.
const REDUCTION_STEP: i64 = 32;

/// The most accumulators a thread keeps for its register tile (registers, not spills).
const REGISTER_OUTPUTS: i64 = 16;

/// The static shared memory every chip gives a block (`tessera-promote-block-buffers`
/// enforces it).
pub const SHARED_BYTES: i64 = 48 * 1024;

/// `bytes` rounded up to the 16 that `tessera-promote-block-buffers` aligns each buffer to.
pub fn aligned(bytes: i64) -> i64 {
    (bytes + 15) / 16 * 16
}

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

/// The block tiles of a staged contraction that stands alone: one matrix of the batch, up to
/// [`CONTRACTION_BLOCK`] rows and columns, the reduction whole (its steps are [`staging`]'s).
pub fn contraction_block_tiles(loops: &Loops) -> Vec<i64> {
    let n = loops.0.len();
    let mut sizes = vec![1; n];
    sizes[n - 1] = 0;
    for d in [n - 3, n - 2] {
        sizes[d] = divisor_at_most(loops.0[d].0, CONTRACTION_BLOCK);
    }
    sizes
}

/// How a contraction's block tile is staged through shared memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Staging {
    /// The step along the reduction (of a product: the tile of its last loop; of a
    /// convolution: of its input channels).
    pub reduction_step: i64,
    /// The tiles of the loops walked in steps around the staged op (`tile_using_for`): a
    /// product's reduction; a convolution's batch, window rows, window columns and channels.
    pub steps: Vec<i64>,
    /// Each thread's register tile: one size per loop, the reduction 0.
    pub registers: Vec<i64>,
    /// The loops of the slice of the left operand one step copies: (batch,) rows, step.
    pub left: Loops,
    /// The loops of the slice of the right operand one step copies: (batch,) step, columns.
    pub right: Loops,
}

impl Staging {
    /// The shared memory its two slices take, with `bytes` per element.
    pub fn shared_bytes(&self, bytes: i64) -> i64 {
        let elements = |loops: &Loops| loops.0.iter().map(|&(e, _)| e).product::<i64>();
        aligned(elements(&self.left) * bytes) + aligned(elements(&self.right) * bytes)
    }
}

/// The staging of a contraction (loops (batch,) rows, columns, reduction) whose block tile is
/// `tile`, with operands of `bytes` per element, in a block whose other buffers take
/// `shared_used` bytes of shared memory. `None` when it does not pay or fit: a batch of more
/// than one matrix per block, fewer than 64 outputs or 8 reduction steps (the copies would
/// cost more than they save), or no step of at least 4 that fits the shared memory left.
pub fn staging(tile: &Loops, bytes: i64, shared_used: i64) -> Option<Staging> {
    let n = tile.0.len();
    if !(3..=4).contains(&n) || tile.0[..n - 3].iter().any(|&(e, _)| e != 1) {
        return None;
    }
    let (rows, columns, depth) = (tile.0[n - 3].0, tile.0[n - 2].0, tile.0[n - 1].0);
    if rows * columns < 64 || depth < 8 {
        return None;
    }
    let mut step = divisor_at_most(depth, REDUCTION_STEP);
    // Each slice is laid out at a multiple of 16 bytes.
    while aligned(rows * step * bytes) + aligned(step * columns * bytes) + shared_used
        > SHARED_BYTES
    {
        step = divisor_at_most(depth, step / 2);
        if step < 4 {
            return None;
        }
    }
    let (tile_rows, tile_columns) = register_tile(rows, columns, 1);
    let mut registers = vec![0; n];
    registers[n - 3] = tile_rows;
    registers[n - 2] = tile_columns;
    let batch: Vec<(i64, bool)> = tile.0[..n - 3].to_vec();
    let slice = |a: i64, b: i64| {
        let mut loops = batch.clone();
        loops.extend([(a, false), (b, false)]);
        Loops(loops)
    };
    let mut steps = vec![0; n];
    steps[n - 1] = step;
    Some(Staging {
        reduction_step: step,
        steps,
        registers,
        left: slice(rows, step),
        right: slice(step, columns),
    })
}

/// The convolutions staged through shared memory like products (NHWC input, HWCF filter,
/// unit strides: a step's input slice is a plain window of the block's output pixels).
pub const CONVOLUTIONS: [&str; 1] = ["linalg.conv_2d_nhwc_hwcf"];

/// The block tiles of a staged convolution that stands alone (loops n, oh, ow, f, kh, kw, c):
/// up to 8 x 8 output pixels by 32 filters, the batch whole (walked in steps inside the
/// block, since the grid has only three dimensions), the window and channels whole.
pub fn convolution_block_tiles(loops: &Loops) -> Vec<i64> {
    let extent = |d: usize| loops.0[d].0;
    vec![
        0,
        divisor_at_most(extent(1), 8),
        divisor_at_most(extent(2), 8),
        divisor_at_most(extent(3), 32),
        0,
        0,
        0,
    ]
}

/// The staging of a convolution (loops n, oh, ow, f, kh, kw, c, unit strides) whose block
/// tile is `tile`: one image, one window position and a step of up to 32 input channels at a
/// time, the step's input window (the tile's pixels x channels) and filter slice (channels x
/// filters) copied into shared memory; each thread a register tile of pixels of a row by
/// filters ([`register_tile`]). `None` when it does not pay (fewer than 8 input channels, or 64 outputs) or fit.
pub fn convolution_staging(tile: &Loops, bytes: i64, shared_used: i64) -> Option<Staging> {
    if tile.0.len() != 7 {
        return None;
    }
    let extent = |d: usize| tile.0[d].0;
    let (rows, columns, filters, channels) = (extent(1), extent(2), extent(3), extent(6));
    if channels < 8 || rows * columns * filters < 64 {
        return None;
    }
    let mut step = divisor_at_most(channels, REDUCTION_STEP);
    while aligned(rows * columns * step * bytes) + aligned(step * filters * bytes) + shared_used
        > SHARED_BYTES
    {
        step = divisor_at_most(channels, step / 2);
        if step < 4 {
            return None;
        }
    }
    let (tile_columns, tile_filters) = register_tile(columns, filters, rows);
    Some(Staging {
        reduction_step: step,
        steps: vec![1, 0, 0, 0, 1, 1, step],
        registers: vec![0, 1, tile_columns, tile_filters, 0, 0, 0],
        left: Loops(vec![
            (1, false),
            (rows, false),
            (columns, false),
            (step, false),
        ]),
        right: Loops(vec![
            (1, false),
            (1, false),
            (step, false),
            (filters, false),
        ]),
    })
}

/// Each thread's register tile of a `rows` x `columns` block tile, itself repeated `outer`
/// times over threads (a convolution's pixel rows): divisors of both of at most
/// [`REGISTER_OUTPUTS`] outputs that use as many of the block's threads as there are (no
/// more), then the squarest (a t x t tile reads 2t operands from shared memory for t^2
/// FMAs), then the wider along columns (the innermost loop, read as vectors); when even the
/// largest leaves more than a block's threads, the largest.
fn register_tile(rows: i64, columns: i64, outer: i64) -> (i64, i64) {
    let divisors = |e: i64| (1..=e.min(REGISTER_OUTPUTS)).filter(move |d| e % d == 0);
    divisors(rows)
        .flat_map(|r| divisors(columns).map(move |c| (r, c)))
        .filter(|&(r, c)| r * c <= REGISTER_OUTPUTS)
        .max_by_key(|&(r, c)| {
            let threads = outer * (rows / r) * (columns / c);
            let fits = threads <= BLOCK_THREADS;
            (fits, if fits { threads } else { -threads }, -(r + c), c)
        })
        .unwrap_or((1, 1))
}

/// The share of `loops` each of up to `budget` threads copies, spread along up to three of
/// its innermost loops (consecutive threads on consecutive elements).
pub fn copy_tiles(loops: &Loops, budget: i64) -> Vec<i64> {
    tiles(loops, budget, false, DIMENSIONS)
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
    fn contractions_stage_64_square_tiles_in_steps_of_32() {
        let product = loops(&[(1024, false), (1024, false), (1024, true)]);
        let blocks = contraction_block_tiles(&product);
        assert_eq!(blocks, [64, 64, 0]);
        let tile = loops(&[(64, false), (64, false), (1024, true)]);
        let staged = staging(&tile, 4, 0).unwrap();
        assert_eq!(staged.reduction_step, 32);
        assert_eq!(staged.registers, [4, 4, 0]);
        assert_eq!(threads(&tile, &staged.registers), [16, 16]);
        assert_eq!(staged.left, loops(&[(64, false), (32, false)]));
        assert_eq!(staged.right, loops(&[(32, false), (64, false)]));
        // Each of 256 threads copies 8 elements of a slice, consecutive threads along a row.
        assert_eq!(copy_tiles(&staged.left, 256), [8, 1]);
        assert_eq!(copy_tiles(&staged.right, 256), [8, 1]);
        // A batched product: one matrix per block.
        let batched = loops(&[(8, false), (512, false), (64, false), (64, true)]);
        assert_eq!(contraction_block_tiles(&batched), [1, 64, 64, 0]);
    }

    #[test]
    fn staging_fits_the_shared_memory_left_or_gives_up() {
        let tile = loops(&[(64, false), (64, false), (512, true)]);
        // 40 KiB used by other buffers of the kernel: 8 KiB left, a step of 16 (two slices
        // of 64 x 16 x 4 bytes).
        let staged = staging(&tile, 4, 40 * 1024).unwrap();
        assert_eq!(staged.reduction_step, 16);
        assert!(staging(&tile, 4, 47 * 1024).is_none());
        // Too small to pay: 4 x 4 outputs, or a reduction of 4.
        assert!(staging(&loops(&[(4, false), (4, false), (512, true)]), 4, 0).is_none());
        assert!(staging(&loops(&[(64, false), (64, false), (4, true)]), 4, 0).is_none());
        // Two matrices of a batch in one block tile: not staged.
        assert!(staging(
            &loops(&[(2, false), (64, false), (64, false), (64, true)]),
            4,
            0
        )
        .is_none());
    }

    #[test]
    fn convolutions_stage_windows_of_8_by_8_pixels_and_32_channels() {
        // A ResNet-like 3 x 3 convolution: 56 x 56 pixels, 64 channels in and out.
        let conv = loops(&[
            (1, false),
            (56, false),
            (56, false),
            (64, false),
            (3, true),
            (3, true),
            (64, true),
        ]);
        let blocks = convolution_block_tiles(&conv);
        assert_eq!(blocks, [0, 8, 8, 32, 0, 0, 0]);
        let tile = loops(&[
            (1, false),
            (8, false),
            (8, false),
            (32, false),
            (3, true),
            (3, true),
            (64, true),
        ]);
        let staged = convolution_staging(&tile, 4, 0).unwrap();
        assert_eq!(staged.steps, [1, 0, 0, 0, 1, 1, 32]);
        // 8 x 4 x 8 = 256 threads of 2 pixels x 4 filters.
        assert_eq!(staged.registers, [0, 1, 2, 4, 0, 0, 0]);
        assert_eq!(threads(&tile, &staged.registers), [8, 4, 8]);
        assert_eq!(staged.shared_bytes(4), (8 * 8 * 32 + 32 * 32) * 4);
        // One input channel (W6's first convolution): nothing to reuse, not staged.
        let narrow = loops(&[
            (32, false),
            (8, false),
            (8, false),
            (16, false),
            (3, true),
            (3, true),
            (1, true),
        ]);
        assert!(convolution_staging(&narrow, 4, 0).is_none());
    }

    #[test]
    fn register_tiles_fill_the_block_squarest_first() {
        assert_eq!(register_tile(64, 64, 1), (4, 4));
        assert_eq!(register_tile(16, 64, 1), (2, 2));
        // 10 columns (the seed MLP's output): 2 x 2, 160 threads.
        assert_eq!(register_tile(64, 10, 1), (2, 2));
        // More outputs than 256 threads x 16 registers: the largest tile.
        assert_eq!(register_tile(128, 128, 1), (4, 4));
        // 8 rows of 8 pixels x 32 filters: 2 x 4 over 256 threads, the wider tile along the
        // filters; 6 rows of 6 x 32: 3 x 2 over 192 threads, more than 2 x 4 would use.
        assert_eq!(register_tile(8, 32, 8), (2, 4));
        assert_eq!(register_tile(6, 32, 6), (3, 2));
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
