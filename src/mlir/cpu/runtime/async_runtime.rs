//! MLIR's async runtime (the `mlirAsyncRuntime*` functions `convert-async-to-llvm` calls) on
//! tessera's thread pool (src/mlir/cpu/runtime/thread_pool.rs), registered with the JIT as
//! `memrefCopy` is, for MLIR input whose tasks are async operations (a pipeline with
//! `async-parallel-for`): tessera's own parallel loops call `tessera_parallel_for`
//! (src/mlir/cpu/runtime/parallel_for.rs) instead. MLIR ships the same functions in
//! `libmlir_async_runtime.so`, but loading it pulls libLLVM.so into the process and sizes its
//! pool by the machine, not by `--threads`.
//!
//! Tokens, values and groups are one reference-counted object (`AsyncObject`), as the
//! generic `mlirAsyncRuntimeAddRef`/`DropRef` require. Tokens and values start with two
//! references (the caller's and the task's, dropped when the task emplaces them), groups with
//! one, as in MLIR's own runtime.

use crate::mlir::cpu::runtime::thread_pool::{self, Task, RECHECK};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// A coroutine's resume function.
type Resume = extern "C" fn(*mut c_void);

/// The task that resumes the coroutine `handle`.
fn coroutine(handle: *mut c_void, resume: Resume) -> Task {
    Task {
        function: resume,
        argument: handle,
    }
}

/// What runs when a token, value or group becomes ready, told whether it failed.
type Awaiter = Box<dyn FnOnce(bool) + Send>;

/// Whether a token or value is ready.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Readiness {
    Pending,
    Available,
    Error,
}

/// A token's or value's readiness and the awaiters to run when it changes (a group's
/// awaiters, under the same lock).
struct Waiting {
    readiness: Readiness,
    awaiters: Vec<Awaiter>,
}

/// A token, a value or a group.
struct AsyncObject {
    references: AtomicI64,
    /// Ready (tokens, values: emplaced or failed; groups: no token pending), set under the
    /// `waiting` lock and read without it by spinning waiters.
    settled: AtomicBool,
    waiting: Mutex<Waiting>,
    ready: Condvar,
    /// Groups: tokens added or to be added that are not ready yet.
    pending: AtomicI64,
    /// Groups: tokens that ended in error.
    errors: AtomicI64,
    /// Groups: tokens added so far.
    rank: AtomicI64,
    /// Values: the storage (64-byte aligned), and its layout.
    storage: *mut u8,
    layout: Option<Layout>,
}

/// What an `AsyncObject` is created as.
enum Kind {
    Token,
    /// A value with storage of this layout.
    Value(Layout),
    /// A group that will hold this many tokens.
    Group(i64),
}

impl AsyncObject {
    fn new(kind: Kind) -> *mut AsyncObject {
        // Tokens and values have the caller's and the task's reference; a group only its
        // creator's, and is ready from the start only when it holds no tokens.
        let (references, pending, layout, settled) = match kind {
            Kind::Token => (2, 0, None, false),
            Kind::Value(layout) => (2, 0, Some(layout), false),
            Kind::Group(size) => (1, size, None, size == 0),
        };
        // SAFETY: the layout has a non-zero size (see `create_value`).
        let storage = layout.map_or(std::ptr::null_mut(), |l| unsafe { alloc_zeroed(l) });
        Box::into_raw(Box::new(AsyncObject {
            references: AtomicI64::new(references),
            settled: AtomicBool::new(settled),
            waiting: Mutex::new(Waiting {
                readiness: Readiness::Pending,
                awaiters: Vec::new(),
            }),
            ready: Condvar::new(),
            pending: AtomicI64::new(pending),
            errors: AtomicI64::new(0),
            rank: AtomicI64::new(0),
            storage,
            layout,
        }))
    }

    fn waiting(&self) -> MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for AsyncObject {
    fn drop(&mut self) {
        if let Some(layout) = self.layout {
            // SAFETY: `storage` was allocated with `layout` in `new`.
            unsafe { dealloc(self.storage, layout) };
        }
    }
}

/// The object behind a pointer compiled code holds.
fn object<'a>(pointer: *mut c_void) -> &'a AsyncObject {
    // SAFETY: compiled code passes only pointers this runtime created and still holds a
    // reference to them (reference counting is inserted by `async-runtime-ref-counting`).
    unsafe { &*(pointer as *const AsyncObject) }
}

/// A pointer that may cross threads (the object is reference counted and thread-safe).
#[derive(Clone, Copy)]
struct Shared(*mut c_void);

// SAFETY: `AsyncObject` synchronizes all its state (atomics and a mutex).
unsafe impl Send for Shared {}

/// Marks `object` ready (or failed), wakes its waiters and runs its awaiters, then drops the
/// task's reference.
fn set_ready(pointer: *mut c_void, error: bool) {
    let target = object(pointer);
    let awaiters = {
        let mut waiting = target.waiting();
        waiting.readiness = if error {
            Readiness::Error
        } else {
            Readiness::Available
        };
        target.settled.store(true, Ordering::SeqCst);
        target.ready.notify_all();
        std::mem::take(&mut waiting.awaiters)
    };
    for awaiter in awaiters {
        awaiter(error);
    }
    drop_ref(pointer, 1);
}

/// Counts one of `group`'s tokens as ready; the last one wakes its waiters and runs its
/// awaiters.
fn token_ready_in_group(group: *mut c_void, error: bool) {
    let target = object(group);
    if error {
        target.errors.fetch_add(1, Ordering::SeqCst);
    }
    let awaiters = {
        let mut waiting = target.waiting();
        if target.pending.fetch_sub(1, Ordering::SeqCst) != 1 {
            return;
        }
        target.settled.store(true, Ordering::SeqCst);
        target.ready.notify_all();
        std::mem::take(&mut waiting.awaiters)
    };
    for awaiter in awaiters {
        awaiter(false);
    }
}

/// Blocks until `pointer`'s object is settled, running queued tasks meanwhile.
fn wait_settled(pointer: *mut c_void) {
    let target = object(pointer);
    thread_pool::wait_helping(
        || target.settled.load(Ordering::SeqCst),
        || {
            let waiting = target.waiting();
            if !target.settled.load(Ordering::SeqCst) {
                drop(
                    target
                        .ready
                        .wait_timeout(waiting, RECHECK)
                        .unwrap_or_else(|e| e.into_inner()),
                );
            }
        },
    );
}

/// Resumes the coroutine when the token or value `pointer` is ready: now if it is.
fn resume_when_ready(pointer: *mut c_void, task: Task) {
    let target = object(pointer);
    let mut waiting = target.waiting();
    if waiting.readiness == Readiness::Pending {
        waiting.awaiters.push(Box::new(move |_| task.run()));
    } else {
        drop(waiting);
        task.run();
    }
}

/// Adds `count` references to a token, value or group.
extern "C" fn add_ref(pointer: *mut c_void, count: i64) {
    object(pointer)
        .references
        .fetch_add(count, Ordering::SeqCst);
}

/// Drops `count` references; the last one frees the object.
extern "C" fn drop_ref(pointer: *mut c_void, count: i64) {
    if object(pointer)
        .references
        .fetch_sub(count, Ordering::SeqCst)
        == count
    {
        // SAFETY: the object came from `Box::into_raw` in `AsyncObject::new` and this was
        // its last reference.
        drop(unsafe { Box::from_raw(pointer as *mut AsyncObject) });
    }
}

/// A new token, not ready.
extern "C" fn create_token() -> *mut c_void {
    AsyncObject::new(Kind::Token) as *mut c_void
}

/// A new value of `size` bytes, not ready.
extern "C" fn create_value(size: i64) -> *mut c_void {
    match Layout::from_size_align(usize::try_from(size).unwrap_or(0).max(1), 64) {
        Ok(layout) => AsyncObject::new(Kind::Value(layout)) as *mut c_void,
        Err(_) => std::ptr::null_mut(),
    }
}

/// A new group that will hold `size` tokens.
extern "C" fn create_group(size: i64) -> *mut c_void {
    AsyncObject::new(Kind::Group(size)) as *mut c_void
}

/// Adds `token` to `group`; returns its rank in the group.
extern "C" fn add_token_to_group(token: *mut c_void, group: *mut c_void) -> i64 {
    let rank = object(group).rank.fetch_add(1, Ordering::SeqCst);
    let target = object(token);
    let mut waiting = target.waiting();
    match waiting.readiness {
        Readiness::Pending => {
            add_ref(group, 1);
            let group = Shared(group);
            waiting.awaiters.push(Box::new(move |error| {
                let group = group;
                token_ready_in_group(group.0, error);
                drop_ref(group.0, 1);
            }));
        }
        readiness => {
            drop(waiting);
            token_ready_in_group(group, readiness == Readiness::Error);
        }
    }
    rank
}

/// Marks `token` ready.
extern "C" fn emplace_token(token: *mut c_void) {
    set_ready(token, false);
}

/// Marks `value` ready (its storage is written).
extern "C" fn emplace_value(value: *mut c_void) {
    set_ready(value, false);
}

/// Marks `token` failed.
extern "C" fn set_token_error(token: *mut c_void) {
    set_ready(token, true);
}

/// Marks `value` failed.
extern "C" fn set_value_error(value: *mut c_void) {
    set_ready(value, true);
}

/// Whether `token` failed.
extern "C" fn is_token_error(token: *mut c_void) -> bool {
    object(token).waiting().readiness == Readiness::Error
}

/// Whether `value` failed.
extern "C" fn is_value_error(value: *mut c_void) -> bool {
    object(value).waiting().readiness == Readiness::Error
}

/// Whether a token of `group` failed.
extern "C" fn is_group_error(group: *mut c_void) -> bool {
    object(group).errors.load(Ordering::SeqCst) > 0
}

/// Blocks until `token` is ready.
extern "C" fn await_token(token: *mut c_void) {
    wait_settled(token);
}

/// Blocks until `value` is ready.
extern "C" fn await_value(value: *mut c_void) {
    wait_settled(value);
}

/// Blocks until every token of `group` is ready.
extern "C" fn await_all_in_group(group: *mut c_void) {
    wait_settled(group);
}

/// The storage of `value`.
extern "C" fn get_value_storage(value: *mut c_void) -> *mut u8 {
    object(value).storage
}

/// Resumes a coroutine on the pool; on this thread when no worker may run it.
extern "C" fn execute(handle: *mut c_void, resume: Resume) {
    thread_pool::spawn(coroutine(handle, resume));
}

/// Resumes a coroutine when `token` is ready.
extern "C" fn await_token_and_execute(token: *mut c_void, handle: *mut c_void, resume: Resume) {
    resume_when_ready(token, coroutine(handle, resume));
}

/// Resumes a coroutine when `value` is ready.
extern "C" fn await_value_and_execute(value: *mut c_void, handle: *mut c_void, resume: Resume) {
    resume_when_ready(value, coroutine(handle, resume));
}

/// Resumes a coroutine when every token of `group` is ready.
extern "C" fn await_all_in_group_and_execute(
    group: *mut c_void,
    handle: *mut c_void,
    resume: Resume,
) {
    let task = coroutine(handle, resume);
    let target = object(group);
    let mut waiting = target.waiting();
    if target.pending.load(Ordering::SeqCst) == 0 {
        drop(waiting);
        task.run();
    } else {
        waiting.awaiters.push(Box::new(move |_| task.run()));
    }
}

/// The threads a call may use (the caller and the active workers); MLIR's name has the typo.
extern "C" fn get_num_worker_threads() -> i64 {
    thread_pool::active_workers() as i64 + 1
}

/// Prints the calling thread's id (for debugging compiled code).
extern "C" fn print_current_thread_id() {
    println!("Current thread id: {:?}", std::thread::current().id());
}

/// Every runtime function by the name compiled code calls it, for the JIT's symbol table.
pub fn symbols() -> [(&'static str, *mut ()); 23] {
    [
        ("mlirAsyncRuntimeAddRef", add_ref as *mut ()),
        ("mlirAsyncRuntimeDropRef", drop_ref as *mut ()),
        ("mlirAsyncRuntimeCreateToken", create_token as *mut ()),
        ("mlirAsyncRuntimeCreateValue", create_value as *mut ()),
        ("mlirAsyncRuntimeCreateGroup", create_group as *mut ()),
        (
            "mlirAsyncRuntimeAddTokenToGroup",
            add_token_to_group as *mut (),
        ),
        ("mlirAsyncRuntimeEmplaceToken", emplace_token as *mut ()),
        ("mlirAsyncRuntimeEmplaceValue", emplace_value as *mut ()),
        ("mlirAsyncRuntimeSetTokenError", set_token_error as *mut ()),
        ("mlirAsyncRuntimeSetValueError", set_value_error as *mut ()),
        ("mlirAsyncRuntimeIsTokenError", is_token_error as *mut ()),
        ("mlirAsyncRuntimeIsValueError", is_value_error as *mut ()),
        ("mlirAsyncRuntimeIsGroupError", is_group_error as *mut ()),
        ("mlirAsyncRuntimeAwaitToken", await_token as *mut ()),
        ("mlirAsyncRuntimeAwaitValue", await_value as *mut ()),
        (
            "mlirAsyncRuntimeAwaitAllInGroup",
            await_all_in_group as *mut (),
        ),
        (
            "mlirAsyncRuntimeGetValueStorage",
            get_value_storage as *mut (),
        ),
        ("mlirAsyncRuntimeExecute", execute as *mut ()),
        (
            "mlirAsyncRuntimeAwaitTokenAndExecute",
            await_token_and_execute as *mut (),
        ),
        (
            "mlirAsyncRuntimeAwaitValueAndExecute",
            await_value_and_execute as *mut (),
        ),
        (
            "mlirAsyncRuntimeAwaitAllInGroupAndExecute",
            await_all_in_group_and_execute as *mut (),
        ),
        (
            "mlirAsyncRuntimGetNumWorkerThreads",
            get_num_worker_threads as *mut (),
        ),
        (
            "mlirAsyncRuntimePrintCurrentThreadId",
            print_current_thread_id as *mut (),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A task as compiled code would hand it over: its state behind the coroutine handle.
    struct Job {
        runs: AtomicUsize,
        token: *mut c_void,
        fail: bool,
    }

    extern "C" fn run_job(handle: *mut c_void) {
        // SAFETY: the handle is a `Job` the test keeps alive until its group is awaited.
        let job = unsafe { &*(handle as *const Job) };
        job.runs.fetch_add(1, Ordering::SeqCst);
        if job.fail {
            set_token_error(job.token);
        } else {
            emplace_token(job.token);
        }
    }

    /// Runs `count` jobs (failing those `fail` picks) on `threads` threads; returns how often
    /// each ran and whether the group failed.
    fn run_jobs(threads: usize, count: usize, fail: impl Fn(usize) -> bool) -> (Vec<usize>, bool) {
        thread_pool::set_active_threads(threads);
        let group = create_group(count as i64);
        let jobs: Vec<Box<Job>> = (0..count)
            .map(|i| {
                Box::new(Job {
                    runs: AtomicUsize::new(0),
                    token: create_token(),
                    fail: fail(i),
                })
            })
            .collect();
        for job in &jobs {
            assert!(add_token_to_group(job.token, group) >= 0);
            execute(&**job as *const Job as *mut c_void, run_job);
        }
        await_all_in_group(group);
        let failed = is_group_error(group);
        let runs = jobs.iter().map(|j| j.runs.load(Ordering::SeqCst)).collect();
        for job in &jobs {
            drop_ref(job.token, 1);
        }
        drop_ref(group, 1);
        (runs, failed)
    }

    #[test]
    fn every_task_runs_once_and_the_group_waits_for_all() {
        for threads in [1, 3] {
            let (runs, failed) = run_jobs(threads, 64, |_| false);
            assert_eq!(runs, vec![1; 64], "{threads} threads");
            assert!(!failed);
        }
    }

    #[test]
    fn a_failed_token_fails_its_group() {
        let (runs, failed) = run_jobs(2, 8, |i| i == 5);
        assert_eq!(runs, vec![1; 8]);
        assert!(failed);
    }

    #[test]
    fn values_have_aligned_storage_and_an_empty_group_is_ready() {
        let value = create_value(24);
        assert_eq!(get_value_storage(value) as usize % 64, 0);
        emplace_value(value);
        await_value(value);
        assert!(!is_value_error(value));
        drop_ref(value, 1);
        let group = create_group(0);
        await_all_in_group(group);
        drop_ref(group, 1);
    }
}
