//! `tessera-fuse`: XLA's fusion kinds on linalg.
//! - Loop and input fusion: chains of elementwise ops become one loop nest, and elementwise
//!   producers move into the reductions that consume them (upstream
//!   `linalg-fuse-elementwise-ops`, then `canonicalize` and `cse`). A cheap elementwise
//!   producer with several consumers (softmax's `exp(x - max)`, layer norm's `x - mean`) is
//!   first copied into each, as XLA does: recomputing a few scalar ops is cheaper than writing
//!   and reading a full intermediate tensor.
//! - Row fusion (tile-and-fuse of reductions): the last elementwise op of a chain that reads
//!   reductions (normalizations: softmax, layer norm) is tiled by rows, and its producers,
//!   the reductions included, are computed inside each row tile: a layer norm with its
//!   epilogue is one loop over row blocks whose data stays in cache, instead of a pass over
//!   the whole tensor per reduction. Row tiles are disjoint, and a root is fused only when no
//!   matmul or reduction it pulls in has a user outside the loop, so nothing expensive is
//!   computed twice.
//! - Multi-output (sibling) fusion: top-level generics (reductions or elementwise) of one
//!   function that read a common parameter over as many rows are each tiled by rows, and their row loops fused into one
//!   loop with several results (`transform.loop.fuse_sibling`), so the input is read once.
//! - Accumulated convolutions: the per-channel scales an epilogue applies to convolutions
//!   with constant filters (batch norms) are folded into the filters, and convolutions the
//!   epilogue adds are chained into one accumulator, each accumulating onto the one before.
//! - Epilogues over their residual: an epilogue that adds a tensor it is the last reader of
//!   (a residual block's shortcut) writes its result over that tensor instead of into a
//!   fresh one, which bufferizes in place.
//! - Epilogue fusion (tile-and-fuse): a matmul or convolution whose only user is an
//!   elementwise op (bias, activation, residual) is computed inside that op's tiles: the
//!   epilogue is tiled over its output with `scf.forall` and the matmul (and the fill of its
//!   accumulator) fused into the loop, so each output tile is computed once and finished in
//!   registers/cache. A matmul with several users is left alone: fusing it into each would
//!   recompute it.
//!
//! Precondition: MLIR on tensors (before bufferization).

use crate::diag::Diagnostic;
use crate::mlir::bridge::walk::{walk, WalkedOp};
use crate::mlir::cpu::cpu_model::CpuModel;
use crate::mlir::cpu::strategy::{balance_threads, epilogue_tiles};
use crate::mlir::cpu::tuning::{
    fusion_key, i64_array, kernel_key, tuning_attribute, Source, StageTuning,
    FUSION_TUNING_ATTRIBUTE,
};
use crate::mlir::pipeline::loop_nest::{divisor_at_most, loops, reads_per_element, PARALLEL};
use crate::mlir::pipeline::schedule::{
    apply_schedule, match_each, Author, SCHEDULE_HEAD, SCHEDULE_TAIL,
};
use crate::mlir::pipeline::stages::{
    expect_mlir, run_upstream, stage_error, OptionKind, Program, Stage, StageEnv, StageOption,
    StageOptions, CANONICALIZE,
};
use melior::ir::attribute::{DenseI64ArrayAttribute, IntegerAttribute};
use melior::ir::r#type::IntegerType;
use std::fmt::Write;

/// Fusion as a stage.
pub struct Fuse;

/// The ops whose elementwise consumers are fused around them.
const ANCHORS: &[&str] = &[
    "linalg.matmul",
    "linalg.batch_matmul",
    "linalg.conv_2d_nhwc_hwcf",
];

/// Markers: the epilogue (with its tile sizes), its anchor, and the anchor's accumulator fill
/// for `tessera-fuse-epilogues` (src/mlir/pipeline/cxx/epilogue_fusion.cpp); the root of a row
/// fusion and a member of a sibling group for the schedules.
const CONSUMER: &str = "tessera.fuse_consumer";
const ANCHOR: &str = "tessera.fuse_anchor";
const INIT: &str = "tessera.fuse_init";
const ROW_ROOT: &str = "tessera.fuse_rows";
const SIBLING: &str = "tessera.fuse_sibling";

/// Rewrites the epilogues that read a contraction through an `expand_shape` to read it
/// directly (src/mlir/pipeline/cxx/reshaped_epilogues.cpp), so that they fuse.
const COLLAPSE_RESHAPED_EPILOGUES: &str = "tessera-collapse-reshaped-epilogues";

/// Folds epilogues' per-channel scales into constant filters and chains the convolutions an
/// epilogue sums into one accumulator (src/mlir/pipeline/cxx/accumulated_convolutions.cpp).
const ACCUMULATE: &str = "tessera-accumulate-convolutions";

/// Makes the epilogues that read a residual they are the last reader of write over it
/// (src/mlir/pipeline/cxx/residual_in_place.cpp).
const INTO_RESIDUAL: &str = "tessera-epilogue-into-residual";

/// The most rows a row tile holds.
const ROW_TILE: i64 = 8;

/// The shortest rows worth row fusion (of the root or of a reduction it reads). Short rows
/// stay in cache between unfused kernels
/// anyway, and a fused row tile pays per tile for its temporaries and per row for reductions
/// across a partly filled vector: the seed MLP's dense 10 + softmax over 4096 rows of 10 took
/// 188 us fused, 105 us unfused.
const MIN_ROW_LENGTH: i64 = 64;

impl Stage for Fuse {
    fn name(&self) -> &'static str {
        "tessera-fuse"
    }

    fn summary(&self) -> &'static str {
        "Fuse elementwise chains, producers of reductions, and epilogues into matmul/conv tiles. Input: linalg on tensors."
    }

    fn options(&self) -> &'static [StageOption] {
        &[
            StageOption {
                name: "l2",
                doc: "bytes of L2 cache per core that matmul epilogue tiles are sized for (CPU); default: the host's",
                kind: OptionKind::Positive,
            },
            StageOption {
                name: "threads",
                doc: "threads the code will run on (default 1): convolutions' epilogue tiles divide among them as their own tiles do",
                kind: OptionKind::Positive,
            },
            StageOption {
                name: "tuning",
                doc: "a tuning cache (tessera-tune's JSON, CPU): epilogues it has an entry for are fused or not, and tiled, as it says; every epilogue fusion could take is marked tessera.fusion_tuning",
                kind: OptionKind::File,
            },
            StageOption {
                name: "cpu",
                doc: "the CPU the tuning cache's entries are looked up for; default: the host's",
                kind: OptionKind::Cpu,
            },
            StageOption {
                name: "unit",
                doc: "the vector unit the tuning cache's entries are looked up for: avx2 or avx512; default: the host's",
                kind: OptionKind::OneOf(&["avx2", "avx512"]),
            },
        ]
    }

    fn run<'c>(
        &self,
        program: Program<'c>,
        env: &StageEnv<'c, '_>,
        options: &StageOptions,
    ) -> Result<Program<'c>, Vec<Diagnostic>> {
        let l2_bytes = options
            .positive("l2", CpuModel::host().l2_bytes as u64)
            .map_err(|e| stage_error(self.name(), e))? as i64;
        let threads = options
            .positive("threads", 1)
            .map_err(|e| stage_error(self.name(), e))? as i64;
        let unit = match options
            .choice("unit", &["avx2", "avx512"])
            .map_err(|e| stage_error(self.name(), e))?
        {
            Some("avx2") => "avx2",
            Some(_) => "avx512",
            None if CpuModel::host().lanes >= 16 => "avx512",
            None => "avx2",
        };
        let tuning = StageTuning::from_options(options, unit, l2_bytes, threads)
            .map_err(|e| stage_error(self.name(), e))?;
        let mut module = expect_mlir(program, self.name())?;
        let context = env.context.context();
        let allowed = context.allow_unregistered_dialects();
        context.set_allow_unregistered_dialects(true);
        pin_reshaped_contractions(&module);
        let fused = fuse_elementwise(env, &mut module, self.name());
        walk_collect(&module, PIN).iter().for_each(WalkedOp::erase);
        context.set_allow_unregistered_dialects(allowed);
        fused?;
        // Epilogues before cse: each matmul still has its own accumulator fill, which then
        // moves into the matmul's tiles instead of being shared (and copied) across them.
        run_upstream(env, &mut module, COLLAPSE_RESHAPED_EPILOGUES, self.name())?;
        run_upstream(
            env,
            &mut module,
            &format!("{ACCUMULATE},{INTO_RESIDUAL}"),
            self.name(),
        )?;
        if mark_epilogues(env, &module, l2_bytes, threads, tuning.as_ref()) {
            run_upstream(env, &mut module, "tessera-fuse-epilogues", self.name())?;
        }
        let fuse = |module: &mut melior::ir::Module<'c>, schedule: &str| {
            let origin = "of tessera-fuse";
            apply_schedule(env, module, schedule, origin, self.name(), Author::Stage)
        };
        let mut row_loops = false;
        if let Some(schedule) = row_schedule(env, &module) {
            fuse(&mut module, &schedule)?;
            row_loops = true;
        }
        if let Some(schedule) = sibling_schedule(env, &module) {
            fuse(&mut module, &schedule)?;
            row_loops = true;
        }
        // Remove what fusion left without uses; merge the identical constants decomposition made.
        run_upstream(
            env,
            &mut module,
            &format!("{CANONICALIZE},cse"),
            self.name(),
        )?;
        hoist_invariant_producers(&module);
        if row_loops {
            fuse(&mut module, &per_tile_temporaries())?;
        }
        walk(&module, |op| {
            for marker in [CONSUMER, ANCHOR, INIT, ROW_ROOT, SIBLING] {
                op.remove_attribute(marker);
            }
        });
        Ok(Program::Mlir(module))
    }
}

/// Loop and input fusion: upstream elementwise fusion, then rounds of copying cheap shared
/// producers and fusing again; each round can expose another shared producer one step up.
fn fuse_elementwise<'c>(
    env: &StageEnv<'c, '_>,
    module: &mut melior::ir::Module<'c>,
    stage: &str,
) -> Result<(), Vec<Diagnostic>> {
    run_upstream(env, module, "linalg-fuse-elementwise-ops", stage)?;
    for _ in 0..MAX_DUPLICATION_ROUNDS {
        if !duplicate_cheap_producers(module) {
            break;
        }
        run_upstream(env, module, "linalg-fuse-elementwise-ops", stage)?;
    }
    Ok(())
}

/// The operation that holds a contraction's result during elementwise fusion.
const PIN: &str = "tessera.pin";

/// Pins the result of each matmul or convolution that a reshape reads: upstream fusion would
/// otherwise fold the reshape into it (a single-use producer), turning the named op into a
/// contraction generic over the reshaped dimensions, which tiles and vectorizes as a
/// reduction, not as a matmul (transformer_block's q, k and v: 2x slower).
fn pin_reshaped_contractions(module: &melior::ir::Module<'_>) {
    let mut pinned = Vec::new();
    walk(module, |op| {
        let reshaped = op.sole_user().is_some_and(|user| {
            matches!(
                user.name().as_str(),
                "tensor.expand_shape" | "tensor.collapse_shape"
            )
        });
        if ANCHORS.contains(&op.name().as_str()) && reshaped {
            pinned.push(op.raw());
        }
    });
    for op in pinned {
        WalkedOp::from_raw(op).pin_result(PIN);
    }
}

/// The operations named `name` in `module`, collected so that they can be changed after
/// the walk.
fn walk_collect<'c>(module: &melior::ir::Module<'c>, name: &str) -> Vec<WalkedOp<'c>> {
    let mut found = Vec::new();
    walk(module, |op| {
        if op.name() == name {
            found.push(op.raw());
        }
    });
    found.into_iter().map(WalkedOp::from_raw).collect()
}

/// Moves the linalg ops of a fused loop whose operands all come from outside it to before it,
/// in order, so that what a loop pulled in whole (attention's kᵀ,
/// which every row block of q · kᵀ reads entirely) is computed once, not once per block (W5
/// fused: 1.6 ms against 0.9 ms unfused before). MLIR's loop-invariant-code-motion leaves
/// linalg ops in place: it hoists only ops it knows to be speculatable.
fn hoist_invariant_producers(module: &melior::ir::Module<'_>) {
    for name in ["scf.for", "scf.forall"] {
        for fused_loop in walk_collect(module, name) {
            let mut body = Vec::new();
            walk(module, |op| {
                let direct = op
                    .parent()
                    .is_some_and(|owner| owner.raw().ptr == fused_loop.raw().ptr);
                if direct && op.name().starts_with("linalg.") {
                    body.push(op.raw());
                }
            });
            for op in body.into_iter().map(WalkedOp::from_raw) {
                if op.operands_defined_outside(&fused_loop) {
                    op.move_before(&fused_loop);
                }
            }
        }
    }
}

/// The schedule that gives each row tile temporaries of its own size. Fusion leaves the
/// producers it pulls into a row loop writing slices of their whole-tensor destinations (a
/// `tensor.extract_slice` of a `tensor.empty`), which bufferize to one buffer of the whole
/// intermediate (W5: 1 MB of scores for row tiles of 16 KB); a `tensor.empty` of the slice's
/// size is a buffer of one tile, allocated in the loop (W5's peak memory 1.33 -> 0.39 MB at
/// the same speed; on the GPU a fused layer norm's row sums live in shared memory). Applied
/// after CSE and [`hoist_invariant_producers`], and only inside row loops: before them, CSE
/// merged the per-tile tensors with equal ones outside the loop and the fills on them were
/// hoisted out, one buffer shared by the tiles and copied into each.
fn per_tile_temporaries() -> String {
    let any = "!transform.any_op";
    format!(
        "{SCHEDULE_HEAD}    %row_loops = transform.structured.match ops{{[\"scf.for\"]}} attributes {{{PARALLEL}}} in %root : ({any}) -> {any}\n    transform.apply_patterns to %row_loops {{\n      transform.apply_patterns.tensor.fold_tensor_empty\n    }} : {any}\n{SCHEDULE_TAIL}"
    )
}

/// Whether `op` is a linalg.generic without reduction loops.
fn is_elementwise(op: &WalkedOp<'_>) -> bool {
    op.generic_reduces() == Some(false)
}

/// Whether an operand of `op` is the result of a reduction (a generic with a reduction loop).
fn reads_reduction(op: &WalkedOp<'_>) -> bool {
    (0..op.operand_count())
        .filter_map(|i| op.operand_producer(i))
        .any(|p| p.generic_reduces() == Some(true))
}

/// Whether fusing the producers of `root` into its row loop recomputes nothing expensive and
/// tiles nothing untileable: every structured op the fusion pulls in (its producers,
/// transitively) that is not elementwise or a fill is used only by ops pulled in too (or by
/// the root), and none has an empty loop. A matmul or a
/// reduction with a user outside the loop would otherwise be computed twice.
fn row_fusion_recomputes_nothing(root: &WalkedOp<'_>) -> bool {
    let id = |op: &WalkedOp<'_>| op.raw().ptr as usize;
    let mut slice = std::collections::HashSet::from([id(root)]);
    let mut pending = vec![WalkedOp::from_raw(root.raw())];
    let mut pulled = Vec::new();
    while let Some(op) = pending.pop() {
        for producer in (0..op.operand_count()).filter_map(|i| op.operand_producer(i)) {
            if producer.name().starts_with("linalg.") && slice.insert(id(&producer)) {
                pulled.push(producer.raw());
                pending.push(producer);
            }
        }
    }
    // Everything pulled in is tiled with the root: none may have an empty loop.
    pulled.into_iter().map(WalkedOp::from_raw).all(|op| {
        let tileable = op.name() == "linalg.fill" || loops(&op).is_some();
        tileable
            && (op.name() == "linalg.fill"
                || is_elementwise(&op)
                || (op.result_count() == 1
                    && op.uses().iter().all(|(user, _)| slice.contains(&id(user)))))
    })
}

/// Marks the roots of row fusion (elementwise generics that read a reduction, feed no other
/// generic, and whose fusion recomputes nothing expensive) and returns the schedule tiling
/// each by rows and fusing its producers.
fn row_schedule(env: &StageEnv<'_, '_>, module: &melior::ir::Module<'_>) -> Option<String> {
    let unit = melior::ir::Attribute::unit(env.context.context());
    let mut fusions = String::new();
    let mut count = 0;
    walk(module, |op| {
        if !is_elementwise(op) || op.parent().is_some_and(|p| p.name() != "func.func") {
            return;
        }
        let reads_reduction = reads_reduction(op);
        let feeds_generic = op
            .uses()
            .iter()
            .any(|(user, _)| user.name() == "linalg.generic");
        let Some(op_loops) = loops(op) else { return };
        let Some(&(rows, _)) = op_loops.0.first() else {
            return;
        };
        // The rows that matter are the longest the loop reduces or writes (attention's
        // output rows are its head dimension; the reductions run over its keys).
        let row_length = (0..op.operand_count())
            .filter_map(|i| op.operand_producer(i))
            .filter_map(|producer| loops(&producer))
            .chain(std::iter::once(op_loops.clone()))
            .map(|l| {
                l.0.iter()
                    .skip(1)
                    .map(|&(extent, _)| extent)
                    .product::<i64>()
            })
            .max()
            .unwrap_or(0);
        if !reads_reduction
            || feeds_generic
            || rows <= 1
            || row_length < MIN_ROW_LENGTH
            || !row_fusion_recomputes_nothing(op)
        {
            return;
        }
        op.set_attribute(ROW_ROOT, unit);
        let mut sizes = vec!["0".to_string(); op_loops.0.len()];
        sizes[0] = divisor_at_most(rows, ROW_TILE).to_string();
        let any = "!transform.any_op";
        let _ = writeln!(
            fusions,
            "    %rt{count}, %rl{count} = transform.structured.fuse %r{count} {{tile_sizes = [{}]}} : ({any}) -> ({any}, {any})\n    transform.annotate %rl{count} \"{PARALLEL}\" : {any}",
            sizes.join(", ")
        );
        count += 1;
    });
    // One match of every root, split in the order they were marked (a walk's).
    (count > 0).then(|| {
        format!(
            "{SCHEDULE_HEAD}{}{fusions}{SCHEDULE_TAIL}",
            match_each(ROW_ROOT, count, "r")
        )
    })
}

/// A top-level generic that may share a row loop with its siblings.
struct Sibling {
    op: mlir_sys::MlirOperation,
    /// Its position among its function's top-level ops.
    position: usize,
    /// The function it is in.
    function: usize,
    rows: i64,
    loop_count: usize,
    /// The function parameters it reads.
    arguments: Vec<usize>,
    /// The position of its first user (of that user's top-level ancestor).
    first_use: usize,
}

/// The top-level generics of every function that read only function parameters, with one
/// result and a first loop that is parallel over two rows or more.
fn sibling_candidates(module: &melior::ir::Module<'_>) -> Vec<Sibling> {
    let mut candidates = Vec::new();
    let mut positions = std::collections::HashMap::new();
    let mut position = 0;
    walk(module, |op| {
        let Some(parent) = op.parent().filter(|p| p.name() == "func.func") else {
            return;
        };
        position += 1;
        positions.insert(op.raw().ptr as usize, position);
        let generic = op.name() == "linalg.generic";
        let Some(op_loops) = loops(op).filter(|_| generic && op.result_count() == 1) else {
            return;
        };
        let Some(&(rows, false)) = op_loops.0.first() else {
            return;
        };
        let inputs = op.operand_count() - 1;
        let arguments: Vec<usize> = (0..inputs).filter_map(|i| op.operand_argument(i)).collect();
        if rows >= 2 && arguments.len() == inputs {
            candidates.push(Sibling {
                op: op.raw(),
                position,
                function: parent.raw().ptr as usize,
                rows,
                loop_count: op_loops.0.len(),
                arguments,
                first_use: 0,
            });
        }
    });
    for candidate in &mut candidates {
        candidate.first_use = WalkedOp::from_raw(candidate.op)
            .uses()
            .iter()
            .filter_map(|(user, _)| {
                let mut top = WalkedOp::from_raw(user.raw());
                loop {
                    if let Some(&at) = positions.get(&(top.raw().ptr as usize)) {
                        return Some(at);
                    }
                    top = top.parent()?;
                }
            })
            .min()
            .unwrap_or(usize::MAX);
    }
    candidates
}

/// Multi-output fusion (XLA's sibling fusion): groups the top-level generics of a function
/// that read a common parameter over as many rows, marks them, and returns the schedule that
/// tiles each by rows and fuses the row loops of a group into one loop with several results,
/// or `None`. The fused loop takes the place of the group's last member, so a member joins
/// only when all its uses come after that one.
fn sibling_schedule(env: &StageEnv<'_, '_>, module: &melior::ir::Module<'_>) -> Option<String> {
    let candidates = sibling_candidates(module);
    let i64_type = IntegerType::new(env.context.context(), 64).into();
    let any = "!transform.any_op";
    let mut tiles = String::new();
    let mut fusions = String::new();
    let mut marked = 0;
    let mut grouped = vec![false; candidates.len()];
    // The fused loop of each group (row tiles: parallel).
    let mut groups = Vec::new();
    for first in 0..candidates.len() {
        let head = &candidates[first];
        let mut members: Vec<usize> = (first..candidates.len())
            .filter(|&i| {
                let c = &candidates[i];
                !grouped[i]
                    && c.function == head.function
                    && c.rows == head.rows
                    && c.arguments.iter().any(|a| head.arguments.contains(a))
            })
            .collect();
        let Some(&last) = members.last() else {
            continue;
        };
        let end = candidates[last].position;
        members.retain(|&i| i == last || candidates[i].first_use > end);
        if members.len() < 2 {
            continue;
        }
        let mut fused: Option<String> = None;
        for &i in &members {
            grouped[i] = true;
            let candidate = &candidates[i];
            WalkedOp::from_raw(candidate.op)
                .set_attribute(SIBLING, IntegerAttribute::new(i64_type, marked).into());
            let mut sizes = vec!["0".to_string(); candidate.loop_count];
            // At least two row tiles: a one-iteration loop would fold away.
            sizes[0] =
                divisor_at_most(candidate.rows, ROW_TILE.min(candidate.rows / 2)).to_string();
            let _ = writeln!(
                tiles,
                "    %s{marked} = transform.structured.match attributes {{{SIBLING} = {marked} : i64}} in %root : ({any}) -> {any}\n    %st{marked}, %sl{marked} = transform.structured.fuse %s{marked} {{tile_sizes = [{}]}} : ({any}) -> ({any}, {any})",
                sizes.join(", ")
            );
            let loop_handle = format!("%sl{marked}");
            fused = Some(match fused {
                None => loop_handle,
                Some(previous) => {
                    let _ = writeln!(
                        fusions,
                        "    %sf{marked} = transform.loop.fuse_sibling {previous} into {loop_handle} : ({any}, {any}) -> {any}"
                    );
                    format!("%sf{marked}")
                }
            });
            marked += 1;
        }
        groups.extend(fused);
    }
    // Each tiling makes its own bound constants; fuse_sibling needs the loops to share them.
    for fused_loop in &groups {
        let _ = writeln!(
            fusions,
            "    transform.annotate {fused_loop} \"{PARALLEL}\" : {any}"
        );
    }
    (marked > 0).then(|| {
        format!(
            "{SCHEDULE_HEAD}{tiles}    %funcs = transform.structured.match ops{{[\"func.func\"]}} in %root : ({any}) -> {any}\n    transform.apply_cse to %funcs : {any}\n{fusions}{SCHEDULE_TAIL}"
        )
    })
}

/// How many rounds of copying shared producers (and fusing the copies) run at most.
const MAX_DUPLICATION_ROUNDS: usize = 4;

/// The most scalar operations an elementwise payload may have to be copied into each of its
/// consumers.
const CHEAP_PAYLOAD: usize = 8;

/// What a transcendental (`math.exp`, `math.tanh`, ...) counts for in a payload: it becomes a
/// polynomial of 10 to 20 operations. A softmax's exp(x - max), copied into both the sum and
/// the normalization, was computed twice per element (attention fused slower than unfused).
const TRANSCENDENTAL_COST: usize = 12;

/// The scalar operations `op`'s payload costs, transcendentals at their polynomial's size.
fn payload_cost(op: &WalkedOp<'_>) -> usize {
    op.nested_ops()
        .iter()
        .map(|nested| {
            let name = nested.name();
            let cheap_math = ["math.absf", "math.fma", "math.sqrt", "math.rsqrt"];
            if name.starts_with("math.") && !cheap_math.contains(&name.as_str()) {
                TRANSCENDENTAL_COST
            } else {
                1
            }
        })
        .sum()
}

/// Copies each cheap elementwise generic with several uses, all by generics that read each of
/// its elements once, into every consumer after the first, so that fusion can move each copy
/// into its consumer. Returns whether anything was copied.
fn duplicate_cheap_producers(module: &melior::ir::Module<'_>) -> bool {
    let mut copies = Vec::new();
    walk(module, |op| {
        let elementwise = op.generic_reduces() == Some(false);
        if !elementwise || payload_cost(op) > CHEAP_PAYLOAD + 1 {
            return;
        }
        let uses = op.uses();
        // A copy fused into a contraction (a matmul generic reading it along rows) would be
        // recomputed once per output column: copy only where each element is read once.
        let read_once = |(user, position): &(WalkedOp<'_>, usize)| {
            reads_per_element(user, *position) == Some(1)
        };
        if uses.len() > 1 && uses.iter().all(read_once) {
            copies.push((
                op.raw(),
                uses.into_iter()
                    .skip(1)
                    .map(|(user, position)| (user.raw(), position))
                    .collect::<Vec<_>>(),
            ));
        }
    });
    for (producer, uses) in &copies {
        let producer = WalkedOp::from_raw(*producer);
        for (user, position) in uses {
            producer.clone_for(&WalkedOp::from_raw(*user), *position);
        }
    }
    !copies.is_empty()
}

/// Marks every anchor with a sole elementwise user (and the epilogue with its tile sizes, for
/// an L2 of `l2_bytes` and code on `threads` threads) for `tessera-fuse-epilogues`; returns
/// whether anything was marked. With a `tuning` cache, an anchor and epilogue it has an entry
/// for are fused, and tiled, as it says, and both are marked [`FUSION_TUNING_ATTRIBUTE`].
fn mark_epilogues(
    env: &StageEnv<'_, '_>,
    module: &melior::ir::Module<'_>,
    l2_bytes: i64,
    threads: i64,
    tuning: Option<&StageTuning>,
) -> bool {
    let ctx = env.context.context();
    let unit = melior::ir::Attribute::unit(ctx);
    let mut marked = false;
    walk(module, |op| {
        if !ANCHORS.contains(&op.name().as_str()) {
            return;
        }
        // An anchor with an empty loop (a convolution over zero channels) cannot be tiled.
        let Some(consumer) = op.sole_user().filter(|_| loops(op).is_some()) else {
            return;
        };
        let elementwise = consumer.generic_reduces() == Some(false);
        let Some(consumer_loops) = loops(&consumer).filter(|_| elementwise) else {
            return;
        };
        // An epilogue that also reads a reduction (attention's division by the softmax sum,
        // after the second matmul) is a row fusion root: its row loop takes the matmul and
        // everything before it, where an epilogue tile would take the matmul alone.
        if reads_reduction(&consumer) {
            return;
        }
        let Some(anchor_loops) = loops(op) else {
            return;
        };
        let mut sizes = epilogue_tiles(&op.name(), &anchor_loops, &consumer_loops, l2_bytes);
        balance_threads(&op.name(), &mut sizes, &consumer_loops, threads);
        if let Some(tuning) = tuning {
            let key = fusion_key(
                &kernel_key(op, &anchor_loops),
                &kernel_key(&consumer, &consumer_loops),
            );
            let entry = tuning
                .cache
                .fusion(&tuning.target, &key)
                .filter(|choice| choice.fits(&consumer_loops).is_ok());
            let (source, fuse) = match entry {
                Some(choice) => {
                    if choice.fuse {
                        sizes.clone_from(&choice.tiles);
                    }
                    (Source::Cache, choice.fuse)
                }
                None => (Source::Strategy, sizes.iter().any(|&s| s != 0)),
            };
            let choices = format!("fuse = {fuse}, tiles = {}", i64_array(&sizes));
            if let Some(attribute) = tuning_attribute(ctx, &key, source, &choices) {
                op.set_attribute(FUSION_TUNING_ATTRIBUTE, attribute);
                consumer.set_attribute(FUSION_TUNING_ATTRIBUTE, attribute);
            }
            if !fuse {
                return;
            }
        }
        if sizes.iter().all(|&s| s == 0) {
            return;
        }
        consumer.set_attribute(CONSUMER, DenseI64ArrayAttribute::new(ctx, &sizes).into());
        op.set_attribute(ANCHOR, unit);
        // The accumulator is the last operand: a fill, or the result of a convolution this
        // one accumulates onto (`ACCUMULATE`'s chains), down to that one's fill.
        let mut accumulator = op.operand_producer(op.operand_count() - 1);
        while let Some(producer) = accumulator {
            if producer.name() == "linalg.fill" {
                producer.set_attribute(INIT, unit);
                break;
            }
            if producer.name() != op.name() || producer.use_count() != 1 {
                break;
            }
            producer.set_attribute(ANCHOR, unit);
            accumulator = producer.operand_producer(producer.operand_count() - 1);
        }
        marked = true;
    });
    marked
}
