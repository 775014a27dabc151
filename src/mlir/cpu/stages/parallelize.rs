//! `tessera-parallelize`: runs the outer loops of big kernels on several threads. Candidates
//! are the loops earlier stages know to be parallel: `scf.forall` (epilogue fusion) and the
//! `scf.for` loops `tessera-tile` and `tessera-fuse` mark `tessera.parallel` (cache tiles
//! over parallel dimensions, row tiles). Of each nest only the outermost candidate runs in
//! parallel, and only when its work (operations executed, counted through the loop trip
//! counts, an operation on 2-d vectors once per row) reaches `min-work`, or its vector reads
//! and writes move [`MIN_COPY_BYTES`] or more: a task costs a few microseconds to hand over,
//! so a small model's kernels stay on the calling thread and tiny calls never pay for
//! threads, but a kernel that streams its operand runs where its producer's threads left
//! it. So are `memref.copy`s outside loops that move [`MIN_COPY_BYTES`] or more. Chosen loops
//! and copies become `scf.parallel` over one run of consecutive iterations (or rows) per thread
//! (`tessera-loops-to-parallel`), whose bodies become functions of a range of runs that the
//! thread pool calls, the caller running the first range itself and waiting for the others
//! (`tessera-outline-parallel-loops`; `tessera-lower-to-llvm` makes the call
//! `tessera_parallel_for`, src/mlir/cpu/runtime/parallel_for.rs). One run per thread: a task
//! costs a trip through the pool, and the strategy's tiles divide evenly among the threads
//! (`balance_threads`), so smaller runs bought no balance. `async-parallel-for`, used before,
//! made each task a coroutine with a token in a group: on W2 (two threads) 1440 of 3670
//! machine instructions. The module records its thread count (`tessera.threads`) so the JIT
//! lets that many threads run it. Remaining `scf.forall` loops become `scf.for`.
//! Precondition: bufferized MLIR.

use crate::diag::Diagnostic;
use crate::mlir::bridge::walk::{walk, WalkedOp};
use crate::mlir::cpu::runtime::jit::THREADS_ATTRIBUTE;
use crate::mlir::pipeline::loop_nest::PARALLEL;
use crate::mlir::pipeline::stages::{
    expect_mlir, run_upstream, stage_error, OptionKind, Program, Stage, StageEnv, StageOption,
    StageOptions,
};
use melior::ir::attribute::{DenseI64ArrayAttribute, IntegerAttribute};
use melior::ir::r#type::IntegerType;
use melior::ir::Attribute;

/// Parallelization as a stage.
pub struct Parallelize;

/// The attribute this stage puts on the loops it turns into tasks (read by
/// `tessera-loops-to-parallel`, src/mlir/cpu/cxx/parallel_loops.cpp).
const PARALLELIZE: &str = "tessera.parallelize";

/// The least work (operations executed, vector operations counting one) a loop nest must
/// have to be split across threads. A unit of work takes 0.05-0.1 ns on one core when it
/// computes (the seed MLP's first kernel at batch 64, 283k units, 12 us; attention's 3M-unit
/// matmul, 290 us) and up to 0.5 ns when it streams memory (MobileNetV2's depthwise
/// convolutions over 14 x 14 x 384, 27 us); handing a run to another thread and waiting for
/// it costs 3-4 us (a chain of tanh over 16 x 16 on two threads: 3 us on one, 5 us on two).
/// At 2^16 units MobileNetV2's small depthwise convolutions run on both threads: 3.69 -> 3.61
/// ms a call on two threads (2^18 kept them on one, 2^14 split kernels that then lost), W6 186
/// -> 134 us; batch 1 of the seed MLP (4k units) runs as on one thread.
pub const MIN_WORK: u64 = 1 << 16;

/// The least bytes a `memref.copy` outside loops must move to be split across threads (by
/// its outermost dimension of several elements). Such copies fill the interiors of padded
/// buffers: MobileNetV2's input (224 x 224 x 3, 588 KiB) into its stem's padded one took
/// 27 us on one thread, and on two the stem's halves then read the rows the calling core had
/// written: the stem took 121 us where the same convolution without padding took 74.
/// 256 KiB take 10-20 us to copy. Loops that move as much through vector reads and writes
/// run on several threads whatever their operation count: a kernel on one thread after one
/// on two reads half its operand from the other core's cache, and on this machine's cores
/// (Sapphire Rapids, virtualized) that moved about 10 GB/s, slower than memory: MobileNetV2's
/// stride-2 depthwise convolution over 28 x 28 x 192 took 0.035 ms on one thread after its
/// producer ran on two, 0.019 ms on one thread after a producer on one. The encoder layer's
/// softmax, layer norms and head transposes (128 x 768 and 12 x 128 x 128) run on two
/// threads so: 0.024-0.060 ms each where they took 0.039-0.075.
pub const MIN_COPY_BYTES: u64 = 256 << 10;

impl Stage for Parallelize {
    fn name(&self) -> &'static str {
        "tessera-parallelize"
    }

    fn summary(&self) -> &'static str {
        "Run the outer parallel loops of big kernels on several threads (calls of the thread pool). Input: bufferized MLIR."
    }

    fn options(&self) -> &'static [StageOption] {
        &[
            StageOption { name: "threads", doc: "threads to run on, the caller included (default 1: every loop stays sequential)", kind: OptionKind::Positive },
            StageOption { name: "min-work", doc: "the least work (operations executed) of a loop nest worth splitting; default 2^16 (bytes moved by a loop nest or a copy outside loops: 256 KiB, scaled alike)", kind: OptionKind::Positive },
        ]
    }

    fn run<'c>(
        &self,
        program: Program<'c>,
        env: &StageEnv<'c, '_>,
        options: &StageOptions,
    ) -> Result<Program<'c>, Vec<Diagnostic>> {
        let mut module = expect_mlir(program, self.name())?;
        let threads = options
            .positive("threads", 1)
            .map_err(|e| stage_error(self.name(), e))?;
        let min_work = options
            .positive("min-work", MIN_WORK)
            .map_err(|e| stage_error(self.name(), e))?;
        let mut on_tensors = None;
        walk(&module, |op| {
            let parallel = match op.name().as_str() {
                "scf.forall" => true,
                "scf.for" => op.attribute(PARALLEL).is_some(),
                _ => false,
            };
            if parallel && op.result_count() > 0 {
                on_tensors.get_or_insert_with(|| op.location());
            }
        });
        if let Some(location) = on_tensors {
            return Err(stage_error(
                self.name(),
                format!("needs bufferized MLIR: run tessera-bufferize first (the parallel loop at {location} still yields tensors)"),
            ));
        }
        // A smaller min-work lowers the bytes' threshold alike (min-work=1 splits every loop).
        let min_copy_bytes = (u128::from(MIN_COPY_BYTES) * u128::from(min_work)
            / u128::from(MIN_WORK))
        .clamp(1, u128::from(u64::MAX)) as u64;
        let mut chosen = 0;
        if threads > 1 {
            walk(&module, |op| {
                let split = if op.name() == "memref.copy" {
                    copied_bytes(op) >= min_copy_bytes && !has_loop_ancestor(op)
                } else {
                    is_candidate(op) && !has_candidate_ancestor(op) && {
                        let work = work(op);
                        work.operations >= min_work || work.bytes >= min_copy_bytes
                    }
                };
                if split {
                    op.set_attribute(PARALLELIZE, Attribute::unit(env.context.context()));
                    chosen += 1;
                }
            });
        }
        walk(&module, |op| op.remove_attribute(PARALLEL));
        let passes = if chosen > 0 {
            format!(
                "tessera-loops-to-parallel{{chunks={threads}}},scf-forall-to-for,tessera-outline-parallel-loops,canonicalize"
            )
        } else {
            "scf-forall-to-for".to_string()
        };
        run_upstream(env, &mut module, &passes, self.name())?;
        if chosen > 0 {
            let i64_type = IntegerType::new(env.context.context(), 64).into();
            module.as_operation_mut().set_attribute(
                THREADS_ATTRIBUTE,
                IntegerAttribute::new(i64_type, threads as i64).into(),
            );
        }
        Ok(Program::Mlir(module))
    }
}

/// Whether `op` is a loop whose iterations may run at the same time.
fn is_candidate(op: &WalkedOp<'_>) -> bool {
    match op.name().as_str() {
        "scf.forall" => true,
        "scf.for" => op.attribute(PARALLEL).is_some() && op.result_count() == 0,
        _ => false,
    }
}

/// Whether `op` is inside a loop (or any op with a region but a function).
fn has_loop_ancestor(op: &WalkedOp<'_>) -> bool {
    op.parent()
        .is_some_and(|parent| parent.name() != "func.func")
}

/// The bytes a `memref.copy` moves: its target's static size, 0 where it is dynamic.
fn copied_bytes(op: &WalkedOp<'_>) -> u64 {
    let (operands, _) = op.shapes();
    static_bytes(
        operands.get(1).cloned().flatten(),
        op.operand_element_bytes(1),
    )
}

/// The bytes of a value of static `shape` with elements of `element` bytes: 0 where either is
/// unknown or a dimension is dynamic.
fn static_bytes(shape: Option<Vec<i64>>, element: Option<i64>) -> u64 {
    let elements = shape.map_or(0, |shape| {
        shape
            .iter()
            .try_fold(1u64, |n, &d| {
                u64::try_from(d).ok().map(|d| n.saturating_mul(d))
            })
            .unwrap_or(0)
    });
    elements.saturating_mul(element.map_or(0, |b| b.max(0) as u64))
}

fn has_candidate_ancestor(op: &WalkedOp<'_>) -> bool {
    let mut ancestor = op.parent();
    while let Some(current) = ancestor {
        if is_candidate(&current) {
            return true;
        }
        ancestor = current.parent();
    }
    false
}

/// What a loop nest does: the operations it executes and the bytes its vector reads and
/// writes move.
#[derive(Clone, Copy, Default)]
struct Work {
    operations: u64,
    bytes: u64,
}

/// The work of `root` (a loop): each nested operation counts once per iteration of every
/// loop around it, `root` included, an operation on 2-d vectors once per row, and vector
/// reads and writes also their bytes. Bounds that are not constants count as one iteration
/// (an underestimate: such a loop stays sequential rather than risk a split that does not
/// pay).
fn work(root: &WalkedOp<'_>) -> Work {
    let root_trips = trip_count(root);
    root.nested_ops()
        .iter()
        .map(|op| {
            let mut trips = root_trips;
            let mut ancestor = op.parent();
            while let Some(current) = ancestor.filter(|a| a.raw().ptr != root.raw().ptr) {
                trips = trips.saturating_mul(trip_count(&current));
                ancestor = current.parent();
            }
            Work {
                operations: trips.saturating_mul(rows_worked(op)),
                bytes: trips.saturating_mul(bytes_moved(op)),
            }
        })
        .fold(Work::default(), |sum, op| Work {
            operations: sum.operations.saturating_add(op.operations),
            bytes: sum.bytes.saturating_add(op.bytes),
        })
}

/// The bytes one execution of `op` moves when it is a vector read (its result) or write (its
/// first operand), else 0.
fn bytes_moved(op: &WalkedOp<'_>) -> u64 {
    match op.name().as_str() {
        "vector.transfer_read" => static_bytes(
            op.shapes().1.first().cloned().flatten(),
            op.result_element_bytes(0),
        ),
        "vector.transfer_write" => static_bytes(
            op.shapes().0.first().cloned().flatten(),
            op.operand_element_bytes(0),
        ),
        _ => 0,
    }
}

/// The rows of vectors `op` computes or moves ([`WalkedOp::vector_rows`]) when it is a vector,
/// arithmetic or math operation, else 1: a loop carrying a 2-d accumulator, or the yield
/// that passes it on, does no work per row.
fn rows_worked(op: &WalkedOp<'_>) -> u64 {
    let name = op.name();
    let computes = ["vector.", "arith.", "math."]
        .iter()
        .any(|dialect| name.starts_with(dialect));
    if computes {
        op.vector_rows()
    } else {
        1
    }
}

/// The iterations of a loop (1 for other operations, and when a bound is not a constant).
fn trip_count(op: &WalkedOp<'_>) -> u64 {
    match op.name().as_str() {
        "scf.for" | "scf.parallel" if op.operand_count() >= 3 => {
            let bound = |i: usize| constant_index(op, i);
            match (bound(0), bound(1), bound(2)) {
                (Some(low), Some(high), Some(step)) => iterations(low, high, step),
                _ => 1,
            }
        }
        "scf.forall" => {
            let bounds = |name: &str| {
                op.attribute(name)
                    .and_then(|a| DenseI64ArrayAttribute::try_from(a).ok())
                    .map(|array| {
                        (0..array.len())
                            .filter_map(|i| array.element(i).ok())
                            .collect::<Vec<i64>>()
                    })
            };
            match (
                bounds("staticLowerBound"),
                bounds("staticUpperBound"),
                bounds("staticStep"),
            ) {
                (Some(low), Some(high), Some(step)) => low
                    .iter()
                    .zip(&high)
                    .zip(&step)
                    .map(|((&l, &h), &s)| iterations(l, h, s))
                    .product(),
                _ => 1,
            }
        }
        _ => 1,
    }
}

/// The iterations from `low` to `high` by `step`; 1 when one of them is dynamic (MLIR marks
/// dynamic entries of static bound arrays with `i64::MIN`) or the step is not positive.
fn iterations(low: i64, high: i64, step: i64) -> u64 {
    if low == i64::MIN || high == i64::MIN || step <= 0 {
        return 1;
    }
    u64::try_from((high - low).max(0)).map_or(1, |range| range.div_ceil(step as u64))
}

/// The value of operand `index` of `op` when an `arith.constant` of index type defines it.
fn constant_index(op: &WalkedOp<'_>, index: usize) -> Option<i64> {
    let producer = op.operand_producer(index)?;
    if producer.name() != "arith.constant" {
        return None;
    }
    IntegerAttribute::try_from(producer.attribute("value")?)
        .ok()
        .map(|a| a.value())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iterations_round_up_and_treat_dynamic_as_one() {
        assert_eq!(iterations(0, 1024, 16), 64);
        assert_eq!(iterations(0, 10, 4), 3);
        assert_eq!(iterations(0, i64::MIN, 1), 1);
        assert_eq!(iterations(5, 5, 1), 0);
    }
}
