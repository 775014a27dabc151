//! The strategy: chooses two levels of tile sizes for each linalg op from its kind and loop
//! extents: cache tiles (`tessera.tile_sizes`) and, inside them, register tiles
//! (`tessera.vector_sizes`) that vectorization turns into vector operations (one size per
//! loop, 0 = untiled). Stages only read the attributes, so a test or a user can pin sizes by
//! writing them.
//!
//! The choice: every size is the largest divisor of its extent not above a target, so tiles
//! stay static (vectorizable, no remainder loops). Cache tiles: 16 rows by 64 columns of the
//! parallel loops (columns in multiples of 8 where the extent is one); matmul also blocks K
//! by 256, takes its rows whole where A or the output fits the L2, and orders its loops so
//! that each block of B serves all rows (`cache_order`, `register_order`). Register tiles: one
//! row of 16 lanes for elementwise ops, whole rows for reductions, for matmul an outer-product
//! accumulator tile with K stepped by 1 sized for the target's vector registers (two registers
//! wide, up to 6 rows with AVX2's 16 registers of 8 lanes and 14 with AVX-512's 32 of 16, the
//! rows dividing the cache tile's: `matmul_rows`; where those are short, the matmul's rows are
//! split into a part of whole tiles and a rest: `matmul_row_split`), and the same kind of
//! tile of output pixels by output channels for a convolution, its input channels stepped
//! by 1. Along the vector lanes a power of two is preferred where it fills half a register or
//! takes no more register operations (`register_width`). Tuning lives here and only here.

use crate::mlir::pipeline::loop_nest::{divisor_at_most, Loops};

/// The vector unit register tiles are sized for (from the target model: `CpuModel`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VectorUnit {
    /// f32 lanes per vector register.
    pub lanes: i64,
    /// Vector registers.
    pub registers: i64,
    /// The independent accumulators its FMA pipes need in flight (pipes times latency,
    /// `CpuModel::accumulators_in_flight`).
    pub in_flight: i64,
}

impl VectorUnit {
    /// AVX2: 16 registers of 8 f32 lanes; 10 accumulators in flight, as Haswell's two pipes
    /// of latency 5 need (the most any AVX2 CPU the target model knows needs).
    pub const AVX2: VectorUnit = VectorUnit {
        lanes: 8,
        registers: 16,
        in_flight: 10,
    };

    /// AVX-512: 32 registers of 16 f32 lanes; 8 accumulators in flight (two pipes of
    /// latency 4).
    pub const AVX512: VectorUnit = VectorUnit {
        lanes: 16,
        registers: 32,
        in_flight: 8,
    };

    /// A matmul's accumulator tile, (most rows, columns): two registers wide, so that each
    /// broadcast of A feeds two FMAs, with as many rows as the registers hold beside B's two
    /// vectors and one broadcast: AVX2 6 rows (12 accumulators), AVX-512 14 (28). That is at
    /// least the accumulators every FMA pipe needs in flight on every CPU the target model
    /// knows (`CpuModel::accumulators_in_flight`: 10 on Haswell, 8 on Sapphire Rapids and
    /// Zen 5), so the tile can keep the pipes busy where the rows divide its cache tile's
    /// ([`matmul_rows`]). Rows of 4 with AVX2 and 8 with AVX-512 were the fixed choice before
    /// (W3 from 38 to 98 GFLOP/s on an AVX-512 core with one FMA pipe, against one row); more
    /// rows load B's vectors once for more FMAs, as the 14-pixel tiles of 1x1 convolutions
    /// did (`convolution_tile`).
    pub fn matmul_tile(&self) -> (i64, i64) {
        let column_registers = 2;
        let rows = (self.registers - column_registers - 1) / column_registers;
        (rows, column_registers * self.lanes)
    }
}

/// The rows of a matmul's register tile within a cache tile (or untiled extent) of `span`
/// rows, for `unit`: the most that divide `span`, at most the tile's
/// ([`VectorUnit::matmul_tile`]). With AVX-512, 16 rows take 8 (16 accumulators), 12 take 12
/// and 14 take 14; with AVX2, 12 rows take 6 (12 accumulators: both pipes busy on Haswell)
/// and 16 take 4 (8 accumulators, no divisor of 16 between 5 and 6: its FMA pipes wait a fifth
/// of the time; cache tiles of rows in multiples of 6 where the rows allow are the next step).
pub fn matmul_rows(span: i64, unit: VectorUnit) -> i64 {
    let (most, _) = unit.matmul_tile();
    divisor_at_most(span, most)
}

/// Whether the register tiles of a matmul over `span` rows are short of the unit's whole tile
/// where it counts: the rows that divide `span` give no more accumulators than the FMA pipes
/// need in flight, so the pipes idle whenever a load is late. With AVX2, 16 rows take 4 (8
/// accumulators, where Zen 3 needs 8 and Haswell 10): W3 ran at 83% of the FMA peak on Zen 3
/// in tiles of 4 rows, 88% in tiles of 6 (1032 rows, `tessera-bench`). With AVX-512, 16 rows
/// take 8 (16 accumulators, twice what its pipes need): nothing to gain.
fn short_register_rows(span: i64, unit: VectorUnit) -> bool {
    let (most, columns) = unit.matmul_tile();
    let rows = matmul_rows(span, unit);
    rows < most && rows * (columns / unit.lanes) <= unit.in_flight
}

/// The fewest register tiles of whole rows the whole matrix A of a matmul must hold for
/// [`matmul_row_split`] to split the matmul (or each of its tiles): a split doubles the
/// kernel's code, which a product of a few rows (the GPT block's 14) does not earn back.
const MIN_WHOLE_ROW_TILES: i64 = 8;

/// Where to split f32 matmul `loops` (`[M, N, K]`, N a multiple of the unit's tile columns,
/// a tile of a matrix A of `a_rows` rows, or the whole of it) along M so that its first part
/// takes the unit's whole register tiles: at the largest multiple of their rows, where M is
/// not one and the rows dividing M are short ([`short_register_rows`]), the first part at
/// least two tiles and A at least [`MIN_WHOLE_ROW_TILES`]. Each part is then a static op of
/// its own, sized and tiled like any other. With AVX2, W3's 1024 rows become 1020 in tiles of
/// 6 and 4 in a tile of 4 (83 -> 88% of the FMA peak on Zen 3), and the 16-row tiles W2's
/// dense layers are fused in 12 and 4 (11.9 -> 10.8 ms).
pub fn matmul_row_split(loops: &Loops, a_rows: i64, unit: VectorUnit) -> Option<i64> {
    let &[(rows, false), (columns, false), (_, true)] = loops.0.as_slice() else {
        return None;
    };
    let (most, tile_columns) = unit.matmul_tile();
    let head = rows - rows % most;
    (columns % tile_columns == 0
        && rows % most != 0
        && head >= 2 * most
        && a_rows >= MIN_WHOLE_ROW_TILES * most
        && short_register_rows(rows, unit))
    .then_some(head)
}

/// Makes the cache tile rows of matmul `loops` (`tiles[0]`, where tiled) a multiple of the
/// unit's register tile rows where M is one and the rows the cache tile has now are short by
/// the split's own measure ([`short_register_rows`]; the first part of a split by
/// [`matmul_row_split`]), so AVX-512 keeps its choices: the most such rows up to the
/// strategy's 16 rounded up to whole register tiles. With AVX2 (up to 18), 1020 rows took
/// cache tiles of 15 and register tiles of 5, now 12 and 6; 126 rows 14 and 2, now 18 and 6.
pub fn whole_register_rows(tiles: &mut [i64], loops: &Loops, unit: VectorUnit) {
    let &[(rows, false), _, _] = loops.0.as_slice() else {
        return;
    };
    let (most, _) = unit.matmul_tile();
    if tiles[0] != 0 && rows % most == 0 && short_register_rows(tiles[0], unit) {
        tiles[0] = most * divisor_at_most(rows / most, (CACHE_ROWS + most - 1) / most);
    }
}

/// The most rows a register tile of dot products takes ([`lane_dot_rows`]): with one output
/// column, 8 rows are the 8 accumulators two FMA pipes of latency 4 keep in flight.
const MAX_LANE_DOT_ROWS: i64 = 8;

/// The rows of A a matmul computed with K in the lanes must have, per row of its register
/// tile, when its B is transposed as the call runs (not a constant): the transpose reads and
/// writes B once, each register tile of rows then reads all of it.
pub const MIN_LANE_DOT_READERS: i64 = MIN_PANEL_READERS;

/// The rows of the register tile with which matmul `loops` (`[M, N, K]`) is computed as dot
/// products with K in the vector lanes (`tessera-lane-dot-products`), when that beats N in
/// the lanes: N at most 16 and filling at most three quarters of the lanes it would take
/// (the seed MLP's N = 10: 10 of 16 lanes with AVX-512 and of 2 x 8 with AVX2), K at least
/// four registers long (the lanes' final sums cost a few shuffles per output). The rows are
/// as many as the registers hold beside them: R x N accumulators, R pieces of A's rows and
/// one of B's transpose (N = 10: 2 rows with AVX-512, 1 with AVX2), at most
/// [`MAX_LANE_DOT_ROWS`] and M.
pub fn lane_dot_rows(loops: &Loops, unit: VectorUnit) -> Option<i64> {
    let &[(rows, false), (columns, false), (depth, true)] = loops.0.as_slice() else {
        return None;
    };
    let lanes_taken = (columns + unit.lanes - 1) / unit.lanes * unit.lanes;
    if columns > 16 || 4 * columns > 3 * lanes_taken || depth < 4 * unit.lanes {
        return None;
    }
    let fit = (unit.registers - 1) / (columns + 1);
    let tile = fit.min(MAX_LANE_DOT_ROWS).min(rows);
    (tile >= 1).then_some(tile)
}

/// The share of its function's work (iterations of its structured ops' loop nests) below
/// which a matmul keeps N in the lanes although [`lane_dot_rows`] would take K: one part in
/// `LANE_DOT_MIN_SHARE`. Dot products cost their own code (the lanes' sums as shuffle trees
/// and, with B not constant, the kernel that transposes it at each call), which LLVM's code
/// generator compiles like any other: on W2 (three dense layers, the last 1024 x 10, 0.6% of
/// the work) the last layer's dot products and B's transpose cost 10 ms of its 70 ms compile
/// and saved nothing (the layer ran 80 us a call with them, 76 without). At an eighth of the
/// work, what they gain where they pay (W1's first layer 1.07 -> 0.60 ms, 44%) is still a
/// twentieth of the call. The seed MLP (W1), whose N = 10 layer is nearly all of its work,
/// keeps them.
pub const LANE_DOT_MIN_SHARE: i64 = 8;

/// Whether a matmul of `iterations` (M x N x K) is a large enough share of a function whose
/// structured ops iterate `function_iterations` times to be computed as dot products with K
/// in the lanes ([`LANE_DOT_MIN_SHARE`]).
pub fn lane_dots_repay(iterations: i64, function_iterations: i64) -> bool {
    iterations.saturating_mul(LANE_DOT_MIN_SHARE) >= function_iterations
}

/// The cache-level sizes the strategy writes and `tessera-tile` reads.
pub const TILE_SIZES: &str = "tessera.tile_sizes";

/// The register-level sizes (within a cache tile) the strategy writes and `tessera-tile` reads.
pub const VECTOR_SIZES: &str = "tessera.vector_sizes";

/// The multiples of lanes a cache tile along the vector lanes is made of where its extent
/// allows, the widest first: 32, a matmul register tile's row with AVX-512 (two registers of
/// 16) and two of them with AVX2; 16, a register of AVX-512 and two of AVX2; 8, a register
/// of AVX2 and half of one of AVX-512.
const TILE_LANES: [i64; 3] = [32, 16, 8];

/// The largest divisor of `extent` not above `target` that is a multiple of the widest of
/// [`TILE_LANES`] that divides `extent`, else the largest divisor: the register tiles inside
/// then have a legal vector width (72 columns in tiles of 24, each 3 vectors of 8, not of 36,
/// whose only register tiles were 12 lanes wide: LLVM widens those to 16 and splits them, and
/// its instruction selection took twice as long on them) and are as wide as the extent
/// allows (MobileNetV2's 160 output channels went in tiles of 40, register tiles of 8 lanes
/// with AVX-512 and one accumulator per row; in tiles of 32, two registers per row).
pub fn lane_aligned_divisor_at_most(extent: i64, target: i64) -> i64 {
    match TILE_LANES
        .into_iter()
        .find(|&lanes| extent > 0 && extent % lanes == 0 && lanes <= target)
    {
        Some(lanes) => lanes * divisor_at_most(extent / lanes, (target / lanes).max(1)),
        None => divisor_at_most(extent, target),
    }
}

/// The largest power of two that divides `extent` and is not above `target` (1 for an empty
/// extent).
pub fn power_of_two_at_most(extent: i64, target: i64) -> i64 {
    let lowest_bit = if extent > 0 { extent & -extent } else { 1 };
    let mut width = 1;
    while width * 2 <= target && width * 2 <= lowest_bit {
        width *= 2;
    }
    width
}

/// The vector width (lanes of one register tile) along a loop of `extent`, at most `target`,
/// for registers of `lanes` lanes: the largest power of two that divides when it fills at
/// least half a register (a vector type the target has: 4 or 8 lanes with AVX2, 8 or 16 with
/// AVX-512), else of it and the largest divisor the one that takes fewer register operations
/// to cover the extent, the power of two when they tie. LLVM widens a vector of another width
/// to the next power of two and splits it into registers; its instruction selection then
/// spends several times as long on each operation, and the code can be slower than the
/// narrower native vectors it saves: on the GPT block's rows of 24, tiles of 12 lanes took
/// three times as long to select as tiles of 8 with AVX2, and with AVX-512 matmul tiles of
/// 8 rows of 24 lanes (two widened registers each) ran the whole block 3 to 5 times slower
/// than rows of 8 lanes (one ymm register each), and took twice as long to generate. A width
/// no half-register power of two matches stays: a matmul with 10 columns keeps vectors of 10
/// (2 registers) rather than 5 of 2.
pub fn register_width(extent: i64, target: i64, lanes: i64) -> i64 {
    let operations = |width: i64| {
        let registers = (width.max(1) as u64)
            .next_power_of_two()
            .div_ceil(lanes.max(1) as u64);
        (extent.max(1) / width.max(1)) as u64 * registers
    };
    let divisor = divisor_at_most(extent, target);
    let power = power_of_two_at_most(extent, target);
    if 2 * power >= lanes || operations(power) <= operations(divisor) {
        power
    } else {
        divisor
    }
}

/// The most output pixels a convolution's register tile one register wide takes: one
/// broadcast per FMA, so the loads bound it. Sixteen-pixel tiles one register wide with
/// AVX-512 (MobileNetV2's projections into 16 and 24 channels) ran the model in 6.6-6.7 ms
/// where tiles of 8 ran it in 6.2-6.3.
const MAX_TILE_PIXELS: i64 = 8;

/// A convolution's register tile, output pixels by output channels, over `pixels` pixels of
/// an output row and `channels` output channels, for a window row of `taps` taps (unrolled:
/// each tap's filter vectors are live at once): two registers wide or one, with as many
/// pixels as the registers the filter's vectors and one broadcast leave hold accumulators
/// (at most [`MAX_TILE_PIXELS`] one register wide), the one that computes more per step (the
/// wider when they tie: fewer broadcasts). Output rows come in 7, 14, 28 and 56 pixels; with
/// AVX2's four rows two registers wide, a row of 7 went one pixel at a time and a row of 14
/// two (two and four accumulators, each a chain of dependent FMAs: all of ResNet-50's
/// convolutions but the stem), where one register wide they go 7 at a time. A 1x1
/// convolution with AVX-512 takes 14 pixels by 32 channels (28 accumulators): its tiles of
/// 7 or 8 pixels (16 accumulators, the matmul tile's) ran 28 x 28 x 512 -> 128 in 0.68 ms and
/// 56 x 56 x 256 -> 64 in 0.66, tiles of 14 in 0.57 and 0.57; 3x3 ones keep 7 or 8 pixels
/// (their three taps' six filter vectors leave room for 12, and 14 spilled: 2-3x slower).
pub fn convolution_tile(pixels: i64, channels: i64, taps: i64, unit: VectorUnit) -> (i64, i64) {
    let (_, columns) = unit.matmul_tile();
    [columns, unit.lanes]
        .into_iter()
        .map(|target| {
            let width = register_width(channels, target, unit.lanes);
            let registers = (width.max(1) as u64)
                .next_power_of_two()
                .div_ceil(unit.lanes.max(1) as u64) as i64;
            let accumulators = unit.registers - taps.max(1) * registers - 1;
            let cap = if registers == 1 {
                MAX_TILE_PIXELS
            } else {
                i64::MAX
            };
            let most = (accumulators / registers).clamp(1, cap);
            (divisor_at_most(pixels, most), width)
        })
        .max_by_key(|&(rows, width)| (rows * width, width))
        .unwrap_or((1, 1))
}

/// Fills stay whole: their loops become one `memset` (LLVM recognizes it), where tiled and
/// vectorized they became nests of small constant loops that LLVM unrolled into thousands of
/// inline stores in one block (12 s of instruction scheduling for one convolution's output).
const FILL: &str = "linalg.fill";

/// The op whose tiles [`transpose_blocks`] chooses.
pub const TRANSPOSE: &str = "linalg.transpose";

/// A transpose goes in blocks of up to 16 x 16 over the two loops whose order it swaps: the
/// output's innermost loop and the one that walks the input's innermost dimension
/// (`permutation[i]` is the input dimension output loop `i` reads; the others go one at a
/// time). Each block is read as rows of the input, transposed in registers by shuffles and
/// written as rows of the output, where a row of the output gathered its elements one by one
/// (attention's kᵀ, 512 x 64: 20 us); blocks over the last two loops whatever the
/// permutation moved an NHWC output of 56 x 56 x 256 to NCHW at 0.6 GB/s. Each side of a
/// block is the largest power of two that divides its loop: blocks of another width are
/// shuffled lane by lane (a 7 x 12 block of the GPT block's heads became vectors of 56 lanes
/// and 56 element moves). A permutation that keeps the innermost dimension copies blocks of
/// 16 rows (its last two loops).
pub fn transpose_blocks(loops: &Loops, permutation: &[i64]) -> Vec<i64> {
    let rank = loops.0.len();
    let innermost = rank.saturating_sub(1);
    let reads_input_rows = permutation
        .iter()
        .position(|&dimension| dimension == innermost as i64)
        .unwrap_or(innermost);
    loops
        .0
        .iter()
        .enumerate()
        .map(|(i, &(extent, _))| {
            let paired = if reads_input_rows == innermost {
                innermost.saturating_sub(1)
            } else {
                reads_input_rows
            };
            if i == innermost || i == paired {
                power_of_two_at_most(extent, 16)
            } else {
                1
            }
        })
        .collect()
}

/// The widest window row that vectorization unrolls whole.
const MAX_UNROLLED_TAPS: i64 = 16;

/// Register-level sizes within cache tiles of `cache` sizes: each divides its cache tile (or
/// the extent, for untiled loops).
pub fn choose_vector(name: &str, loops: &Loops, cache: &[i64], unit: VectorUnit) -> Vec<i64> {
    let (_, tile_columns) = unit.matmul_tile();
    if name == FILL {
        return vec![0; loops.0.len()];
    }
    let matmul = name == "linalg.matmul" || name == "linalg.batch_matmul";
    let windowed = name.starts_with(CONVOLUTION) || name.starts_with("linalg.pooling_nhwc");
    let reduces = loops.0.iter().any(|(_, r)| *r);
    let last_parallel = loops.0.iter().rposition(|(_, r)| !r);
    let last_reduction = loops.0.iter().rposition(|(_, r)| *r);
    // A reduction whose innermost non-unit loop is parallel (a column sum) keeps vector
    // accumulators across it and steps its reductions one by one; lanes along a reduced axis
    // that is not innermost would be strided, one element each.
    let innermost = loops.0.iter().rposition(|&(extent, _)| extent > 1);
    let across = reduces && innermost.is_some_and(|i| !loops.0[i].1);
    // What each register tile divides: its cache tile, or the whole loop where untiled.
    let spans: Vec<i64> = loops
        .0
        .iter()
        .zip(cache)
        .map(|(&(extent, _), &tile)| if tile == 0 { extent } else { tile })
        .collect();
    // A convolution contracting input channels: [N, OH, OW, F, KH, KW, C].
    let contracts = windowed && spans.len() == 7;
    let (pixels, channels) = if contracts {
        let taps = if spans[5] > MAX_UNROLLED_TAPS {
            1
        } else {
            spans[5]
        };
        convolution_tile(spans[2], spans[3], taps, unit)
    } else {
        (1, 1)
    };
    loops
        .0
        .iter()
        .zip(&spans)
        .enumerate()
        .map(|(i, (&(extent, reduction), &span))| {
            let width = |target| divisor_at_most(span, target);
            let lanes = |target| register_width(span, target, unit.lanes);
            if windowed {
                // One output row and one window row per tile, so the op decomposes into its
                // 1-d form, which vectorizes: [N, OH, OW, C|F, KH, KW(, C)] -> [1, 1, 8, 32, 1,
                // 0, 1] with AVX-512. A convolution that contracts input channels is a matmul
                // per tap (output pixels x channels in, channels in x F): the unit's
                // accumulator tile of pixels by F (`convolution_tile`), channels stepped by
                // one (outer products of broadcast pixels and F vectors). Contracting 64
                // channels at once unrolled 64 x 3 taps into one block whose broadcasts LLVM
                // spilled to the stack (a 3x3 convolution over 28x28x128 at 29% of the FMA
                // peak, 72% stepped by one, and a 20th of the compile time). Pooling and
                // depthwise convolutions (no contraction) take rows of 8 pixels and 16 lanes.
                // The vectorizer unrolls the window row: a wide one goes one tap at a time (a
                // window of 2^30 taps was unrolled until memory ran out).
                return match i {
                    2 if contracts => pixels,
                    3 if contracts => channels,
                    2 => width(8),
                    3 => lanes(16),
                    0 | 1 | 4 | 6 => 1,
                    5 if extent > MAX_UNROLLED_TAPS => 1,
                    _ => 0,
                };
            }
            match (matmul, reduction) {
                // Matmul: the unit's accumulator tile, K stepped by one (outer products).
                (true, true) => 1,
                (true, false) if Some(i) == last_parallel => lanes(tile_columns),
                (true, false) if Some(i + 1) == last_parallel => matmul_rows(span, unit),
                // Reductions: one row at a time, 64 lanes along the innermost reduction, or
                // along the innermost loop when it is parallel. Along a row the 64 lanes are
                // reduced as a tree (4 registers combined, then one horizontal reduction);
                // 16 lanes gave a horizontal reduction per register (softmax over 512x512:
                // 172 -> 163 us). Across rows they are independent accumulator registers,
                // not one chain of adds.
                (false, _) if across && Some(i) == innermost => lanes(64),
                (false, _) if across => 1,
                (false, true) if Some(i) == last_reduction => lanes(64),
                (false, true) => 1,
                // Elementwise: 16 lanes along the innermost loop that is not a unit one (a
                // trailing unit loop, as in NHWC with one channel, would leave one lane).
                (false, false) if !reduces && Some(i) == innermost => lanes(16),
                // Several rows when the cache tile has several (`reuse_broadcast_rows`).
                (false, false) if !reduces && i + 2 == loops.0.len() && rows_reusable(loops) => {
                    width(MAX_REUSED_ROWS)
                }
                _ => 1,
            }
        })
        .collect()
}

/// The register sizes of convolution `name` with `loops` in a register group (see
/// `tessera-tile`), whose loops are one cache tile's already: its register tiles divide the
/// whole of them. Cache tiles chosen over them again would split a tile that is one output row
/// already along its row (7 pixels into tiles of 1: a 1x1 convolution over 7 x 7 x 2048 into 64
/// channels ran at a fifth of the FMA peak, one pixel and two accumulators per register tile).
pub fn group_register_sizes(name: &str, loops: &Loops, unit: VectorUnit) -> Vec<i64> {
    choose_vector(name, loops, &vec![0; loops.0.len()], unit)
}

/// The cache tile sizes the strategy picks for `name` with `loops`. Elementwise ops reuse
/// nothing across a tile: they go one row at a time, the whole row (16 x 64 blocks read 256
/// bytes per row at a 4 KiB stride, 48 streams for an add, and ran an add over 4096 x 1024
/// 2.4x slower than LLVM's loop at -O0; whole rows also compile faster).
pub fn choose(name: &str, loops: &Loops, l2_bytes: i64) -> Vec<i64> {
    let elementwise = loops.0.iter().all(|(_, reduction)| !reduction)
        && !name.starts_with(CONVOLUTION)
        && !name.starts_with("linalg.pooling_nhwc");
    if name == FILL {
        return vec![0; loops.0.len()];
    }
    if elementwise {
        let last = loops.0.len().saturating_sub(1);
        return (0..loops.0.len())
            .map(|i| if i == last { 0 } else { 1 })
            .collect();
    }
    let mut tiles = blocks(name, loops);
    if name == "linalg.matmul" && matmul_blocking(loops, tiles[1], tiles[2], l2_bytes).rows_whole()
    {
        tiles[0] = 0;
    }
    if name.starts_with(CONVOLUTION) {
        let outputs: Vec<usize> = (0..loops.0.len()).filter(|&i| !loops.0[i].1).collect();
        let output_loops = Loops(outputs.iter().map(|&i| loops.0[i]).collect());
        let mut output_tiles: Vec<i64> = outputs.iter().map(|&i| tiles[i]).collect();
        cap_filter_slab(&mut output_tiles, &output_loops, loops, l2_bytes);
        for (&i, &tile) in outputs.iter().zip(&output_tiles) {
            tiles[i] = tile;
        }
        split_single_tile(&mut tiles, loops);
    }
    tiles
}

/// The most rows of an elementwise op one register tile takes when an operand is broadcast
/// along them ([`reuse_broadcast_rows`]).
const MAX_REUSED_ROWS: i64 = 8;

/// Widens the cache tiles [`choose`] gives an elementwise op over `loops` (rank 3 or more,
/// one row at a time) to up to [`MAX_REUSED_ROWS`] rows along its second-innermost loop, the
/// register tiles alike: for an op one of whose operands is broadcast along those rows (a
/// row of per-channel values over NHWC pixels), read once per tile instead of once per row.
/// MobileNetV2's depthwise convolutions are such ops (nine taps, each a shifted window of
/// the padded input times a per-channel filter row, then batch norm and ReLU6): one pixel per
/// register tile loaded 20 vectors for 9 FMAs; seven pixels load the filter rows once and
/// each input vector once for the up-to-three taps that read it (LLVM merges the shifted
/// windows' loads), 39 loads for 63 FMAs. The 14 x 14 x 384 one took 17 us instead of 23,
/// the model 5.13 instead of 5.33 ms on one thread; its seventeen depthwise kernels 0.748
/// instead of 0.870 ms a call on two.
pub fn reuse_broadcast_rows(tiles: &mut [i64], loops: &Loops) {
    let rank = loops.0.len();
    if rows_reusable(loops) && tiles.len() == rank && tiles[rank - 2] == 1 {
        tiles[rank - 2] = divisor_at_most(loops.0[rank - 2].0, MAX_REUSED_ROWS);
    }
}

/// Whether elementwise loops can take register tiles of several rows: rank 3 or more (pixels
/// of an image, not a matrix's long rows, which would be as many streams from memory), no
/// reduction, and lanes along the last loop (a trailing unit loop would leave one).
fn rows_reusable(loops: &Loops) -> bool {
    let rank = loops.0.len();
    rank >= 3 && loops.0.iter().all(|&(_, reduction)| !reduction) && loops.0[rank - 1].0 > 1
}

/// The names of the convolutions that contract input channels.
const CONVOLUTION: &str = "linalg.conv_2d";

/// Splits cache tiles (`tiles` over `loops`) that would cover all of a convolution's output
/// in one: its first output dimension of more than one row takes the largest divisor of at
/// most half of it (14 -> 7 rows, 7 -> 1). MobileNetV2's 1x1 convolutions into 14 x 14 x 64
/// outputs were one tile each: no loop to fuse their epilogue into (a kernel of its own, the
/// output written and read again) nor to run on two threads.
/// Applied alike to the convolution and to its epilogue's tiles, so that they agree.
fn split_single_tile(tiles: &mut [i64], loops: &Loops) {
    let parallel: Vec<usize> = (0..loops.0.len()).filter(|&i| !loops.0[i].1).collect();
    let whole = parallel
        .iter()
        .all(|&i| tiles[i] == 0 || tiles[i] == loops.0[i].0);
    if let (true, Some(&first)) = (whole, parallel.iter().find(|&&i| loops.0[i].0 > 1)) {
        let extent = loops.0[first].0;
        tiles[first] = divisor_at_most(extent, extent / 2);
    }
}

/// Re-tiles a convolution's cache tiles (`tiles` over `loops`, as [`choose`] or
/// [`epilogue_tiles`] gave them) so that its parallel loop, the first over a parallel
/// dimension with more than one tile, has a multiple of `threads` tiles: one of the row
/// dimensions up to that loop (not the innermost, the lanes') takes the largest divisor of its
/// extent, at least half its tile, that gives such a count, and becomes the parallel loop
/// where it had one tile. MobileNetV2's 1x1 convolutions into 14 x 14 x 96 ran three tiles of
/// 32 channels on two threads (1.36x their one-thread speed); in two halves of 7 rows each
/// runs the same work. Where no row dimension can (7 rows, prime) and the channels are the
/// parallel loop, their tile takes the largest size, at least half of it and a multiple of
/// the widest of [`TILE_LANES`] that divides it (so the register tiles inside keep their
/// width), that gives such a count: MobileNetV2's 1x1 convolutions over 7 x 7 into 320 and
/// 960 channels ran five and fifteen tiles of 64 on two threads (1.5-1.6x their one-thread
/// speed). Apply it alike to a convolution and its epilogue, so that they agree.
pub fn balance_threads(name: &str, tiles: &mut [i64], loops: &Loops, threads: i64) {
    if threads <= 1 || !name.starts_with(CONVOLUTION) || tiles.len() != loops.0.len() {
        return;
    }
    let parallel: Vec<usize> = (0..loops.0.len()).filter(|&i| !loops.0[i].1).collect();
    let count = |tiles: &[i64], d: usize| {
        let extent = loops.0[d].0;
        if tiles[d] == 0 || extent == 0 {
            1
        } else {
            extent / tiles[d]
        }
    };
    let Some(&first) = parallel.iter().find(|&&d| count(tiles, d) > 1) else {
        return;
    };
    if count(tiles, first) % threads == 0 {
        return;
    }
    let rows = parallel
        .iter()
        .take(parallel.len().saturating_sub(1))
        .take_while(|&&d| d <= first);
    let balanced = |d: usize, step: i64| {
        let extent = loops.0[d].0;
        let current = if tiles[d] == 0 { extent } else { tiles[d] };
        (1..=current / step)
            .rev()
            .map(|multiple| multiple * step)
            .take_while(|&size| 2 * size >= current)
            .find(|&size| extent % size == 0 && (extent / size) % threads == 0)
    };
    for &d in rows {
        if let Some(size) = balanced(d, 1) {
            tiles[d] = size;
            return;
        }
    }
    if parallel.last() == Some(&first) {
        let step = TILE_LANES
            .into_iter()
            .find(|&lanes| tiles[first] % lanes == 0)
            .unwrap_or(1);
        if let Some(size) = balanced(first, step) {
            tiles[first] = size;
        }
    }
}

/// How a matmul's cache tiles go through its rows and its reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MatmulBlocking {
    /// All rows in each cache tile of columns, the column tiles outermost: each column panel
    /// of B streams once while A stays in the L2.
    RowsWhole,
    /// All rows in each tile, the blocks of K outermost: each block of B (K block x columns)
    /// streams once and serves every row, while A's block of K columns and the whole output
    /// stay in the L2.
    ReductionOuter,
    /// Tiles of 16 rows outermost.
    RowTiles,
}

impl MatmulBlocking {
    fn rows_whole(self) -> bool {
        self != MatmulBlocking::RowTiles
    }
}

/// The blocking of a matmul with `loops` (`[M, N, K]`) in cache tiles of `columns` columns
/// and K blocks of `depth`. [`MatmulBlocking::RowsWhole`] when B has several column panels,
/// A is the smaller operand and takes at most a quarter of the L2 (`l2_bytes`, the rest
/// holding B's panel and what streams past): tiles of 16 rows streamed all of B once per 16
/// rows (the encoder layer's 128 x 768 by 768 x 3072 at 32% of the FMA peak: B, 9 MB, came
/// from memory 8 times; 128 x 768 by 768 x 768 went from 44% to 72%); with A at 40% of the
/// L2 (W2's 256 x 784) it was 20% slower than tiles of 16 rows. Else
/// [`MatmulBlocking::ReductionOuter`] when K has several blocks and the output and A's block
/// each take at most a quarter of the L2: the encoder's 128 x 3072 by 3072 x 768 (A 1.5 MB)
/// streamed B from memory once per 16 rows and took 5.0 ms, 3.4 ms with its K blocks
/// outermost. Else [`MatmulBlocking::RowTiles`].
fn matmul_blocking(loops: &Loops, columns: i64, depth: i64, l2_bytes: i64) -> MatmulBlocking {
    let [(m, false), (n, false), (k, true)] = loops.0.as_slice() else {
        return MatmulBlocking::RowTiles;
    };
    let quarter = l2_bytes / 4;
    if columns < *n && m * k * 4 <= quarter && k * n > m * k {
        MatmulBlocking::RowsWhole
    } else if depth < *k && m * n * 4 <= quarter && m * depth * 4 <= quarter {
        MatmulBlocking::ReductionOuter
    } else {
        MatmulBlocking::RowTiles
    }
}

/// The order of `name`'s cache tile loops (loop indices, outermost first) for its `cache`
/// sizes: a matmul that takes its rows whole and whose blocking is
/// [`MatmulBlocking::ReductionOuter`] runs its K blocks outermost; every other op its loops
/// in order.
pub fn cache_order(name: &str, loops: &Loops, cache: &[i64], l2_bytes: i64) -> Vec<usize> {
    let identity = (0..loops.0.len()).collect();
    if name != "linalg.matmul" || cache.len() != 3 || cache[0] != 0 {
        return identity;
    }
    let columns = if cache[1] == 0 {
        loops.0[1].0
    } else {
        cache[1]
    };
    let depth = if cache[2] == 0 {
        loops.0[2].0
    } else {
        cache[2]
    };
    match matmul_blocking(loops, columns, depth, l2_bytes) {
        MatmulBlocking::ReductionOuter => vec![2, 1, 0],
        _ => identity,
    }
}

/// The chunks a matmul's cache tiles are first split into for `threads` threads, when its
/// cache order (`order`, for `cache` sizes) runs a reduction outermost
/// ([`MatmulBlocking::ReductionOuter`]): the first parallel loop of several tiles is cut into
/// `threads` equal runs of whole tiles, outermost and run one per thread, each keeping the
/// reduction-outer order inside. Parallelized as it was, that loop ran once per block of K,
/// each a dispatch and a join of tasks of a few microseconds (the encoder's 128 x 3072 by
/// 3072 x 768 on two threads: 12 of them per call, 1.73x its one-thread speed). Where no
/// parallel loop has several cache tiles (K blocked, M and N whole: attention's p . v, 512 x
/// 512 by 512 x 64), the longest parallel loop is cut into `threads` runs of whole register
/// tiles (`register`): that matmul ran on one thread (0.199 ms on one, 0.212 on two). None
/// where the order starts with a parallel loop, or the tiles do not divide among the threads.
pub fn thread_chunks(
    loops: &Loops,
    cache: &[i64],
    register: Option<&[i64]>,
    order: &[usize],
    threads: i64,
) -> Option<Vec<i64>> {
    let first = order.iter().copied().find(|&d| cache.get(d) != Some(&0))?;
    if threads <= 1 || !loops.0.get(first)?.1 {
        return None;
    }
    let tiled = order.iter().copied().find(|&d| {
        let (extent, reduction) = loops.0[d];
        !reduction && cache[d] != 0 && cache[d] < extent
    });
    let (split, run) = match tiled {
        Some(split) => {
            let (extent, _) = loops.0[split];
            let tiles = extent / cache[split];
            if extent % cache[split] != 0 || tiles % threads != 0 {
                return None;
            }
            (split, extent / threads)
        }
        None => {
            let whole_registers = |d: usize| {
                let (extent, _) = loops.0[d];
                let step = register.and_then(|r| r.get(d)).copied().unwrap_or(1).max(1);
                extent % threads == 0 && (extent / threads) % step == 0
            };
            let split = (0..loops.0.len())
                .filter(|&d| !loops.0[d].1 && whole_registers(d))
                .max_by_key(|&d| loops.0[d].0)?;
            (split, loops.0[split].0 / threads)
        }
    };
    let mut chunks = vec![0; loops.0.len()];
    chunks[split] = run;
    Some(chunks)
}

/// The order of `name`'s register tile loops: a matmul's go column tile by column tile, all
/// rows of the cache tile under each, so that the block of B a column tile reads (K block x
/// 32 columns, 32 KB) stays in the L1 while the rows pass (the rows outermost alternated
/// between two such blocks, 64 KB); 3-5% on the encoder's matmuls. Others in order.
pub fn register_order(name: &str, loops: &Loops) -> Vec<usize> {
    if name == "linalg.matmul" && loops.0.len() == 3 {
        return vec![1, 0, 2];
    }
    (0..loops.0.len()).collect()
}

/// The tiles of a matmul or convolution (`anchor`, with `anchor_loops`) fused with its
/// elementwise epilogue, over the epilogue's `loops`: blocks of 16 rows by 64 columns, which
/// the contraction's own cache and register tiles then divide; all rows where the matmul
/// takes them whole ([`matmul_blocking`]).
pub fn epilogue_tiles(
    anchor: &str,
    anchor_loops: &Loops,
    loops: &Loops,
    l2_bytes: i64,
) -> Vec<i64> {
    let mut tiles = blocks("linalg.generic", loops);
    if anchor == "linalg.matmul" && tiles.len() == 2 {
        let depth = blocks(anchor, anchor_loops).get(2).copied().unwrap_or(0);
        if matmul_blocking(anchor_loops, tiles[1], depth, l2_bytes).rows_whole() {
            tiles[0] = 0;
        }
    }
    if anchor.starts_with(CONVOLUTION) {
        cap_filter_slab(&mut tiles, loops, anchor_loops, l2_bytes);
        split_single_tile(&mut tiles, loops);
    }
    tiles
}

/// The fewest output channels [`cap_filter_slab`] leaves a tile: a register tile's width with
/// AVX-512 (two registers).
const SLAB_MIN_CHANNELS: i64 = 32;

/// Narrows the output-channel tile (the last of `tiles`, over `loops`) of a convolution with
/// `anchor_loops` whose filter does not fit in an L2 of `l2_bytes` (it comes from memory at
/// every call) so that the tile's share of it (window taps x input channels x the tile's
/// channels, 4 bytes each) takes at most a quarter of the L2, down to [`SLAB_MIN_CHANNELS`]: a
/// tile's filter and the next tile's, prefetched while it runs
/// ([`prefetch_spread_min_bytes`]), then fit in half of it. With ResNet-50's 3x3 convolutions
/// over 7 x 7 x 512 in tiles of 64 channels (1.2 MB of filter each, 2 MiB of L2), the prefetched
/// lines of the next tile pushed the current one's out while its rows still read them.
fn cap_filter_slab(tiles: &mut [i64], loops: &Loops, anchor_loops: &Loops, l2_bytes: i64) {
    let window: i64 = anchor_loops
        .0
        .iter()
        .filter(|(_, reduction)| *reduction)
        .map(|(extent, _)| *extent)
        .product();
    let per_channel = window.max(1) * 4;
    let cap = (l2_bytes / 4 / per_channel).max(SLAB_MIN_CHANNELS);
    if let (Some(tile), Some(&(extent, false))) = (tiles.last_mut(), loops.0.last()) {
        if extent * per_channel <= l2_bytes {
            return;
        }
        let current = if *tile == 0 { extent } else { *tile };
        if current > cap {
            *tile = lane_aligned_divisor_at_most(extent, cap);
        }
    }
}

/// The least size of an operand (not a constant) that register tiles of matmuls and
/// convolutions prefetch a tile ahead (`tessera-prefetch-next-tiles`), for an L2 of `l2_bytes`
/// per core and code that runs on `threads` threads. A register tile walks such an operand as
/// several streams at once (a 1x1 convolution's seven pixels of 1 KB, four to a page), which
/// the hardware's stream prefetcher, one stream per page, follows badly. On one thread: half
/// the L2, beyond which an operand does not stay there beside the kernel's others and comes
/// from the L3 or memory (ResNet-50's 1x1 convolutions over 56 x 56 x 256, 3.2 MB with a 2 MiB
/// L2, took 0.85-0.95 ms in the model, 0.58 prefetched); smaller ones are in the L2, and
/// prefetching them costs the address arithmetic (an eighth of the L2: ResNet-50 46.0 -> 48.3
/// ms). On several threads a kernel's operands were mostly written by the other cores (each
/// kernel splits its work its own way), so they are in another L2 or the L3 whatever their
/// size: a thirty-second of the L2 (64 KB of 2 MiB) took ResNet-50 on two threads from
/// 27.2 to 25.9 ms and MobileNetV2 from 3.49 to 3.24 ms against half of it; a 128th did no
/// better.
pub fn prefetch_min_bytes(l2_bytes: i64, threads: i64) -> i64 {
    if threads > 1 {
        l2_bytes / 32
    } else {
        l2_bytes / 2
    }
}

/// The least size of a constant (packed weights: a matmul's B, a convolution's filter) whose
/// panels register tiles prefetch a tile ahead, for an L2 of `l2_bytes` per core: the L2. A
/// model's weights come from the L3 at every call, each panel read first by the first
/// register tile over it; ResNet-50's 7 x 7 1x1 convolutions (2 to 4 MB of filters, 7 register
/// tiles per panel) took 10% less time with them prefetched, its 14 x 14 ones (1 MB, 28
/// tiles per panel, the prefetches of all but the first hitting the cache) 5% more.
pub fn prefetch_constant_min_bytes(l2_bytes: i64) -> i64 {
    l2_bytes
}

/// The least size of a constant (packed weights) whose panels, each reused by several register
/// tiles, are prefetched a whole outer tile ahead, spread over the reusing tiles, for an L2 of
/// `l2_bytes` per core: a quarter of the L2, on any number of threads. ResNet-50's layers over
/// 7 x 7 took longer in the model than alone with their filters in the cache (its 3x3
/// convolutions over 7 x 7 x 512, 9.4 MB of filters: 1.5 ms alone, 2.2 in the model): the
/// first row of output tiles read each panel at the memory's pace, the other rows computed
/// from the L2. Spread (with [`cap_filter_slab`]'s tiles), the model took 56.4 -> 55.5 ms (one
/// thread, Sapphire Rapids, means of five alternating runs); from a quarter of the L2, which
/// takes in MobileNetV2's 1x1 convolutions over 7 x 7 (0.6 to 1.6 MB), MobileNetV2 on one
/// thread 6.16 -> 5.89 ms. On two threads the spread had started at the whole L2 (a quarter
/// changed nothing then); once matmuls and three-tap convolutions spread their prefetches too,
/// a quarter took MobileNetV2 on two threads from 3.37 to 3.29 ms (8 alternations) and
/// ResNet-50 from 25.9 to 25.5, the encoder level (Sapphire Rapids).
pub fn prefetch_spread_min_bytes(l2_bytes: i64) -> i64 {
    l2_bytes / 4
}

/// The fewest register tiles of rows that must read each panel of a matmul's B, when it is
/// not a constant (which is packed at compile time), for `tessera-pack-panels` to copy it into
/// panels of the tiles' columns when the call runs: the copy reads and writes B once, the
/// tiles read it this many times at least. Unpacked, each step of a register tile reads one
/// row of B a whole row apart, a new page per step: W3 (1024^3, B a parameter) ran at 35-37%
/// of the FMA peak where the same matmul with a constant B (packed at compile time) ran at
/// 63-66%; packed when called, at 68% (28.9 -> 16.0 ms, one core of Sapphire Rapids).
pub const MIN_PANEL_READERS: i64 = 8;

/// The elements of B a matmul's K block may span (K block x N tile): 256 x 64 floats, 64 KB,
/// stay in L2 while the M tile streams past them.
const B_PANEL: i64 = 256 * 64;

/// The rows of a cache tile over the outer parallel loops ([`blocks`]).
const CACHE_ROWS: i64 = 16;

/// Blocks of 16 along the parallel loops and 64 along the innermost one; matmul also blocks K
/// so that its panel of B (K block x N tile) stays within [`B_PANEL`] (for cache reuse: K by
/// 256 for wide matrices, whole for narrow ones: the seed MLP's N = 10 panel is 31 KB, and
/// blocking its K only cut each row's stream of A into pieces); other reductions stay whole.
fn blocks(name: &str, loops: &Loops) -> Vec<i64> {
    let parallel_count = loops.0.iter().filter(|(_, r)| !r).count();
    let mut parallel_seen = 0;
    let mut innermost_tile = 64;
    loops
        .0
        .iter()
        .map(|&(extent, reduction)| {
            if reduction {
                return if name == "linalg.matmul" || name == "linalg.batch_matmul" {
                    divisor_at_most(extent, (B_PANEL / innermost_tile.max(1)).max(256))
                } else {
                    0
                };
            }
            parallel_seen += 1;
            let innermost = parallel_seen == parallel_count;
            let tile = if innermost {
                lane_aligned_divisor_at_most(extent, 64)
            } else {
                divisor_at_most(extent, CACHE_ROWS)
            };
            if innermost {
                innermost_tile = tile;
            }
            tile
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The L2 the tests size for: 1 MiB.
    const L2: i64 = 1 << 20;

    #[test]
    fn dot_products_only_where_their_matmul_is_a_share_of_the_work() {
        let matmul = |m: i64, n: i64, k: i64| Loops(vec![(m, false), (n, false), (k, true)]);
        // W1 at batch 4096: the N = 10 layer, then a 10 x 10 one, a bias and a softmax.
        let first = matmul(4096, 10, 784).iterations();
        assert_eq!(first, 4096 * 10 * 784);
        let w1 = first + matmul(4096, 10, 10).iterations() + 3 * 4096 * 10;
        assert!(lane_dots_repay(first, w1));
        // W2's last layer (256 x 1024 by 1024 x 10) beside its two 1024-wide layers.
        let last = matmul(256, 10, 1024).iterations();
        let w2 = matmul(256, 1024, 784).iterations() + matmul(256, 1024, 1024).iterations() + last;
        assert!(!lane_dots_repay(last, w2));
        // At exactly one part in LANE_DOT_MIN_SHARE it still repays; below, not.
        assert!(lane_dots_repay(100, 100 * LANE_DOT_MIN_SHARE));
        assert!(!lane_dots_repay(100, 100 * LANE_DOT_MIN_SHARE + 1));
        // Huge nests saturate instead of overflowing.
        assert_eq!(matmul(i64::MAX, 2, 2).iterations(), i64::MAX);
    }

    #[test]
    fn narrow_matmuls_put_k_in_the_lanes() {
        let matmul = |m: i64, n: i64, k: i64| Loops(vec![(m, false), (n, false), (k, true)]);
        let (wide, narrow) = (VectorUnit::AVX512, VectorUnit::AVX2);
        // The seed MLP's N = 10: 2 rows of 10 accumulators beside 2 pieces of A and one of
        // Bt with AVX-512's 32 registers, 1 row with AVX2's 16.
        assert_eq!(lane_dot_rows(&matmul(4096, 10, 784), wide), Some(2));
        assert_eq!(lane_dot_rows(&matmul(4096, 10, 784), narrow), Some(1));
        // One column: 8 rows, the accumulators two pipes of latency 4 keep busy; capped by M.
        assert_eq!(lane_dot_rows(&matmul(64, 1, 256), wide), Some(8));
        assert_eq!(lane_dot_rows(&matmul(3, 1, 256), wide), Some(3));
        // Lanes filled (16 of 16, 8 of 8), more than three quarters (13 of 16), N over 16,
        // or K under four registers: N stays in the lanes.
        assert_eq!(lane_dot_rows(&matmul(64, 16, 784), wide), None);
        assert_eq!(lane_dot_rows(&matmul(64, 8, 784), narrow), None);
        assert_eq!(lane_dot_rows(&matmul(64, 13, 784), wide), None);
        assert_eq!(lane_dot_rows(&matmul(64, 20, 784), narrow), None);
        assert_eq!(lane_dot_rows(&matmul(64, 10, 48), wide), None);
        // Not a matmul's loops.
        assert_eq!(
            lane_dot_rows(&Loops(vec![(64, false), (10, false)]), wide),
            None
        );
    }

    #[test]
    fn short_register_tiles_split_the_rows() {
        let matmul = |m: i64, n: i64, k: i64| Loops(vec![(m, false), (n, false), (k, true)]);
        let zen3 = VectorUnit {
            in_flight: 8,
            ..VectorUnit::AVX2
        };
        // W3 with AVX2: 1024 rows divide into tiles of 4 at most (8 accumulators, what Zen 3's
        // pipes need in flight, fewer than Haswell's 10): 1020 rows in tiles of 6.
        for unit in [VectorUnit::AVX2, zen3] {
            assert_eq!(
                matmul_row_split(&matmul(1024, 1024, 1024), 1024, unit),
                Some(1020)
            );
        }
        // A fused tile of 16 rows of a 256-row A: 12 + 4.
        assert_eq!(
            matmul_row_split(&matmul(16, 64, 784), 256, VectorUnit::AVX2),
            Some(12)
        );
        // 100 rows divide into tiles of 5: 10 accumulators, enough for Zen 3, not Haswell.
        assert_eq!(
            matmul_row_split(&matmul(100, 32, 64), 100, VectorUnit::AVX2),
            Some(96)
        );
        assert_eq!(matmul_row_split(&matmul(100, 32, 64), 100, zen3), None);
        // Rows in whole tiles already, a tile of columns that is not 16 wide, A of fewer
        // than 48 rows, or a first part under two tiles: one op.
        let avx2 = VectorUnit::AVX2;
        assert_eq!(
            matmul_row_split(&matmul(1032, 1024, 1024), 1032, avx2),
            None
        );
        assert_eq!(matmul_row_split(&matmul(1024, 40, 1024), 1024, avx2), None);
        assert_eq!(matmul_row_split(&matmul(20, 64, 64), 20, avx2), None);
        assert_eq!(matmul_row_split(&matmul(8, 64, 64), 256, avx2), None);
        // AVX-512: 16 rows take 8, 16 accumulators, twice what its pipes need.
        let wide = VectorUnit::AVX512;
        assert_eq!(
            matmul_row_split(&matmul(1024, 1024, 1024), 1024, wide),
            None
        );
        // The first part's cache tiles take a multiple of 6 rows: 12 where M allows.
        let mut tiles = choose("linalg.matmul", &matmul(1020, 1024, 1024), L2);
        assert_eq!(tiles[0], 15);
        whole_register_rows(&mut tiles, &matmul(1020, 1024, 1024), avx2);
        assert_eq!(tiles[0], 12);
        assert_eq!(matmul_rows(tiles[0], avx2), 6);
        // AVX-512's 16-row tiles of a 112-row product take 8 rows, enough: they stay.
        let mut tiles = choose("linalg.matmul", &matmul(1792, 1024, 1024), L2);
        assert_eq!(tiles[0], 16);
        whole_register_rows(&mut tiles, &matmul(1792, 1024, 1024), wide);
        assert_eq!(tiles[0], 16);
    }

    #[test]
    fn convolution_tiles_divide_among_the_threads() {
        let conv = |h: i64, f: i64| {
            Loops(vec![
                (1, false),
                (h, false),
                (h, false),
                (f, false),
                (1, true),
                (1, true),
                (576, true),
            ])
        };
        let name = "linalg.conv_2d_nhwc_hwcf";
        let balanced = |h: i64, f: i64, threads: i64| {
            let loops = conv(h, f);
            let mut tiles = choose(name, &loops, L2);
            balance_threads(name, &mut tiles, &loops, threads);
            tiles
        };
        // Three tiles of channels on two threads: the rows go in two halves instead.
        assert_eq!(choose(name, &conv(14, 96), L2), [1, 14, 14, 32, 0, 0, 0]);
        assert_eq!(balanced(14, 96, 2), [1, 7, 14, 32, 0, 0, 0]);
        assert_eq!(balanced(14, 96, 1), [1, 14, 14, 32, 0, 0, 0]);
        // Seven tiles of 16 rows: eight of 14.
        assert_eq!(balanced(112, 32, 2)[1], 14);
        // Seven rows (prime) cannot be halved: five tiles of 64 channels go as ten of 32.
        assert_eq!(choose(name, &conv(7, 320), L2), [1, 7, 7, 64, 0, 0, 0]);
        assert_eq!(balanced(7, 320, 2), [1, 7, 7, 32, 0, 0, 0]);
        assert_eq!(balanced(7, 320, 1), [1, 7, 7, 64, 0, 0, 0]);
        // Fifteen tiles of 64 (960 channels): thirty of 32.
        assert_eq!(balanced(7, 960, 2), [1, 7, 7, 32, 0, 0, 0]);
        // Five tiles of 32 channels stay: narrower tiles would narrow the register tiles.
        assert_eq!(balanced(7, 160, 2), choose(name, &conv(7, 160), L2));
        assert_eq!(choose(name, &conv(7, 160), L2)[3], 32);
        // Only convolutions.
        let matmul = Loops(vec![(49, false), (96, false), (576, true)]);
        let mut tiles = choose("linalg.matmul", &matmul, L2);
        let before = tiles.clone();
        balance_threads("linalg.matmul", &mut tiles, &matmul, 2);
        assert_eq!(tiles, before);
    }

    #[test]
    fn register_groups_keep_whole_rows_of_pixels() {
        let tile = |h: i64, w: i64, f: i64, c: i64| {
            Loops(vec![
                (1, false),
                (h, false),
                (w, false),
                (f, false),
                (1, true),
                (1, true),
                (c, true),
            ])
        };
        let name = "linalg.conv_2d_nhwc_hwcf";
        // A cache tile of one output row of 7 pixels: register tiles of all 7, not of 1.
        assert_eq!(
            group_register_sizes(name, &tile(1, 7, 64, 2048), VectorUnit::AVX512),
            [1, 1, 7, 32, 1, 0, 1]
        );
        assert_eq!(
            group_register_sizes(name, &tile(7, 14, 64, 1024), VectorUnit::AVX512),
            [1, 1, 14, 32, 1, 0, 1]
        );
    }

    #[test]
    fn convolution_tiles_fill_the_accumulators_whatever_the_row() {
        let avx2 = |pixels, channels| convolution_tile(pixels, channels, 3, VectorUnit::AVX2);
        let avx512 = |pixels, channels| convolution_tile(pixels, channels, 3, VectorUnit::AVX512);
        // AVX2, 3x3: rows of 7 and 14 one register wide; 28 and 56 two.
        assert_eq!(avx2(7, 64), (7, 8));
        assert_eq!(avx2(14, 64), (7, 8));
        assert_eq!(avx2(28, 64), (4, 16));
        assert_eq!(avx2(8, 64), (4, 16));
        // AVX-512, 3x3: two registers wide, up to 12 pixels.
        assert_eq!(avx512(7, 64), (7, 32));
        assert_eq!(avx512(14, 512), (7, 32));
        assert_eq!(avx512(56, 64), (8, 32));
        assert_eq!(avx512(24, 64), (12, 32));
        // Narrow outputs: one register (or half of one), still at most 8 pixels.
        assert_eq!(avx512(14, 24), (7, 8));
        assert_eq!(avx512(16, 16), (8, 16));
        assert_eq!(avx2(14, 24), (7, 8));
        // A prime row wider than any tile goes a pixel at a time.
        assert_eq!(avx512(17, 64), (1, 32));
        // 1x1 windows: two filter vectors live, 28 accumulators with AVX-512; AVX2 as 3x3.
        let pointwise =
            |pixels, channels| convolution_tile(pixels, channels, 1, VectorUnit::AVX512);
        assert_eq!(pointwise(14, 512), (14, 32));
        assert_eq!(pointwise(56, 64), (14, 32));
        assert_eq!(pointwise(7, 2048), (7, 32));
        assert_eq!(pointwise(56, 16), (8, 16));
        assert_eq!(convolution_tile(28, 64, 1, VectorUnit::AVX2), (4, 16));
        assert_eq!(convolution_tile(14, 64, 1, VectorUnit::AVX2), (7, 8));
    }

    #[test]
    fn elementwise_tiles_take_rows_that_share_a_broadcast_operand() {
        let nhwc = Loops(vec![(1, false), (14, false), (14, false), (384, false)]);
        let mut tiles = choose("linalg.generic", &nhwc, 2 << 20);
        assert_eq!(tiles, vec![1, 1, 1, 0]);
        reuse_broadcast_rows(&mut tiles, &nhwc);
        assert_eq!(tiles, vec![1, 1, 7, 0]);
        let register = choose_vector("linalg.generic", &nhwc, &tiles, VectorUnit::AVX512);
        assert_eq!(register, vec![1, 1, 7, 16]);
        // Rows of 56 pixels take 8; one row a time stays one per register tile.
        let wide = Loops(vec![(1, false), (56, false), (56, false), (24, false)]);
        let mut tiles = choose("linalg.generic", &wide, 2 << 20);
        reuse_broadcast_rows(&mut tiles, &wide);
        assert_eq!(tiles, vec![1, 1, 8, 0]);
        let single = choose("linalg.generic", &nhwc, 2 << 20);
        let register = choose_vector("linalg.generic", &nhwc, &single, VectorUnit::AVX512);
        assert_eq!(register, vec![1, 1, 1, 16]);
        // Matrices, reductions and a trailing unit loop keep their tiles.
        let matrix = Loops(vec![(128, false), (768, false)]);
        let mut tiles = choose("linalg.generic", &matrix, 2 << 20);
        reuse_broadcast_rows(&mut tiles, &matrix);
        assert_eq!(tiles, vec![1, 0]);
        let reduce = Loops(vec![(1, false), (14, false), (14, true)]);
        let mut tiles = vec![1, 1, 0];
        reuse_broadcast_rows(&mut tiles, &reduce);
        assert_eq!(tiles, vec![1, 1, 0]);
        let unit_channel = Loops(vec![(1, false), (14, false), (14, false), (1, false)]);
        let mut tiles = choose("linalg.generic", &unit_channel, 2 << 20);
        reuse_broadcast_rows(&mut tiles, &unit_channel);
        assert_eq!(tiles, vec![1, 1, 1, 0]);
    }

    #[test]
    fn cache_tiles_along_the_lanes_keep_whole_registers() {
        assert_eq!(lane_aligned_divisor_at_most(72, 64), 24);
        assert_eq!(lane_aligned_divisor_at_most(96, 64), 32);
        assert_eq!(lane_aligned_divisor_at_most(160, 64), 32);
        assert_eq!(lane_aligned_divisor_at_most(144, 64), 48);
        assert_eq!(lane_aligned_divisor_at_most(784, 64), 16);
        assert_eq!(lane_aligned_divisor_at_most(1000, 64), 40);
        assert_eq!(lane_aligned_divisor_at_most(1024, 64), 64);
        assert_eq!(lane_aligned_divisor_at_most(8, 64), 8);
        assert_eq!(lane_aligned_divisor_at_most(10, 64), 10);
        assert_eq!(lane_aligned_divisor_at_most(0, 64), 1);
    }

    #[test]
    fn vector_widths_prefer_powers_of_two_that_cost_no_more() {
        assert_eq!(power_of_two_at_most(24, 16), 8);
        assert_eq!(power_of_two_at_most(96, 64), 32);
        assert_eq!(power_of_two_at_most(7, 16), 1);
        assert_eq!(power_of_two_at_most(0, 16), 1);
        // 24 lanes: 3 registers of 8, where 2 tiles of 12 take 2 widened registers each.
        assert_eq!(register_width(24, 16, 8), 8);
        assert_eq!(register_width(784, 64, 8), 16);
        // 10 and 7 lanes: one tile in 2 registers (1 register), not 5 of 2 (7 of 1).
        assert_eq!(register_width(10, 16, 8), 10);
        assert_eq!(register_width(7, 64, 8), 7);
        assert_eq!(register_width(12, 16, 16), 12);
        assert_eq!(register_width(64, 64, 16), 64);
        // With AVX-512, rows of 24 go in ymm registers of 8 (not widened tiles of 24 or 12),
        // and with AVX2 rows of 12 in xmm registers of 4.
        assert_eq!(register_width(24, 32, 16), 8);
        assert_eq!(register_width(24, 64, 16), 8);
        assert_eq!(register_width(72, 16, 16), 8);
        assert_eq!(register_width(12, 16, 8), 4);
    }

    #[test]
    fn reduction_outer_matmuls_split_their_columns_among_threads() {
        let ffn = Loops(vec![(128, false), (768, false), (3072, true)]);
        let cache = choose("linalg.matmul", &ffn, 2 << 20);
        let order = cache_order("linalg.matmul", &ffn, &cache, 2 << 20);
        assert_eq!(
            thread_chunks(&ffn, &cache, None, &order, 2),
            Some(vec![0, 384, 0])
        );
        assert_eq!(
            thread_chunks(&ffn, &cache, None, &order, 3),
            Some(vec![0, 256, 0])
        );
        assert_eq!(
            thread_chunks(&ffn, &cache, None, &order, 5),
            None,
            "12 tiles"
        );
        assert_eq!(thread_chunks(&ffn, &cache, None, &order, 1), None);
        // A parallel loop outermost already: nothing to split.
        let order = [1, 0, 2];
        assert_eq!(thread_chunks(&ffn, &cache, None, &order, 2), None);
        // K blocked, rows and columns whole: the rows go to the threads, in whole register
        // tiles (8 rows).
        let pv = Loops(vec![(512, false), (64, false), (512, true)]);
        let (cache, order) = (vec![0, 0, 256], vec![2, 1, 0]);
        let register = [8, 32, 1];
        assert_eq!(
            thread_chunks(&pv, &cache, Some(&register), &order, 2),
            Some(vec![256, 0, 0])
        );
        let odd = Loops(vec![(24, false), (64, false), (512, true)]);
        assert_eq!(
            thread_chunks(&odd, &cache, Some(&[8, 32, 1]), &order, 2),
            Some(vec![0, 32, 0]),
            "12 rows are no whole register tiles: the columns split"
        );
    }

    #[test]
    fn prefetching_starts_where_operands_leave_this_cores_l2() {
        assert_eq!(prefetch_min_bytes(2 << 20, 1), 1 << 20);
        assert_eq!(prefetch_min_bytes(2 << 20, 2), 64 << 10);
        assert_eq!(prefetch_min_bytes(1 << 20, 8), 32 << 10);
        assert_eq!(prefetch_constant_min_bytes(2 << 20), 2 << 20);
        assert_eq!(prefetch_spread_min_bytes(2 << 20), 512 << 10);
    }

    #[test]
    fn matmul_tiles_fit_the_vector_registers() {
        assert_eq!(VectorUnit::AVX2.matmul_tile(), (6, 16));
        assert_eq!(VectorUnit::AVX512.matmul_tile(), (14, 32));
        assert_eq!(matmul_rows(16, VectorUnit::AVX512), 8);
        assert_eq!(matmul_rows(12, VectorUnit::AVX512), 12);
        assert_eq!(matmul_rows(14, VectorUnit::AVX512), 14);
        assert_eq!(matmul_rows(12, VectorUnit::AVX2), 6);
        assert_eq!(matmul_rows(16, VectorUnit::AVX2), 4);
        assert_eq!(matmul_rows(7, VectorUnit::AVX2), 1);
        let loops = Loops(vec![(1024, false), (1024, false), (1024, true)]);
        let cache = choose("linalg.matmul", &loops, L2);
        assert_eq!(
            choose_vector("linalg.matmul", &loops, &cache, VectorUnit::AVX512),
            [8, 32, 1]
        );
    }

    #[test]
    fn a_large_a_takes_its_reduction_blocks_outermost() {
        // The encoder's second FFN matmul, 128 x 3072 by 3072 x 768: A (1.5 MB) is more than
        // a quarter of a 2 MiB L2, the output (384 KB) and A's block of 256 (128 KB) are not.
        let ffn = Loops(vec![(128, false), (768, false), (3072, true)]);
        let cache = choose("linalg.matmul", &ffn, 2 << 20);
        assert_eq!(cache, [0, 64, 256]);
        assert_eq!(
            cache_order("linalg.matmul", &ffn, &cache, 2 << 20),
            [2, 1, 0]
        );
        // Fused with its epilogue, each 64-column tile of it the same way.
        let epilogue = Loops(vec![(128, false), (768, false)]);
        assert_eq!(
            epilogue_tiles("linalg.matmul", &ffn, &epilogue, 2 << 20),
            [0, 64]
        );
        let tile = Loops(vec![(128, false), (64, false), (3072, true)]);
        let cache = choose("linalg.matmul", &tile, 2 << 20);
        assert_eq!(cache, [0, 64, 256]);
        assert_eq!(
            cache_order("linalg.matmul", &tile, &cache, 2 << 20),
            [2, 1, 0]
        );
        // With a 1 MiB L2 the output is more than a quarter of it: tiles of 16 rows, in order.
        let cache = choose("linalg.matmul", &ffn, L2);
        assert_eq!(cache, [16, 64, 256]);
        assert_eq!(cache_order("linalg.matmul", &ffn, &cache, L2), [0, 1, 2]);
        // One block of K: nothing to order.
        let short = Loops(vec![(128, false), (768, false), (256, true)]);
        let cache = choose("linalg.matmul", &short, L2);
        assert_eq!(cache_order("linalg.matmul", &short, &cache, L2), [0, 1, 2]);
        // Register tiles: column tiles outermost for matmuls only.
        assert_eq!(register_order("linalg.matmul", &ffn), [1, 0, 2]);
        assert_eq!(register_order("linalg.generic", &ffn), [0, 1, 2]);
    }

    #[test]
    fn filters_from_memory_come_in_slabs_of_a_quarter_of_the_l2() {
        let conv = |window: i64, c: i64, f: i64| {
            Loops(vec![
                (1, false),
                (7, false),
                (7, false),
                (f, false),
                (window, true),
                (window, true),
                (c, true),
            ])
        };
        let name = "linalg.conv_2d_nhwc_hwcf";
        let output = |f: i64| Loops(vec![(1, false), (7, false), (7, false), (f, false)]);
        let l2 = 2 << 20;
        // 3x3 over 512 channels: 18 KB of filter per output channel, 9.4 MB in all; a quarter
        // of the L2 holds 28 channels, and a tile keeps the 32 of a register tile.
        assert_eq!(choose(name, &conv(3, 512, 512), l2)[3], 32);
        assert_eq!(
            epilogue_tiles(name, &conv(3, 512, 512), &output(512), l2)[3],
            32
        );
        // 1x1 over 2048 channels: 8 KB per channel, 64 of them fit.
        assert_eq!(choose(name, &conv(1, 2048, 512), l2)[3], 64);
        // A filter the L2 holds whole stays in it between calls: tiles as they were.
        assert_eq!(choose(name, &conv(3, 64, 512), l2)[3], 64);
        assert_eq!(choose(name, &conv(3, 512, 512), 16 << 20)[3], 64);
    }

    #[test]
    fn convolutions_take_the_matmul_accumulator_tile() {
        // [N, OH, OW, F, KH, KW, C] of a 3x3 convolution over 28x28x128.
        let conv = Loops(vec![
            (1, false),
            (28, false),
            (28, false),
            (128, false),
            (3, true),
            (3, true),
            (128, true),
        ]);
        let cache = choose("linalg.conv_2d_nhwc_hwcf", &conv, L2);
        assert_eq!(cache, [1, 14, 14, 64, 0, 0, 0]);
        assert_eq!(
            choose_vector(
                "linalg.conv_2d_nhwc_hwcf",
                &conv,
                &cache,
                VectorUnit::AVX512
            ),
            [1, 1, 7, 32, 1, 0, 1]
        );
        // AVX2: 7 pixels one register wide (7 accumulators), not 2 two wide (4).
        assert_eq!(
            choose_vector("linalg.conv_2d_nhwc_hwcf", &conv, &cache, VectorUnit::AVX2),
            [1, 1, 7, 8, 1, 0, 1]
        );
        // Pooling contracts nothing: rows of 8 pixels (7 here) by 16 lanes.
        let pool = Loops(conv.0[..6].to_vec());
        let cache = choose("linalg.pooling_nhwc_max", &pool, L2);
        assert_eq!(
            choose_vector("linalg.pooling_nhwc_max", &pool, &cache, VectorUnit::AVX512),
            [1, 1, 7, 16, 1, 0]
        );
    }

    #[test]
    fn a_convolution_that_fits_one_tile_is_split_with_its_epilogue() {
        // A 1x1 convolution over 14 x 14 x 192 into 64 channels, and its epilogue.
        let conv = Loops(vec![
            (1, false),
            (14, false),
            (14, false),
            (64, false),
            (1, true),
            (1, true),
            (192, true),
        ]);
        let output = Loops(conv.0[..4].to_vec());
        let name = "linalg.conv_2d_nhwc_hwcf";
        assert_eq!(choose(name, &conv, L2), [1, 7, 14, 64, 0, 0, 0]);
        assert_eq!(epilogue_tiles(name, &conv, &output, L2), [1, 7, 14, 64]);
        // 7 rows split one by one; an output already in several tiles stays as it was.
        let small = Loops(vec![
            (1, false),
            (7, false),
            (7, false),
            (64, false),
            (320, true),
        ]);
        assert_eq!(
            choose("linalg.conv_2d_nhwc_hwcf", &small, L2)[..4],
            [1, 1, 7, 64]
        );
        let large = Loops(vec![
            (1, false),
            (28, false),
            (28, false),
            (64, false),
            (3, true),
        ]);
        assert_eq!(
            choose("linalg.conv_2d_nhwc_hwcf", &large, L2)[..4],
            [1, 14, 14, 64]
        );
        // Matmuls and other ops keep their single tile.
        let matmul = Loops(vec![(8, false), (64, false), (64, true)]);
        assert_eq!(choose("linalg.matmul", &matmul, L2), [8, 64, 64]);
    }

    #[test]
    fn matmul_blocks_its_reduction() {
        let loops = Loops(vec![(64, false), (10, false), (784, true)]);
        assert_eq!(choose("linalg.matmul", &loops, L2), [16, 10, 784]);
        assert_eq!(
            choose_vector("linalg.matmul", &loops, &[16, 10, 784], VectorUnit::AVX2),
            [4, 10, 1]
        );
        let wide = Loops(vec![(1024, false), (1024, false), (1024, true)]);
        assert_eq!(choose("linalg.matmul", &wide, L2), [16, 64, 256]);
        let reduction = Loops(vec![(64, false), (10, true)]);
        assert_eq!(choose("linalg.generic", &reduction, L2), [64, 0]);
        assert_eq!(
            choose_vector("linalg.generic", &reduction, &[64, 0], VectorUnit::AVX2),
            [1, 10]
        );
        let one_channel = Loops(vec![(32, false), (30, false), (30, false), (1, false)]);
        assert_eq!(
            choose_vector(
                "linalg.generic",
                &one_channel,
                &[16, 15, 15, 1],
                VectorUnit::AVX2
            ),
            [1, 1, 15, 1]
        );
        assert_eq!(choose("linalg.fill", &one_channel, L2), [0, 0, 0, 0]);
        assert_eq!(
            choose_vector("linalg.fill", &one_channel, &[0; 4], VectorUnit::AVX2),
            [0, 0, 0, 0]
        );
        let columns = Loops(vec![(64, true), (32, false), (1, false)]);
        assert_eq!(
            choose_vector("linalg.generic", &columns, &[0, 32, 1], VectorUnit::AVX2),
            [1, 32, 1]
        );
        let elementwise = Loops(vec![(64, false), (256, false)]);
        assert_eq!(
            choose("linalg.generic", &elementwise, L2),
            [1, 0],
            "whole rows"
        );
        let anchor = Loops(vec![(1024, false), (256, false), (64, true)]);
        assert_eq!(
            epilogue_tiles("linalg.matmul", &anchor, &elementwise, L2),
            [16, 64],
            "blocks around a matmul whose A is the larger operand"
        );
        let one_panel = Loops(vec![(32, false), (64, false), (64, true)]);
        assert_eq!(
            epilogue_tiles(
                "linalg.matmul",
                &one_panel,
                &Loops(vec![(32, false), (64, false)]),
                L2
            ),
            [16, 64],
            "B is one panel"
        );
        let narrow = Loops(vec![(128, false), (3072, false), (768, true)]);
        let epilogue = Loops(vec![(128, false), (3072, false)]);
        assert_eq!(
            epilogue_tiles("linalg.matmul", &narrow, &epilogue, 2 << 20),
            [0, 64],
            "whole rows: A (384 KB) stays in the L2, B streams once"
        );
        assert_eq!(
            epilogue_tiles("linalg.matmul", &narrow, &epilogue, 1 << 20),
            [16, 64],
            "A takes more than a quarter of a 1 MiB L2"
        );
        assert_eq!(
            choose_vector(
                "linalg.generic",
                &elementwise,
                &choose("linalg.generic", &elementwise, L2),
                VectorUnit::AVX2
            ),
            [1, 16]
        );
    }
}
