//! `tessera-tile`: tiles every linalg op twice with the transform dialect's `tile_using_for`:
//! by its `tessera.tile_sizes` (cache tiles), then the tile by its `tessera.vector_sizes`
//! (register tiles, which `tessera-vectorize` turns into vectors). The strategy attaches both
//! to ops that have none; `sizes=` gives the cache sizes of every op and skips the register
//! level; the strategy also orders each level's loops (`interchange`). Before that, long row
//! reductions are split (`split_reduction`) so that they accumulate in vector lanes (see
//! [`SPLIT_LANES`]), matmuls whose rows would take short register tiles are split along them
//! (`split_matmul_rows`), and register groups (a convolution, its fill and its fused epilogue) are
//! tiled as one ([`TILE_GROUPS`]); after it, the weights register tiles read a few columns at a
//! time are packed in panels of those columns ([`PACK_PANELS`]: constants at compile time, a
//! matmul's other B when the call runs where enough tiles read it), and constants still read
//! row by row whose rows alias in the L1 get padded rows ([`PAD_ROWS`]). With `threads=N`, a
//! matmul whose cache tiles run a reduction outermost is first cut into one run of columns
//! per thread (of its longest parallel loop, in whole register tiles, where none has several
//! cache tiles: `thread_chunks`). Precondition: linalg on tensors.

use crate::diag::Diagnostic;
use crate::mlir::bridge::walk::{walk, WalkedOp};
use crate::mlir::cpu::cpu_model::CpuModel;
use crate::mlir::cpu::strategy::{
    balance_threads, cache_order, choose, choose_vector, group_register_sizes, lane_dot_rows,
    lane_dots_repay, matmul_row_split, register_order, reuse_broadcast_rows, thread_chunks,
    transpose_blocks, whole_register_rows, VectorUnit, MIN_LANE_DOT_READERS, MIN_PANEL_READERS,
    TILE_SIZES, TRANSPOSE, VECTOR_SIZES,
};
use crate::mlir::cpu::tuning::{annotate, i64_array, kernel_key, Source, StageTuning, KEEP_LAYOUT};
use crate::mlir::pipeline::loop_nest::{divisor_at_most, loops, map_results, Loops, PARALLEL};
use crate::mlir::pipeline::schedule::{
    apply_schedule, match_each, Author, SCHEDULE_HEAD, SCHEDULE_TAIL,
};
use crate::mlir::pipeline::stages::{
    expect_mlir, run_upstream, stage_error, OptionKind, Program, Stage, StageEnv, StageOption,
    StageOptions,
};
use melior::ir::attribute::{DenseI64ArrayAttribute, IntegerAttribute};
use melior::ir::r#type::IntegerType;
use melior::ir::Attribute;
use std::collections::HashMap;
use std::fmt::Write;

/// Tiling as a stage.
pub struct Tile;

/// Stores the weights register tiles of matmuls and convolutions read a few columns at a time
/// as panels of those columns, one contiguous stream per tile: constants at compile time, a
/// matmul's B computed or passed in when the call runs, where [`MIN_PANEL_READERS`] register
/// tiles of rows read each panel (src/mlir/cpu/cxx/panel_packing.cpp).
const PACK_PANELS: &str = "tessera-pack-panels";

/// Pads the rows of the constant weights convolutions and matmuls still stream row by row
/// when rows a multiple of 512 bytes apart would share a few L1 sets
/// (src/mlir/cpu/cxx/constant_row_padding.cpp).
const PAD_ROWS: &str = "tessera-pad-constant-rows";

/// Computes the matmuls marked [`LANE_DOTS`] as dot products with K in the vector lanes
/// (src/mlir/cpu/cxx/lane_dot_products.cpp).
const LANE_DOT_PRODUCTS: &str = "tessera-lane-dot-products";

/// Marks a matmul for [`LANE_DOT_PRODUCTS`] with its register tile's rows and lanes.
const LANE_DOTS: &str = "tessera.lane_dot_products";

/// Marks each op to tile for the schedule, which matches it by this attribute.
const MARKER: &str = "tessera.tile_id";

/// Marks the reductions to split for the split schedule, with their output rank (where the
/// lanes' dimension goes).
const SPLIT: &str = "tessera.split_rank";

/// Reductions along their innermost loop over at least `2 * SPLIT_LANES` elements (a multiple
/// of it) are split: a partial reduction keeps `SPLIT_LANES` sums per row in vectors (loads
/// and adds, no shuffles; 64 lanes are 4 AVX-512 or 8 AVX2 registers, independent chains of
/// adds, where one register's chain waited on the add latency at every step), then one
/// horizontal reduction per row combines them. Left as they were, they reduced each
/// 16-element chunk across its lanes, shuffles included (layer norm over 1024: 64 horizontal
/// reductions per row and statistic).
pub const SPLIT_LANES: i64 = 64;

/// Marks register tiles for `tessera-vectorize`.
pub const VECTORIZE: &str = "tessera.vectorize";

/// Marks the ops of a register group (see [`RegisterGroup`]) for `tessera-tile-register-groups`
/// ([`TILE_GROUPS`]), which tiles them together: the epilogue with its register tile sizes and
/// the position of the loop to mark [`PARALLEL`], the convolution with the sizes of its
/// reductions' tiles, the fill.
const GROUP_EPILOGUE: &str = "tessera.register_group";
const GROUP_PARALLEL: &str = "tessera.register_group_parallel";
const GROUP_PRODUCER: &str = "tessera.register_group_producer";
const GROUP_INIT: &str = "tessera.register_group_init";

/// Tiles the register groups (src/mlir/cpu/cxx/register_groups.cpp).
const TILE_GROUPS: &str = "tessera-tile-register-groups";

/// The convolution whose register tiles go through its fused epilogue without leaving the
/// registers: an elementwise op that `tessera-fuse` put in one `scf.forall` tile with the
/// convolution it reads and the fill that convolution accumulates from. Tiled alone, each of
/// the three had its own register tiles over a tile buffer (allocated, zeroed, accumulated
/// into, read back by the epilogue); tiled together, the epilogue's register tiles compute
/// the convolution's tile (zeros, then the taps and channels stepped by one) and apply the
/// epilogue to the accumulators, and no buffer is left.
/// A chain of convolutions, each accumulating onto the result of the one before
/// (`tessera-accumulate-convolutions`), is one group: the accumulators stay in the registers
/// from the first convolution's fill through the last one's epilogue.
struct RegisterGroup<'c> {
    /// The convolutions, the one the epilogue reads first, each with its register sizes over
    /// its reduction loops (window rows, window columns, input channels; zero for its output
    /// loops).
    convolutions: Vec<(WalkedOp<'c>, Vec<i64>)>,
    fill: WalkedOp<'c>,
    /// The epilogue's register tile sizes: the convolutions' over their output loops (the
    /// smallest any of them picks, so that the one with the most taps still fits).
    tile: Vec<i64>,
}

/// The register group `op` is the epilogue of, if any: `op` is an elementwise generic in an
/// `scf.forall` (a tile `tessera-fuse` made) reading, as its same-shaped input, the only
/// result of a `linalg.conv_2d_nhwc_hwcf` used by it alone, which accumulates from a fill
/// used by it alone or from another such convolution (and so on down to a fill), all in that
/// tile, none with pinned sizes.
fn register_group<'c>(op: &WalkedOp<'c>, unit: VectorUnit) -> Option<RegisterGroup<'c>> {
    let pinned =
        |o: &WalkedOp<'c>| o.attribute(TILE_SIZES).is_some() || o.attribute(VECTOR_SIZES).is_some();
    if op.name() != "linalg.generic" || op.result_count() != 1 || op.touches_i1() || pinned(op) {
        return None;
    }
    let op_loops = loops(op)?;
    let parent = op.parent()?;
    if parent.name() != "scf.forall" || op_loops.0.iter().any(|&(_, reduction)| reduction) {
        return None;
    }
    let same_parent =
        |o: &WalkedOp<'c>| o.parent().is_some_and(|p| p.raw().ptr == parent.raw().ptr);
    let maps = map_results(&op.attribute("indexing_maps")?.to_string());
    let identity: Vec<String> = (0..op_loops.0.len()).map(|d| format!("d{d}")).collect();
    let mut convolutions = (0..op.operand_count().saturating_sub(1)).filter_map(|i| {
        let producer = op.operand_producer(i)?;
        (producer.name() == "linalg.conv_2d_nhwc_hwcf" && maps.get(i) == Some(&identity))
            .then_some(producer)
    });
    let mut convolution = convolutions.next()?;
    if convolutions.next().is_some() {
        return None;
    }
    let outputs = op_loops.0.len();
    let mut chain = Vec::new();
    let mut tile: Vec<i64> = Vec::new();
    let fill = loop {
        if convolution.use_count() != 1 || !same_parent(&convolution) || pinned(&convolution) {
            return None;
        }
        let convolution_loops = loops(&convolution)?;
        if convolution_loops.0.len() != outputs + 3
            || convolution_loops.0[..outputs]
                .iter()
                .zip(&op_loops.0)
                .any(|(c, e)| c.0 != e.0 || c.1)
        {
            return None;
        }
        let register = group_register_sizes(&convolution.name(), &convolution_loops, unit);
        tile = if tile.is_empty() {
            register[..outputs].to_vec()
        } else {
            tile.iter()
                .zip(&register)
                .map(|(&a, &b)| a.min(b))
                .collect()
        };
        let reduction = (0..register.len())
            .map(|i| if i < outputs { 0 } else { register[i] })
            .collect();
        let accumulator = convolution.operand_producer(convolution.operand_count() - 1)?;
        let name = convolution.name();
        chain.push((convolution, reduction));
        if accumulator.name() != name {
            break accumulator;
        }
        convolution = accumulator;
    };
    if fill.name() != "linalg.fill" || fill.use_count() != 1 || !same_parent(&fill) {
        return None;
    }
    Some(RegisterGroup {
        convolutions: chain,
        fill,
        tile,
    })
}

/// Marks every register group of `module` for [`TILE_GROUPS`] (and its three ops as register
/// tiles for `tessera-vectorize`); returns how many there are.
fn mark_register_groups(
    module: &melior::ir::Module<'_>,
    ctx: &melior::Context,
    unit: VectorUnit,
) -> usize {
    let marked = Attribute::unit(ctx);
    let i64_type = IntegerType::new(ctx, 64).into();
    let mut groups = 0;
    walk(module, |op| {
        let Some(group) = register_group(op, unit) else {
            return;
        };
        let identity: Vec<usize> = (0..group.tile.len()).collect();
        if let Some(position) = loops(op).and_then(|l| parallel_loop(&l, &group.tile, &identity)) {
            let position = IntegerAttribute::new(i64_type, position as i64);
            op.set_attribute(GROUP_PARALLEL, position.into());
        }
        let tile = DenseI64ArrayAttribute::new(ctx, &group.tile);
        op.set_attribute(GROUP_EPILOGUE, tile.into());
        for (convolution, reduction) in &group.convolutions {
            let reduction = DenseI64ArrayAttribute::new(ctx, reduction);
            convolution.set_attribute(GROUP_PRODUCER, reduction.into());
            convolution.set_attribute(VECTORIZE, marked);
        }
        group.fill.set_attribute(GROUP_INIT, marked);
        for member in [op, &group.fill] {
            member.set_attribute(VECTORIZE, marked);
        }
        groups += 1;
    });
    groups
}

/// Makes every indexing map of generic `op` (whose loops are `loops`) a projected
/// permutation, when it only needs renaming: a size-1 input dimension read at the constant 0
/// (a broadcast) is read at the unit loop the output uses at the same position instead (it
/// only takes the value 0). Returns whether all maps are projected permutations now:
/// split_reduction turns a constant index into an invalid op.
fn unit_indices_as_loops<'c>(
    op: &WalkedOp<'c>,
    loops: &[(i64, bool)],
    ctx: &'c melior::Context,
) -> bool {
    let Some(text) = op.attribute("indexing_maps").map(|m| m.to_string()) else {
        return false;
    };
    let mut maps = map_results(&text);
    let Some(output) = maps.last().cloned() else {
        return false;
    };
    let is_unit_loop = |expr: &str| {
        expr.strip_prefix('d')
            .and_then(|i| i.parse::<usize>().ok())
            .is_some_and(|i| loops.get(i).is_some_and(|&(extent, _)| extent == 1))
    };
    let mut changed = false;
    for map in maps.iter_mut() {
        if map.len() != output.len() {
            continue;
        }
        for (expr, out) in map.iter_mut().zip(&output) {
            if expr == "0" && is_unit_loop(out) {
                *expr = out.clone();
                changed = true;
            }
        }
    }
    if !maps.iter().flatten().all(|expr| expr.starts_with('d')) {
        return false;
    }
    if changed {
        let dims: Vec<String> = (0..loops.len()).map(|i| format!("d{i}")).collect();
        let text: Vec<String> = maps
            .iter()
            .map(|m| format!("affine_map<({}) -> ({})>", dims.join(", "), m.join(", ")))
            .collect();
        match Attribute::parse(ctx, &format!("[{}]", text.join(", "))) {
            Some(attribute) => op.set_attribute("indexing_maps", attribute),
            None => return false,
        }
    }
    true
}

/// The extent of each loop in one register tile, given the loops' cache tile sizes and
/// register tile sizes (0 = the whole of the level above).
fn register_extents(loops: &Loops, cache: &[i64], register: &[i64]) -> Vec<i64> {
    loops
        .0
        .iter()
        .enumerate()
        .map(|(d, &(extent, _))| {
            let cache = cache.get(d).copied().filter(|&s| s != 0).unwrap_or(extent);
            let register = register
                .get(d)
                .copied()
                .filter(|&s| s != 0)
                .unwrap_or(cache);
            register.min(cache).min(extent)
        })
        .collect()
}

/// The casts a product's factor may go through and still be folded into a contraction.
const CASTS: [&str; 5] = [
    "arith.extf",
    "arith.extsi",
    "arith.extui",
    "arith.sitofp",
    "arith.uitofp",
];

/// Whether generic `op`'s register tile (its loops' `extents`) multiplies two inputs, one of
/// which reads a reduction loop of one iteration and the other not. Vectorized, the product's
/// reduction becomes a `vector.contract` with the second input broadcast along that loop, and
/// MLIR 19's `CombineContractBroadcast` folds the unit broadcast away into a contraction whose
/// reduction dimension only one side has, which the verifier rejects (a weighted sum of a
/// tensor<4x10> into a scalar, tiled one row at a time). Such a tile stays scalar.
fn multiplies_across_unit_reduction(op: &WalkedOp<'_>, loops: &Loops, extents: &[i64]) -> bool {
    if op.name() != "linalg.generic" {
        return false;
    }
    let inputs = op.operand_count().saturating_sub(op.result_count());
    let factor = |product: &WalkedOp<'_>, i: usize| {
        product.operand_argument_number(i).or_else(|| {
            let cast = product.operand_producer(i)?;
            CASTS
                .contains(&cast.name().as_str())
                .then(|| cast.operand_argument_number(0))
                .flatten()
        })
    };
    let unit_reductions: Vec<usize> = loops
        .0
        .iter()
        .enumerate()
        .filter(|&(d, &(_, reduction))| reduction && extents.get(d) == Some(&1))
        .map(|(d, _)| d)
        .collect();
    if unit_reductions.is_empty() {
        return false;
    }
    op.nested_ops().iter().any(|product| {
        if !matches!(product.name().as_str(), "arith.mulf" | "arith.muli") {
            return false;
        }
        let (Some(a), Some(b)) = (factor(product, 0), factor(product, 1)) else {
            return false;
        };
        a < inputs
            && b < inputs
            && unit_reductions
                .iter()
                .any(|&r| op.operand_uses_loop(a, r) != op.operand_uses_loop(b, r))
    })
}

/// Splits the long row reductions of `module` (those that qualify, see [`SPLIT_LANES`], and
/// have no pinned sizes): `split_reduction` with the lanes as the innermost parallel loop.
/// An op that cannot be split stays as it is (its failure is suppressed).
fn split_reductions(
    env: &StageEnv<'_, '_>,
    module: &mut melior::ir::Module<'_>,
    stage: &str,
) -> Result<(), Vec<Diagnostic>> {
    let ctx = env.context.context();
    let i64_type = IntegerType::new(ctx, 64).into();
    let mut ranks = std::collections::BTreeSet::new();
    walk(module, |op| {
        let Some(op_loops) = loops(op) else { return };
        let reductions = op_loops.0.iter().filter(|(_, r)| *r).count();
        let innermost = op_loops.0.last().copied();
        let qualifies = op.name() == "linalg.generic"
            && op.result_count() == 1
            && reductions == 1
            && innermost.is_some_and(|(extent, reduction)| {
                reduction && extent % SPLIT_LANES == 0 && extent >= 2 * SPLIT_LANES
            })
            && unit_indices_as_loops(op, &op_loops.0, ctx)
            && op.attribute(TILE_SIZES).is_none()
            && op.attribute(VECTOR_SIZES).is_none()
            && !op.touches_i1()
            // split_reduction fails on a reduction that widens its input (an f16 or bf16 sum
            // accumulating in f32).
            && !op.nested_ops().iter().any(|nested| nested.name() == "arith.extf");
        let rank = op.shapes().1.first().cloned().flatten().map(|s| s.len());
        if let (true, Some(rank)) = (qualifies, rank) {
            op.set_attribute(SPLIT, IntegerAttribute::new(i64_type, rank as i64).into());
            ranks.insert(rank as i64);
        }
    });
    transform_marked(env, module, stage, "linalg.generic", SPLIT, ranks, |rank| {
        let any = "!transform.any_op";
        format!("%init{rank}, %fill{rank}, %partial{rank}, %combine{rank} = transform.structured.split_reduction %o {{split_factor = {SPLIT_LANES}, insert_split_dimension = {rank}, inner_parallel}} : ({any}) -> ({any}, {any}, {any}, {any})")
    })
}

/// Marks the matmuls to split along their rows for the row-split schedule, with the row
/// at which the second part starts.
const SPLIT_ROWS: &str = "tessera.split_rows";

/// Splits the f32 matmuls of `module` whose rows the strategy splits ([`matmul_row_split`]:
/// most rows in the unit's whole register tiles, the rest in a part of their own) and that
/// have no pinned sizes, no entry in the `tuning` cache (its choices are for the whole op) and
/// are not computed with K in the lanes. An op that cannot be split stays as it is (its
/// failure is suppressed).
fn split_matmul_rows(
    env: &StageEnv<'_, '_>,
    module: &mut melior::ir::Module<'_>,
    unit: VectorUnit,
    tuning: Option<&StageTuning>,
    stage: &str,
) -> Result<(), Vec<Diagnostic>> {
    let ctx = env.context.context();
    let i64_type = IntegerType::new(ctx, 64).into();
    let work = function_iterations(module);
    let mut heads = std::collections::BTreeSet::new();
    walk(module, |op| {
        let Some(op_loops) = loops(op) else { return };
        let head = (op.name() == "linalg.matmul"
            && op.operand_element_types().iter().all(|t| t == "f32")
            && op.attribute(TILE_SIZES).is_none()
            && op.attribute(VECTOR_SIZES).is_none()
            && lane_dot_tile(op, &op_loops, unit, &work).is_none()
            && !tuning.is_some_and(|tuning| {
                let key = kernel_key(op, &op_loops);
                tuning
                    .cache
                    .tiles(&tuning.target, &key)
                    .is_some_and(|choice| choice.fits(&op_loops).is_ok())
            }))
        .then(|| {
            let a_rows = traced_operand(op, 0).1.first().copied().unwrap_or(0);
            matmul_row_split(&op_loops, a_rows, unit)
        })
        .flatten();
        if let Some(head) = head {
            op.set_attribute(SPLIT_ROWS, IntegerAttribute::new(i64_type, head).into());
            heads.insert(head);
        }
    });
    transform_marked(
        env,
        module,
        stage,
        "linalg.matmul",
        SPLIT_ROWS,
        heads,
        |head| {
            format!("%head{head}, %tail{head} = transform.structured.split %o after {head} {{dimension = 0}} : !transform.any_op")
        },
    )
}

/// Applies to each `op_name` op of `module` marked `mark = v : i64`, for each `v` of `values`,
/// the transform `transform(v)` writes (on the op's handle `%o`), with its failures suppressed
/// (an op that cannot be transformed stays as it is); then removes the marks.
fn transform_marked(
    env: &StageEnv<'_, '_>,
    module: &mut melior::ir::Module<'_>,
    stage: &str,
    op_name: &str,
    mark: &str,
    values: std::collections::BTreeSet<i64>,
    transform: impl Fn(i64) -> String,
) -> Result<(), Vec<Diagnostic>> {
    if values.is_empty() {
        return Ok(());
    }
    let any = "!transform.any_op";
    let mut schedule = String::from(SCHEDULE_HEAD);
    for value in values {
        let _ = writeln!(
            schedule,
            "    %marked{value} = transform.structured.match ops{{[\"{op_name}\"]}} attributes {{{mark} = {value} : i64}} in %root : ({any}) -> {any}
    transform.foreach %marked{value} : {any} {{
    ^bb0(%op: {any}):
      transform.sequence %op : {any} failures(suppress) {{
      ^bb1(%o: {any}):
        {}
      }}
    }}",
            transform(value)
        );
    }
    schedule.push_str(SCHEDULE_TAIL);
    apply_schedule(
        env,
        module,
        &schedule,
        "of tessera-tile",
        stage,
        Author::Stage,
    )?;
    walk(module, |op| op.remove_attribute(mark));
    Ok(())
}

/// Whether elementwise `op` (a `linalg.generic` over `loops`, none reduced) reads an input
/// broadcast along its second-innermost loop: indexed by the innermost loop but not by that
/// one (a per-channel row over NHWC pixels).
fn broadcasts_along_rows(op: &WalkedOp<'_>, loops: &Loops) -> bool {
    let rank = loops.0.len();
    if op.name() != "linalg.generic" || rank < 2 || loops.0.iter().any(|&(_, r)| r) {
        return false;
    }
    let inputs = op.operand_count().saturating_sub(op.result_count());
    (0..inputs).any(|i| op.operand_uses_loop(i, rank - 1) && !op.operand_uses_loop(i, rank - 2))
}

/// The value `op`'s operand `index` reads seen through the slices it is a tile of: the op
/// that defines it, if any, and its static shape (empty where it has none).
fn traced_operand<'c>(op: &WalkedOp<'c>, index: usize) -> (Option<WalkedOp<'c>>, Vec<i64>) {
    let mut shape = op.shapes().0.get(index).cloned().flatten();
    let mut producer = op.operand_producer(index);
    while let Some(slice) = producer.take() {
        if slice.name() != "tensor.extract_slice" {
            producer = Some(slice);
            break;
        }
        shape = slice.shapes().0.first().cloned().flatten();
        producer = slice.operand_producer(0);
    }
    (producer, shape.unwrap_or_default())
}

/// The iterations of `op`'s loops (with `loops`) over the whole tensors it computes a tile of
/// (`tessera-fuse` tiled the layers it fused): a matmul's M and N are the rows of its A and
/// the columns of its B seen through their slices; another op's iterations are scaled by how
/// many tiles of its first operand the whole of it holds.
fn whole_iterations(op: &WalkedOp<'_>, loops: &Loops) -> i64 {
    let elements = |shape: &[i64]| shape.iter().fold(1i64, |p, &d| p.saturating_mul(d.max(1)));
    if let (true, [(_, false), (_, false), (depth, true)]) =
        (op.name() == "linalg.matmul", loops.0.as_slice())
    {
        let (a, b) = (traced_operand(op, 0).1, traced_operand(op, 1).1);
        if let ([rows, _], [_, columns]) = (a.as_slice(), b.as_slice()) {
            return rows.saturating_mul(*columns).saturating_mul(*depth);
        }
    }
    let tile = op.shapes().0.first().cloned().flatten().unwrap_or_default();
    let whole = traced_operand(op, 0).1;
    let tiles = (elements(&whole) / elements(&tile)).max(1);
    loops.iterations().saturating_mul(tiles)
}

/// The name of the function `op` is in.
fn enclosing_function(op: &WalkedOp<'_>) -> Option<String> {
    let mut current = op.parent()?;
    while current.name() != "func.func" {
        current = current.parent()?;
    }
    current.string_attribute("sym_name")
}

/// The iterations of every structured op of each function of `module` over the whole
/// tensors ([`whole_iterations`]), by function name: the measure of a call's work the
/// strategy weighs a kernel's share by.
fn function_iterations(module: &melior::ir::Module<'_>) -> HashMap<String, i64> {
    let mut totals = HashMap::new();
    walk(module, |op| {
        if let (Some(op_loops), Some(function)) = (loops(op), enclosing_function(op)) {
            let total: &mut i64 = totals.entry(function).or_default();
            *total = total.saturating_add(whole_iterations(op, &op_loops));
        }
    });
    totals
}

/// The register tile's rows and the cache tile's rows (0: untiled) with which f32 matmul `op`
/// (with `loops`; `work`: [`function_iterations`]) is computed as dot products with K in
/// the lanes, when the strategy says so ([`lane_dot_rows`], [`lane_dots_repay`]) and its B
/// is a constant (transposed at compile time) or its A, traced through the tiles it is a
/// slice of, has [`MIN_LANE_DOT_READERS`] rows per register tile row (B is transposed as
/// the call runs). Cache tiles of at most 64 rows, a multiple of the
/// register tile's where M allows, give threads their share.
fn lane_dot_tile(
    op: &WalkedOp<'_>,
    loops: &Loops,
    unit: VectorUnit,
    work: &HashMap<String, i64>,
) -> Option<(i64, i64)> {
    if op.name() != "linalg.matmul" || op.operand_element_types().iter().any(|t| t != "f32") {
        return None;
    }
    let function = work.get(&enclosing_function(op)?).copied().unwrap_or(0);
    if !lane_dots_repay(whole_iterations(op, loops), function) {
        return None;
    }
    let rows = lane_dot_rows(loops, unit)?;
    let constant_b = traced_operand(op, 1)
        .0
        .is_some_and(|p| p.name() == "arith.constant");
    let a_rows = traced_operand(op, 0).1.first().copied().unwrap_or(0);
    if !constant_b && a_rows < MIN_LANE_DOT_READERS * rows {
        return None;
    }
    let extent = loops.0[0].0;
    let cache_rows = match extent {
        ..=64 => 0,
        _ if extent % rows == 0 => rows * divisor_at_most(extent / rows, 64 / rows),
        _ => divisor_at_most(extent, 64),
    };
    Some((rows, cache_rows))
}

/// The position, among the loops tiling `loops` by `sizes` in `order` (outermost first, as
/// `tile_using_for` returns them), of the first over a parallel dimension with more than one
/// tile: the loop `tessera-parallelize` may split. A loop of one tile (NHWC's batch of 1)
/// folds away with its mark; marking it left MobileNetV2's depthwise convolutions on one
/// thread.
fn parallel_loop(loops: &Loops, sizes: &[i64], order: &[usize]) -> Option<usize> {
    order.iter().filter(|&&d| sizes[d] != 0).position(|&d| {
        let (extent, reduction) = loops.0[d];
        !reduction && sizes[d] < extent
    })
}

/// The cache and register sizes and the cache loop order of `op` (with `loops`) when a
/// tuning cache is given: its entry's where it has one that fits (its packing declined with
/// [`KEEP_LAYOUT`]), else the strategy's `cache` and `register` and their order; `op` is
/// marked with its key, where its choices came from and what they are.
fn tuned_choice(
    op: &WalkedOp<'_>,
    loops: &Loops,
    tuning: &StageTuning,
    cache: Vec<i64>,
    register: Vec<i64>,
    l2_bytes: i64,
    ctx: &melior::Context,
) -> (Vec<i64>, Vec<i64>, Vec<usize>) {
    let key = kernel_key(op, loops);
    let entry = tuning
        .cache
        .tiles(&tuning.target, &key)
        .filter(|choice| choice.fits(loops).is_ok());
    let (source, cache, register, order, panels) = match entry {
        Some(choice) => {
            if !choice.panels {
                op.set_attribute(KEEP_LAYOUT, Attribute::unit(ctx));
            }
            (
                Source::Cache,
                choice.cache.clone(),
                choice.register.clone(),
                choice.order.clone(),
                choice.panels,
            )
        }
        None => {
            let order = cache_order(&op.name(), loops, &cache, l2_bytes);
            (Source::Strategy, cache, register, order, true)
        }
    };
    let choices = format!(
        "cache = {}, register = {}, order = {}, panels = {panels}",
        i64_array(&cache),
        i64_array(&register),
        i64_array(&order)
    );
    annotate(op, ctx, &key, source, &choices);
    (cache, register, order)
}

impl Stage for Tile {
    fn name(&self) -> &'static str {
        "tessera-tile"
    }

    fn summary(&self) -> &'static str {
        "Tile linalg ops by their tessera.tile_sizes (chosen by the strategy when absent). Input: linalg on tensors."
    }

    fn options(&self) -> &'static [StageOption] {
        &[
            StageOption { name: "sizes", doc: "tile sizes for every op, one per loop, outermost first (0 = untiled); overrides the strategy", kind: OptionKind::Integers { min: 0 } },
            StageOption { name: "unit", doc: "the vector unit register tiles are sized for: avx2 or avx512; default: the host's", kind: OptionKind::OneOf(&["avx2", "avx512"]) },
            StageOption { name: "l2", doc: "bytes of L2 cache per core that matmul tiles are sized for; default: the host's", kind: OptionKind::Positive },
            StageOption { name: "threads", doc: "threads the code will run on (default 1): matmuls whose cache tiles run a reduction outermost first split their columns into one run per thread, convolutions' tiles divide among the threads", kind: OptionKind::Positive },
            StageOption { name: "tuning", doc: "a tuning cache (tessera-tune's JSON): ops it has an entry for take its choices, and every op the strategy sizes is marked tessera.tuning (its kernel key, where its choices came from, what they are)", kind: OptionKind::File },
            StageOption { name: "cpu", doc: "the CPU the tuning cache's entries are looked up for; default: the host's", kind: OptionKind::Cpu },
        ]
    }

    fn run<'c>(
        &self,
        program: Program<'c>,
        env: &StageEnv<'c, '_>,
        options: &StageOptions,
    ) -> Result<Program<'c>, Vec<Diagnostic>> {
        let mut module = expect_mlir(program, self.name())?;
        let forced = options
            .int_list("sizes")
            .transpose()
            .map_err(|e| stage_error(self.name(), e))?;
        if let Some(bad) = forced.iter().flatten().find(|&&s| s < 0) {
            return Err(stage_error(
                self.name(),
                format!("option 'sizes' must be non-negative, but has {bad}"),
            ));
        }
        let ctx = env.context.context();
        let unit = match options
            .choice("unit", &["avx2", "avx512"])
            .map_err(|e| stage_error(self.name(), e))?
        {
            Some("avx2") => VectorUnit::AVX2,
            Some(_) => VectorUnit::AVX512,
            None => CpuModel::host().vector_unit(),
        };
        let l2_bytes = options
            .positive("l2", CpuModel::host().l2_bytes as u64)
            .map_err(|e| stage_error(self.name(), e))? as i64;
        let threads = options
            .positive("threads", 1)
            .map_err(|e| stage_error(self.name(), e))? as i64;
        let unit_name = if unit.lanes >= 16 { "avx512" } else { "avx2" };
        let tuning = StageTuning::from_options(options, unit_name, l2_bytes, threads)
            .map_err(|e| stage_error(self.name(), e))?;
        if forced.is_none() {
            split_reductions(env, &mut module, self.name())?;
            split_matmul_rows(env, &mut module, unit, tuning.as_ref(), self.name())?;
        }
        let mut tiles = String::new();
        if forced.is_none() && mark_register_groups(&module, ctx, unit) > 0 {
            run_upstream(env, &mut module, TILE_GROUPS, self.name())?;
        }
        let mut count = 0;
        let mut lane_dot_count = 0;
        let work = function_iterations(&module);
        walk(&module, |op| {
            // The register groups' tiles, tiled already.
            if op.attribute(VECTORIZE).is_some() {
                return;
            }
            let Some(op_loops) = loops(op) else { return };
            let name = op.name();
            let pinned = |attribute: &str| {
                op.attribute(attribute)
                    .and_then(|a| DenseI64ArrayAttribute::try_from(a).ok())
                    .map(|array| {
                        (0..array.len())
                            .filter_map(|i| array.element(i).ok())
                            .collect::<Vec<i64>>()
                    })
            };
            let lane_dots = match &forced {
                None if pinned(TILE_SIZES).is_none() && pinned(VECTOR_SIZES).is_none() => {
                    lane_dot_tile(op, &op_loops, unit, &work)
                }
                _ => None,
            };
            if let Some((rows, _)) = lane_dots {
                lane_dot_count += 1;
                let mark = format!("array<i64: {rows}, {}>", unit.lanes);
                if let Some(mark) = Attribute::parse(ctx, &mark) {
                    op.set_attribute(LANE_DOTS, mark);
                }
            }
            // Sizes, and the cache loops' order where a tuning cache decided it.
            let (cache, register, tuned_order) = match &forced {
                None if lane_dots.is_some() => (
                    lane_dots.map_or_else(Vec::new, |(_, cache_rows)| vec![cache_rows, 0, 0]),
                    None,
                    None,
                ),
                Some(forced) => (
                    (0..op_loops.0.len())
                        .map(|i| forced.get(i).copied().unwrap_or(0))
                        .collect(),
                    None,
                    None,
                ),
                None if name == TRANSPOSE => {
                    let permutation = pinned("permutation").unwrap_or_default();
                    let blocks = transpose_blocks(&op_loops, &permutation);
                    (
                        pinned(TILE_SIZES).unwrap_or_else(|| blocks.clone()),
                        Some(pinned(VECTOR_SIZES).unwrap_or(blocks)),
                        None,
                    )
                }
                None => {
                    let cache = pinned(TILE_SIZES).unwrap_or_else(|| {
                        let mut tiles = choose(&name, &op_loops, l2_bytes);
                        if name == "linalg.matmul" {
                            whole_register_rows(&mut tiles, &op_loops, unit);
                        }
                        if broadcasts_along_rows(op, &op_loops) {
                            reuse_broadcast_rows(&mut tiles, &op_loops);
                        }
                        balance_threads(&name, &mut tiles, &op_loops, threads);
                        tiles
                    });
                    let register = pinned(VECTOR_SIZES)
                        .unwrap_or_else(|| choose_vector(&name, &op_loops, &cache, unit));
                    let sized_here = pinned(TILE_SIZES).is_none() && pinned(VECTOR_SIZES).is_none();
                    match tuning
                        .as_ref()
                        .filter(|_| sized_here && name != "linalg.fill")
                    {
                        Some(tuning) => {
                            let (cache, register, order) =
                                tuned_choice(op, &op_loops, tuning, cache, register, l2_bytes, ctx);
                            (cache, Some(register), Some(order))
                        }
                        None => (cache, Some(register), None),
                    }
                }
            };
            op.remove_attribute(TILE_SIZES);
            op.remove_attribute(VECTOR_SIZES);
            let register_level = register
                .as_ref()
                .is_some_and(|r| r.len() == op_loops.0.len());
            let vectorizable = register.as_ref().is_some_and(|register| {
                let extents = register_extents(&op_loops, &cache, register);
                !multiplies_across_unit_reduction(op, &op_loops, &extents)
            });
            let cache_loops =
                tuned_order.unwrap_or_else(|| cache_order(&name, &op_loops, &cache, l2_bytes));
            let chunks = match forced {
                Some(_) => None,
                None => thread_chunks(
                    &op_loops,
                    &cache,
                    register.as_deref(),
                    &cache_loops,
                    threads,
                ),
            };
            // A cache tile that spanned a loop the threads now split spans one run of it.
            let mut cache = cache;
            for (size, run) in cache.iter_mut().zip(chunks.iter().flatten()) {
                if *run != 0 && *size > *run {
                    *size = *run;
                }
            }
            let identity: Vec<usize> = (0..op_loops.0.len()).collect();
            let orders = [identity, cache_loops, register_order(&name, &op_loops)];
            let levels: Vec<(Vec<i64>, Vec<usize>)> = [chunks, Some(cache), register]
                .into_iter()
                .zip(orders)
                .filter_map(|(sizes, order)| Some((sizes?, order)))
                .filter(|(sizes, _)| {
                    sizes.len() == op_loops.0.len() && sizes.iter().any(|&s| s != 0)
                })
                .collect();
            if levels.is_empty() {
                return;
            }
            op.set_attribute(MARKER, melior::ir::Attribute::unit(ctx));
            if register_level && vectorizable && !op.touches_i1() {
                // Register tiles are what tessera-vectorize turns into vectors; untiled ops
                // (whole tensors) must not become vectors of the whole tensor.
                op.set_attribute(VECTORIZE, melior::ir::Attribute::unit(ctx));
            }
            let mut handle = format!("%op{count}");
            for (level, (sizes, order)) in levels.iter().enumerate() {
                let loops = sizes.iter().filter(|&&s| s != 0).count();
                let handles = vec!["!transform.any_op"; loops + 1].join(", ");
                let text = sizes
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                let interchange = if order.iter().enumerate().all(|(i, &d)| i == d) {
                    String::new()
                } else {
                    let order: Vec<String> = order.iter().map(usize::to_string).collect();
                    format!(" interchange = [{}]", order.join(", "))
                };
                let _ = writeln!(
                    tiles,
                    "    %t{count}_{level}:{} = transform.structured.tile_using_for {handle} tile_sizes [{text}]{interchange} : (!transform.any_op) -> ({handles})",
                    loops + 1
                );
                // The outermost cache tile loop over a parallel dimension that has more than
                // one tile may run on several threads (tessera-parallelize decides).
                let parallel = parallel_loop(&op_loops, sizes, order);
                if let (0, Some(position)) = (level, parallel) {
                    let _ = writeln!(
                        tiles,
                        "    transform.annotate %t{count}_0#{} \"{PARALLEL}\" : !transform.any_op",
                        position + 1
                    );
                }
                handle = format!("%t{count}_{level}#0");
            }
            count += 1;
        });
        if count > 0 {
            // One match of every marked op, split in the order they were marked (a walk's).
            let schedule = format!(
                "{SCHEDULE_HEAD}{}{tiles}{SCHEDULE_TAIL}",
                match_each(MARKER, count, "op")
            );
            apply_schedule(
                env,
                &mut module,
                &schedule,
                "of tessera-tile",
                self.name(),
                Author::Stage,
            )?;
        }
        walk(&module, |op| {
            op.remove_attribute(MARKER);
        });
        if lane_dot_count > 0 {
            run_upstream(env, &mut module, LANE_DOT_PRODUCTS, self.name())?;
        }
        if forced.is_none() {
            run_upstream(
                env,
                &mut module,
                &format!("{PACK_PANELS}{{min-readers={MIN_PANEL_READERS}}}"),
                self.name(),
            )?;
            run_upstream(env, &mut module, PAD_ROWS, self.name())?;
        }
        Ok(Program::Mlir(module))
    }
}
