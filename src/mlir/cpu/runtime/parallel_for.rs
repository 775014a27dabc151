//! `tessera_parallel_for`, which compiled code calls to run a parallel loop on the thread
//! pool (src/mlir/cpu/runtime/thread_pool.rs): the loop's iterations go in one range per
//! thread the call may use, consecutive ones together; the calling thread hands the others
//! to the pool, runs the first itself and returns when every range has run
//! (`tessera-outline-parallel-loops` and `tessera-launch-parallel-loops`,
//! src/mlir/cpu/cxx/parallel_calls.cpp, make the calls). A range is one task: no coroutine,
//! token or group per task as MLIR's async runtime needs.

use crate::mlir::cpu::runtime::thread_pool::{self, Task, RECHECK};
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// A loop's body: runs iterations `first .. last` with the captured values at `context`.
type Body = extern "C" fn(*mut c_void, i64, i64);

/// One call's state, shared by its ranges.
struct Call {
    body: Body,
    context: *mut c_void,
    /// Ranges handed to the pool that have not finished.
    pending: AtomicUsize,
    /// Held while a range counts itself finished, so that a sleeping caller is woken.
    finished: Mutex<()>,
    woken: Condvar,
}

// SAFETY: `context` points to the captured values on the stack of the caller, which does not
// return before every range has run; compiled bodies may run on any thread.
unsafe impl Send for Call {}
// SAFETY: as above; the rest is atomics and a mutex.
unsafe impl Sync for Call {}

/// A range of a call, as a task's argument.
struct Range {
    call: Arc<Call>,
    first: i64,
    last: i64,
}

/// Runs the range behind `argument` (a `Box<Range>`), then counts it finished.
extern "C" fn run_range(argument: *mut c_void) {
    // SAFETY: `argument` is the `Box<Range>` `parallel_for` leaked for this task, which runs
    // once.
    let range = unsafe { Box::from_raw(argument as *mut Range) };
    let call = &range.call;
    (call.body)(call.context, range.first, range.last);
    let _finished = call.finished.lock().unwrap_or_else(|e| e.into_inner());
    call.pending.fetch_sub(1, Ordering::SeqCst);
    call.woken.notify_all();
}

/// The first iteration of range `index` of `ranges` over `iterations`.
fn range_start(iterations: i64, ranges: i64, index: i64) -> i64 {
    (i128::from(iterations) * i128::from(index) / i128::from(ranges)) as i64
}

/// Runs `body(context, first, last)` over ranges that cover `0 .. iterations`, one per
/// thread the call may use (the caller's first), and returns when all have run.
extern "C" fn parallel_for(body: Body, context: *mut c_void, iterations: i64) {
    if iterations <= 0 {
        return;
    }
    let threads = thread_pool::active_workers() as i64 + 1;
    let ranges = iterations.min(threads);
    if ranges == 1 {
        body(context, 0, iterations);
        return;
    }
    let call = Arc::new(Call {
        body,
        context,
        pending: AtomicUsize::new(ranges as usize - 1),
        finished: Mutex::new(()),
        woken: Condvar::new(),
    });
    for index in 1..ranges {
        let range = Box::new(Range {
            call: Arc::clone(&call),
            first: range_start(iterations, ranges, index),
            last: range_start(iterations, ranges, index + 1),
        });
        thread_pool::spawn(Task {
            function: run_range,
            argument: Box::into_raw(range) as *mut c_void,
        });
    }
    body(context, 0, range_start(iterations, ranges, 1));
    thread_pool::wait_helping(
        || call.pending.load(Ordering::SeqCst) == 0,
        || {
            let finished = call.finished.lock().unwrap_or_else(|e| e.into_inner());
            if call.pending.load(Ordering::SeqCst) != 0 {
                drop(
                    call.woken
                        .wait_timeout(finished, RECHECK)
                        .unwrap_or_else(|e| e.into_inner()),
                );
            }
        },
    );
}

/// The runtime function by the name compiled code calls it, for the JIT's symbol table.
pub fn symbols() -> [(&'static str, *mut ()); 1] {
    [("tessera_parallel_for", parallel_for as *mut ())]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a test loop's body writes: each iteration's count of runs.
    struct Counts(Vec<AtomicUsize>);

    extern "C" fn count(context: *mut c_void, first: i64, last: i64) {
        // SAFETY: the test passes a `Counts` that outlives the call.
        let counts = unsafe { &*(context as *const Counts) };
        for i in first..last {
            counts.0[i as usize].fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn every_iteration_runs_once_whatever_the_threads() {
        for (threads, iterations) in [(1, 10), (2, 1), (2, 2), (2, 7), (3, 2), (4, 1000)] {
            thread_pool::set_active_threads(threads);
            let counts = Counts((0..iterations).map(|_| AtomicUsize::new(0)).collect());
            parallel_for(
                count,
                &counts as *const Counts as *mut c_void,
                iterations as i64,
            );
            let runs: Vec<usize> = counts.0.iter().map(|c| c.load(Ordering::SeqCst)).collect();
            assert_eq!(
                runs,
                vec![1; iterations],
                "{threads} threads, {iterations} iterations"
            );
        }
    }

    #[test]
    fn ranges_are_consecutive_and_cover_the_loop() {
        for (iterations, ranges) in [(7, 2), (2, 2), (1000, 3), (i64::MAX, 4)] {
            assert_eq!(range_start(iterations, ranges, 0), 0);
            assert_eq!(range_start(iterations, ranges, ranges), iterations);
            for index in 0..ranges {
                assert!(
                    range_start(iterations, ranges, index)
                        < range_start(iterations, ranges, index + 1)
                );
            }
        }
    }
}
