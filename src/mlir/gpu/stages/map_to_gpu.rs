//! `tessera-map-to-gpu`: the work of bufferized functions becomes GPU kernels. Calls are
//! inlined; every piece of work is given a block forall (`tessera-form-gpu-kernels`,
//! src/mlir/gpu/cxx/kernel_regions.cpp: a fusion group is one kernel, an op that stands alone
//! another); a transform-dialect schedule tiles each standalone op by its block tile, every
//! op of a kernel by its thread tiles (the strategy's, or the `tessera.gpu_block_tiles` and
//! `tessera.gpu_thread_tiles` written on it), and maps each kernel to a `gpu.launch`, its
//! threads to `gpu.thread_id`s with a barrier after each op; buffers a kernel allocates become
//! the block's shared memory (`tessera-promote-block-buffers`); kernels are outlined into one
//! `gpu.module` (`tessera-merge-gpu-modules`). The host side of a function is then only
//! allocations, views and `gpu.launch_func`s. Precondition: bufferized MLIR.

use crate::diag::Diagnostic;
use crate::mlir::bridge::walk::{walk, WalkedOp};
use crate::mlir::gpu::strategy::{
    aligned, block_tiles, contraction_block_tiles, convolution_block_tiles, convolution_staging,
    copy_tiles, staging, thread_tiles, threads, Staging, BLOCK_TILES, CONTRACTIONS, CONVOLUTIONS,
    MULTIPLY_ADDS, THREAD_TILES,
};
use crate::mlir::pipeline::loop_nest::{buffer_loops, Loops};
use crate::mlir::pipeline::schedule::{
    apply_schedule, match_each, Author, SCHEDULE_HEAD, SCHEDULE_TAIL,
};
use crate::mlir::pipeline::stages::{
    expect_mlir, run_upstream, stage_error, Program, Stage, StageEnv, StageOptions, CANONICALIZE,
};
use melior::ir::attribute::{DenseI64ArrayAttribute, IntegerAttribute};
use melior::ir::Attribute;
use std::collections::HashMap;
use std::fmt::Write;

/// Mapping to the GPU as a stage.
pub struct MapToGpu;

/// The unit attribute `tessera-form-gpu-kernels` puts on each kernel's block forall.
const KERNEL: &str = "tessera.gpu_kernel";

/// Marks the ops that stand alone, for the schedule to tile over blocks.
const BLOCK_OP: &str = "tessera.gpu_block_op";

/// Marks the ops inside kernels, for the schedule to tile over threads.
const THREAD_OP: &str = "tessera.gpu_thread_op";

/// The most threads a block may have.
const MAX_BLOCK_THREADS: i64 = 1024;

/// The most threads a block may have along z.
const MAX_BLOCK_Z: i64 = 64;

/// What runs before the schedule: calls inlined (the host side of a GPU function launches
/// kernels; it calls nothing), every piece of work a kernel, row reductions in kernels a warp
/// per row (src/mlir/gpu/cxx/warp_reductions.cpp).
const FORM: &str = "inline,tessera-form-gpu-kernels,tessera-gpu-warp-reductions";

/// The mark `tessera-gpu-warp-reductions` puts on the forall of a warp reduction: its
/// threads, which the block must have.
const WARP_THREADS: &str = "tessera.gpu_warp_threads";

/// What runs after it: loop-invariant views hoisted, threads' register tiles of products with
/// their accumulators in registers (src/mlir/gpu/cxx/register_tiles.cpp), block buffers into
/// shared memory, constants and buffer views sunk into the kernels (for LLVM to fold them,
/// instead of kernel arguments; src/mlir/gpu/cxx/view_sinking.cpp), kernels outlined into one
/// module.
const OUTLINE: &str = "loop-invariant-code-motion,tessera-gpu-register-tiles,tessera-promote-block-buffers,tessera-sink-views-into-launches,gpu-kernel-outlining,tessera-merge-gpu-modules,cse";

/// An op whose tile goes to threads: its handle's index among the marked ones, its loops
/// (inside the block), its thread tiles and, for a contraction, how its operands are staged
/// through shared memory.
struct ThreadOp {
    handle: usize,
    loops: Loops,
    tiles: Vec<i64>,
    staging: Option<Staging>,
}

impl ThreadOp {
    /// A thread op for `op` over `loops` (its tile in the block): a contraction is staged
    /// when [`staging`] finds it pays and fits beside the `shared_used` bytes the block's
    /// other buffers take (which grow by its slices); thread tiles pinned on `op` win over
    /// the strategy's.
    fn new(op: &WalkedOp<'_>, handle: usize, loops: Loops, shared_used: &mut i64) -> Self {
        let bytes = op.operand_element_bytes(0).unwrap_or(8);
        let staged = match Staged::kind(op) {
            Some(Staged::Product) => staging(&loops, bytes, *shared_used),
            Some(Staged::Convolution) => convolution_staging(&loops, bytes, *shared_used),
            None => None,
        };
        if let Some(staged) = &staged {
            *shared_used += staged.shared_bytes(bytes);
        }
        let tiles = pinned(op, THREAD_TILES, &loops).unwrap_or_else(|| match &staged {
            Some(staged) => staged.registers.clone(),
            None => thread_tiles(&loops, 3),
        });
        ThreadOp {
            handle,
            loops,
            tiles,
            staging: staged,
        }
    }
}

/// The kinds of op whose operands may be staged through shared memory.
enum Staged {
    /// A matrix product ([`CONTRACTIONS`]).
    Product,
    /// A convolution with unit strides ([`CONVOLUTIONS`]).
    Convolution,
}

impl Staged {
    /// What kind of staged op `op` is, if any.
    fn kind(op: &WalkedOp<'_>) -> Option<Staged> {
        let name = op.name();
        if CONTRACTIONS.contains(&name.as_str()) {
            return Some(Staged::Product);
        }
        let unit_strides = op
            .attribute("strides")
            .is_some_and(|a| a.to_string().starts_with("dense<1>"));
        (CONVOLUTIONS.contains(&name.as_str()) && unit_strides).then_some(Staged::Convolution)
    }

    /// The block tiles of `op` (with `loops`) standing alone, when it is staged there.
    fn block_tiles(op: &WalkedOp<'_>, loops: &Loops) -> Option<Vec<i64>> {
        let bytes = op.operand_element_bytes(0).unwrap_or(8);
        match Staged::kind(op)? {
            Staged::Product => Some(contraction_block_tiles(loops)),
            Staged::Convolution => {
                let blocks = convolution_block_tiles(loops);
                convolution_staging(&tiled(loops, &blocks), bytes, 0).map(|_| blocks)
            }
        }
    }
}

/// One kernel of the schedule: its block tiles when it is an op that stands alone, the ops
/// whose tiles go to its threads, and the most threads a warp reduction in it takes.
#[derive(Default)]
struct Kernel {
    blocks: Option<Vec<i64>>,
    threads: Vec<ThreadOp>,
    warp_threads: i64,
}

impl Kernel {
    /// The block's threads along x, y and z: for each, the most any op distributes; more
    /// along x when a warp reduction needs more threads than that.
    fn block_dims(&self) -> [i64; 3] {
        let mut dims = [1i64; 3];
        for op in &self.threads {
            for (dim, count) in dims.iter_mut().zip(threads(&op.loops, &op.tiles)) {
                *dim = (*dim).max(count);
            }
        }
        let others: i64 = dims[1] * dims[2];
        if dims[0] * others < self.warp_threads {
            dims[0] = (self.warp_threads + others - 1) / others;
        }
        dims
    }

    /// Re-tiles every op of the kernel along one loop only, when together they would need
    /// more threads than a block may have (one op spread along x and y, another along x and
    /// z, each within bounds), or more than 64 along z (tiles pinned by a user).
    fn fit(&mut self) {
        let dims = self.block_dims();
        if dims.iter().product::<i64>() <= MAX_BLOCK_THREADS && dims[2] <= MAX_BLOCK_Z {
            return;
        }
        for op in &mut self.threads {
            op.tiles = thread_tiles(&op.loops, 1);
        }
    }
}

/// The sizes written on `op` as attribute `name` (pinned by a test or a user), when they fit
/// `loops`: one per loop, none negative, one to three tiled loops (the grid's and a block's
/// dimensions), none of them a reduction.
fn pinned(op: &WalkedOp<'_>, name: &str, loops: &Loops) -> Option<Vec<i64>> {
    let attribute = op.attribute(name)?;
    let array = DenseI64ArrayAttribute::try_from(attribute).ok()?;
    let sizes: Vec<i64> = (0..array.len())
        .map(|i| array.element(i).ok())
        .collect::<Option<_>>()?;
    let tiled = sizes.iter().filter(|&&s| s > 0).count();
    let fits = sizes.len() == loops.0.len()
        && sizes.iter().all(|&s| s >= 0)
        && (1..=3).contains(&tiled)
        && sizes
            .iter()
            .zip(&loops.0)
            .all(|(&s, &(_, reduction))| s == 0 || !reduction);
    fits.then_some(sizes)
}

/// The tiles of `loops` within `tiles` as the loops of one tile (a tile of 0 keeps its loop).
fn tiled(loops: &Loops, tiles: &[i64]) -> Loops {
    Loops(
        loops
            .0
            .iter()
            .zip(tiles)
            .map(|(&(extent, reduction), &tile)| (if tile > 0 { tile } else { extent }, reduction))
            .collect(),
    )
}

/// The mapping of the tiled loops of `tiles` (`#gpu.block` or `#gpu.thread`), innermost on x.
fn mapping(tiles: &[i64], kind: &str) -> String {
    let count = tiles.iter().filter(|&&t| t > 0).count();
    let dims: Vec<String> = (0..count)
        .rev()
        .map(|i| format!("#gpu.{kind}<{}>", ["x", "y", "z"][i]))
        .collect();
    dims.join(", ")
}

/// A list of sizes as the schedule writes them.
fn list(sizes: &[i64]) -> String {
    let items: Vec<String> = sizes.iter().map(ToString::to_string).collect();
    items.join(", ")
}

/// The innermost `scf.forall` around `op`: a kernel's block forall, or a forall of one thread
/// that `tessera-form-gpu-kernels` made.
fn enclosing_forall<'c>(op: &WalkedOp<'c>) -> Option<WalkedOp<'c>> {
    let mut parent = op.parent();
    while let Some(p) = parent {
        if p.name() == "scf.forall" {
            return Some(p);
        }
        parent = p.parent();
    }
    None
}

impl Stage for MapToGpu {
    fn name(&self) -> &'static str {
        "tessera-map-to-gpu"
    }

    fn summary(&self) -> &'static str {
        "Map work to GPU blocks and threads: a kernel per fusion group or standalone op, outlined into one gpu.module. Input: bufferized MLIR."
    }

    fn run<'c>(
        &self,
        program: Program<'c>,
        env: &StageEnv<'c, '_>,
        _: &StageOptions,
    ) -> Result<Program<'c>, Vec<Diagnostic>> {
        let mut module = expect_mlir(program, self.name())?;
        let mut problem = None;
        walk(&module, |op| {
            if problem.is_some() {
                return;
            }
            if op.touches_tensors() {
                problem = Some(format!("needs bufferized MLIR: run tessera-bufferize first ('{}' at {} works on tensors)", op.name(), op.location()));
            } else if op.name().starts_with("vector.") {
                problem = Some(format!("the module holds vector code ('{}' at {}): tessera-tile and tessera-vectorize shape work for the CPU; the GPU maps linalg ops, so leave them out of a GPU pipeline", op.name(), op.location()));
            } else if op.name().starts_with("gpu.") {
                problem = Some(format!(
                    "the module is mapped to the GPU already ('{}' at {})",
                    op.name(),
                    op.location()
                ));
            }
        });
        if let Some(problem) = problem {
            return Err(stage_error(self.name(), problem));
        }
        run_upstream(env, &mut module, FORM, self.name())?;
        let schedule = plan(&module, env)?;
        if let Some(schedule) = schedule {
            apply_schedule(
                env,
                &mut module,
                &schedule,
                "'the GPU mapping schedule'",
                self.name(),
                Author::Stage,
            )?;
        }
        walk(&module, |op| {
            for marker in [
                KERNEL,
                BLOCK_OP,
                THREAD_OP,
                BLOCK_TILES,
                THREAD_TILES,
                WARP_THREADS,
            ] {
                op.remove_attribute(marker);
            }
        });
        run_upstream(
            env,
            &mut module,
            &format!("{OUTLINE},{CANONICALIZE}"),
            self.name(),
        )?;
        Ok(Program::Mlir(module))
    }
}

/// Marks the ops of `module` for the schedule and writes it: the block tiles of standalone
/// ops, the thread tiles of every op in a kernel, each kernel's launch. `None` when there is
/// no kernel.
fn plan(
    module: &melior::ir::Module<'_>,
    env: &StageEnv<'_, '_>,
) -> Result<Option<String>, Vec<Diagnostic>> {
    let ctx = env.context.context();
    let unit = Attribute::unit(ctx);
    let contract = Attribute::parse(ctx, "#arith.fastmath<contract>").ok_or_else(|| {
        stage_error(
            "tessera-map-to-gpu",
            "cannot build #arith.fastmath<contract>",
        )
    })?;
    // Kernels in the order the schedule's handles come: the forall kernels first (walk
    // order), then the standalone ops (walk order).
    let mut forall_kernels: Vec<Kernel> = Vec::new();
    let mut forall_index: HashMap<usize, usize> = HashMap::new();
    let mut block_kernels: Vec<Kernel> = Vec::new();
    let mut thread_ops = 0usize;
    let mut shared_used: Vec<i64> = Vec::new();
    walk(module, |op| {
        if op.name() == "scf.forall" && op.attribute(KERNEL).is_some() {
            forall_index.insert(op.raw().ptr as usize, forall_kernels.len());
            forall_kernels.push(Kernel::default());
            shared_used.push(buffer_bytes(op));
            return;
        }
        if let Some(count) = op
            .attribute(WARP_THREADS)
            .and_then(|a| IntegerAttribute::try_from(a).ok())
        {
            let kernel = enclosing_forall(op)
                .and_then(|k| forall_index.get(&(k.raw().ptr as usize)).copied());
            if let Some(k) = kernel {
                forall_kernels[k].warp_threads = forall_kernels[k].warp_threads.max(count.value());
            }
            return;
        }
        let Some(loops) = buffer_loops(op) else {
            return;
        };
        if MULTIPLY_ADDS.contains(&op.name().as_str()) {
            for step in op.nested_ops() {
                if matches!(step.name().as_str(), "arith.mulf" | "arith.addf") {
                    step.set_attribute("fastmath", contract);
                }
            }
        }
        if !loops.0.iter().any(|&(_, reduction)| !reduction) {
            return;
        }
        let top_level = op.parent().is_some_and(|p| p.name() == "func.func");
        match enclosing_forall(op) {
            None if top_level => {
                let blocks = pinned(op, BLOCK_TILES, &loops)
                    .or_else(|| Staged::block_tiles(op, &loops))
                    .unwrap_or_else(|| block_tiles(&loops));
                let tile = tiled(&loops, &blocks);
                op.set_attribute(BLOCK_OP, unit);
                let thread_op = ThreadOp::new(op, block_kernels.len(), tile, &mut 0);
                block_kernels.push(Kernel {
                    threads: vec![thread_op],
                    blocks: Some(blocks),
                    warp_threads: 0,
                });
            }
            Some(kernel) if kernel.attribute(KERNEL).is_some() => {
                let Some(&k) = forall_index.get(&(kernel.raw().ptr as usize)) else {
                    return;
                };
                op.set_attribute(THREAD_OP, unit);
                let thread_op = ThreadOp::new(op, thread_ops, loops, &mut shared_used[k]);
                forall_kernels[k].threads.push(thread_op);
                thread_ops += 1;
            }
            // In a forall of one thread: it runs as it is.
            _ => {}
        }
    });
    if forall_kernels.is_empty() && block_kernels.is_empty() {
        return Ok(None);
    }
    let any = "!transform.any_op";
    let mut schedule = String::from(SCHEDULE_HEAD);
    if !forall_kernels.is_empty() {
        schedule.push_str(&match_each(KERNEL, forall_kernels.len(), "k"));
    }
    if thread_ops > 0 {
        schedule.push_str(&match_each(THREAD_OP, thread_ops, "t"));
    }
    if !block_kernels.is_empty() {
        schedule.push_str(&match_each(BLOCK_OP, block_kernels.len(), "b"));
    }
    for (k, kernel) in forall_kernels.iter_mut().enumerate() {
        kernel.fit();
        let budget = kernel.block_dims().iter().product();
        for op in &kernel.threads {
            let t = op.handle;
            distribute(
                &mut schedule,
                &format!("%t{t}"),
                &format!("t{t}"),
                op,
                budget,
            );
        }
        launch(
            &mut schedule,
            &format!("%k{k}"),
            &format!("k{k}"),
            kernel.block_dims(),
        );
    }
    for (b, kernel) in block_kernels.iter_mut().enumerate() {
        kernel.fit();
        let (Some(blocks), Some(op)) = (&kernel.blocks, kernel.threads.first()) else {
            continue;
        };
        let _ = writeln!(
            schedule,
            "    %bt{b}, %bf{b} = transform.structured.tile_using_forall %b{b} tile_sizes [{}] (mapping = [{}]) : ({any}) -> ({any}, {any})",
            list(blocks),
            mapping(blocks, "block")
        );
        let budget = kernel.block_dims().iter().product();
        distribute(
            &mut schedule,
            &format!("%bt{b}"),
            &format!("b{b}"),
            op,
            budget,
        );
        launch(
            &mut schedule,
            &format!("%bf{b}"),
            &format!("b{b}"),
            kernel.block_dims(),
        );
    }
    schedule.push_str(SCHEDULE_TAIL);
    Ok(Some(schedule))
}

/// Schedule lines that spread `op` (handle `handle`, names suffixed `name`) over the threads
/// of a block of `budget` threads: its tile by its thread tiles; for a staged contraction,
/// first its reduction in steps, each step's operand slices promoted to shared memory
/// (`memref.alloc`s in `#gpu.address_space<workgroup>`, which `tessera-promote-block-buffers`
/// makes the block's) and their copies spread over every thread of the block, consecutive
/// threads on consecutive elements (`#gpu.thread<linear_dim_*>`); the barriers between
/// copies and products come with the mapping to threads.
fn distribute(schedule: &mut String, handle: &str, name: &str, op: &ThreadOp, budget: i64) {
    let any = "!transform.any_op";
    let mut product = handle.to_string();
    if let Some(staged) = &op.staging {
        let loops = staged.steps.iter().filter(|&&s| s > 0).count();
        let left = copy_tiles(&staged.left, budget);
        let right = copy_tiles(&staged.right, budget);
        let _ = writeln!(
            schedule,
            "    %sk_{name}, %sl_{name}:{loops} = transform.structured.tile_using_for {handle} tile_sizes [{}] : ({any}) -> ({any}{})
    %sp_{name} = transform.structured.promote %sk_{name} {{operands_to_promote = [0, 1], memory_space = #gpu.address_space<workgroup>}} : ({any}) -> {any}
    %sc_{name} = transform.structured.match ops{{[\"linalg.copy\"]}} in %sl_{name}#0 : ({any}) -> {any}
    %sa_{name}, %sb_{name} = transform.split_handle %sc_{name} : ({any}) -> ({any}, {any})
    %sat_{name}, %saf_{name} = transform.structured.tile_using_forall %sa_{name} tile_sizes [{}] (mapping = [{}]) : ({any}) -> ({any}, {any})
    %sbt_{name}, %sbf_{name} = transform.structured.tile_using_forall %sb_{name} tile_sizes [{}] (mapping = [{}]) : ({any}) -> ({any}, {any})",
            list(&staged.steps),
            format!(", {any}").repeat(loops),
            list(&left),
            linear_mapping(&left),
            list(&right),
            linear_mapping(&right),
        );
        product = format!("%sp_{name}");
    }
    let _ = writeln!(
        schedule,
        "    %tt_{name}, %tf_{name} = transform.structured.tile_using_forall {product} tile_sizes [{}] (mapping = [{}]) : ({any}) -> ({any}, {any})",
        list(&op.tiles),
        mapping(&op.tiles, "thread")
    );
}

/// The linear thread mapping of the tiled loops of `tiles`, innermost on `linear_dim_0`.
fn linear_mapping(tiles: &[i64]) -> String {
    let count = tiles.iter().filter(|&&t| t > 0).count();
    let dims: Vec<String> = (0..count)
        .rev()
        .map(|i| format!("#gpu.thread<linear_dim_{i}>"))
        .collect();
    dims.join(", ")
}

/// The bytes of the buffers allocated inside `kernel`, each rounded up to 16 as
/// `tessera-promote-block-buffers` lays them out.
fn buffer_bytes(kernel: &WalkedOp<'_>) -> i64 {
    kernel
        .nested_ops()
        .iter()
        .filter(|op| op.name() == "memref.alloc")
        .map(|alloc| {
            let elements: i64 = alloc
                .shapes()
                .1
                .first()
                .cloned()
                .flatten()
                .map_or(0, |s| s.iter().product());
            aligned(elements * alloc.result_element_bytes(0).unwrap_or(8))
        })
        .sum()
}

/// Schedule lines that make the block forall `forall` a `gpu.launch` and map its thread
/// foralls to a block of `dims` threads.
fn launch(schedule: &mut String, forall: &str, name: &str, dims: [i64; 3]) {
    let any = "!transform.any_op";
    let _ = writeln!(
        schedule,
        "    %launch_{name} = transform.gpu.map_forall_to_blocks {forall} generate_gpu_launch : ({any}) -> {any}\n    transform.gpu.map_nested_forall_to_threads %launch_{name} block_dims = [{}] : ({any}) -> {any}",
        list(&dims)
    );
}
