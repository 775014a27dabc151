//! tessera's thread pool, on which compiled code runs the parts of its parallel loops
//! (src/mlir/cpu/runtime/parallel_for.rs) and, for MLIR input that has async tasks, their
//! coroutines (src/mlir/cpu/runtime/async_runtime.rs). The pool has the workers the most
//! demanding module asked for, a call uses as many as its own module was compiled for
//! ([`set_active_threads`]), each thread queues its tasks on a deque of its own and steals
//! the oldest of another's when it has none, waiting threads run queued tasks instead of
//! sleeping, and idle workers spin a little before they sleep, so that back-to-back calls do
//! not pay a wake-up.

use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A task: a function of one pointer, and the pointer.
#[derive(Clone, Copy)]
pub(super) struct Task {
    pub function: extern "C" fn(*mut c_void),
    pub argument: *mut c_void,
}

// SAFETY: the runtimes only queue functions that may run on any thread, with arguments that
// stay valid until the task has run (a coroutine's frame, a parallel loop's range on the
// stack of a caller that waits for it).
unsafe impl Send for Task {}

/// How many threads are running a task: inside compiled code or about to enter it.
static RUNNING_TASKS: AtomicUsize = AtomicUsize::new(0);

impl Task {
    /// Runs the task on this thread.
    pub(super) fn run(self) {
        RUNNING_TASKS.fetch_add(1, Ordering::SeqCst);
        (self.function)(self.argument);
        RUNNING_TASKS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Returns once no thread of the pool is inside compiled code. A task may mark its work done
/// before it returns (an async token made ready before its coroutine's last instructions),
/// so the call that waited for it can return, and its module be freed, while a worker still
/// runs: a `Jit` waits here before it frees its code.
pub fn wait_until_no_task_runs() {
    while RUNNING_TASKS.load(Ordering::SeqCst) > 0 {
        std::thread::yield_now();
    }
}

/// The pool: queued tasks and the workers that run them. Each thread queues the tasks it
/// spawns on a deque of its own (every calling thread shares the first), takes its own most
/// recent first, and when it has none takes the oldest of another's: with a loop's blocks
/// split in halves, the other thread takes the far half first and the same thread tends to
/// get the same rows from one layer to the next, so a layer reads what its own core wrote.
/// One shared queue handed each block to whichever thread asked first (MobileNetV2 on two
/// threads: the worker ran 4.3 ms of blocks a call and the caller 2.5 ms of queued ones
/// besides its own, more than the whole parallel work on one thread).
struct Pool {
    deques: [Mutex<VecDeque<Task>>; DEQUES],
    queued: AtomicUsize,
    /// Held by a worker from the moment it counts itself sleeping until it waits on `work`.
    sleep: Mutex<()>,
    work: Condvar,
    /// Workers started.
    workers: Mutex<usize>,
    /// The deques in use: the callers' and one per started worker (at most [`DEQUES`]).
    deques_in_use: AtomicUsize,
    /// Workers that may take tasks (the running module's threads, less the caller).
    active: AtomicUsize,
    sleeping: AtomicUsize,
}

/// The deques: the calling threads' and one per worker (workers beyond share them).
const DEQUES: usize = 64;

static POOL: Pool = Pool {
    deques: [const { Mutex::new(VecDeque::new()) }; DEQUES],
    queued: AtomicUsize::new(0),
    sleep: Mutex::new(()),
    work: Condvar::new(),
    workers: Mutex::new(0),
    deques_in_use: AtomicUsize::new(1),
    active: AtomicUsize::new(0),
    sleeping: AtomicUsize::new(0),
};

thread_local! {
    /// This thread's deque: 0 for calling threads, set by each worker.
    static HOME: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How long an idle worker spins, looking for tasks, before it sleeps; and a waiting thread
/// before it sleeps (the blocks still running elsewhere are about as long as the ones just
/// run here, and a thread woken from sleep took tens of microseconds on a virtual machine,
/// more than whole kernels of a small model).
pub(super) const SPIN: Duration = Duration::from_micros(200);

/// How long a waiting thread sleeps before it looks at the queue again.
pub(super) const RECHECK: Duration = Duration::from_micros(50);

/// Worker threads get the main thread's stack size: compiled code keeps vector temporaries
/// on the stack.
const WORKER_STACK: usize = 8 << 20;

impl Pool {
    fn deque(&self, index: usize) -> MutexGuard<'_, VecDeque<Task>> {
        self.deques[index].lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, task: Task) {
        self.deque(HOME.get()).push_back(task);
        self.queued.fetch_add(1, Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) > 0 {
            let _sleep = self.sleep.lock().unwrap_or_else(|e| e.into_inner());
            self.work.notify_all();
        }
    }

    /// This thread's newest task, else the oldest of the next deque in use that has one
    /// (looking only at those: locking all 64 took a worker over a microsecond per steal).
    fn pop(&self) -> Option<Task> {
        if self.queued.load(Ordering::SeqCst) == 0 {
            return None;
        }
        let home = HOME.get();
        // One deque locked at a time: the guard of the own deque is dropped before another is
        // locked (held through the whole expression, two thieves deadlocked on each other's).
        let own = self.deque(home).pop_back();
        let in_use = self.deques_in_use.load(Ordering::SeqCst).clamp(1, DEQUES);
        let task = own.or_else(|| {
            (1..in_use).find_map(|offset| {
                let mut other = self.deque((home + offset) % in_use);
                other.pop_front()
            })
        });
        if task.is_some() {
            self.queued.fetch_sub(1, Ordering::SeqCst);
        }
        task
    }

    /// Runs one queued task on this thread; whether there was one.
    fn help(&self) -> bool {
        self.pop().map(Task::run).is_some()
    }

    fn worker(&self, index: usize) {
        HOME.set(1 + index % (DEQUES - 1));
        let mut idle_since = Instant::now();
        loop {
            let allowed = index < self.active.load(Ordering::SeqCst);
            if allowed && self.help() {
                idle_since = Instant::now();
                continue;
            }
            if allowed && idle_since.elapsed() < SPIN {
                std::hint::spin_loop();
                continue;
            }
            // Counted sleeping before looking at the queue, and `push` counts its task before
            // looking at the sleepers: one of the two sees the other, so no wake-up is lost.
            let sleep = self.sleep.lock().unwrap_or_else(|e| e.into_inner());
            self.sleeping.fetch_add(1, Ordering::SeqCst);
            let allowed = index < self.active.load(Ordering::SeqCst);
            if allowed && self.queued.load(Ordering::SeqCst) > 0 {
                self.sleeping.fetch_sub(1, Ordering::SeqCst);
                continue;
            }
            let (sleep, _) = self
                .work
                .wait_timeout(sleep, Duration::from_millis(100))
                .unwrap_or_else(|e| e.into_inner());
            self.sleeping.fetch_sub(1, Ordering::SeqCst);
            drop(sleep);
            idle_since = Instant::now();
        }
    }
}

/// Lets calls from now on run on `threads` threads: the caller and `threads - 1` workers,
/// started when first needed. Call before invoking code compiled for that many threads.
pub fn set_active_threads(threads: usize) {
    let wanted = threads.saturating_sub(1);
    if POOL.active.load(Ordering::SeqCst) == wanted {
        return;
    }
    let mut workers = POOL.workers.lock().unwrap_or_else(|e| e.into_inner());
    while *workers < wanted {
        let index = *workers;
        let spawned = std::thread::Builder::new()
            .name(format!("tessera-worker-{index}"))
            .stack_size(WORKER_STACK)
            .spawn(move || POOL.worker(index));
        if spawned.is_err() {
            break;
        }
        *workers += 1;
        POOL.deques_in_use
            .store((1 + *workers).min(DEQUES), Ordering::SeqCst);
    }
    POOL.active.store(wanted.min(*workers), Ordering::SeqCst);
    let _sleep = POOL.sleep.lock().unwrap_or_else(|e| e.into_inner());
    POOL.work.notify_all();
}

/// Runs `task` on the pool; on this thread when no worker may run it.
pub(super) fn spawn(task: Task) {
    if POOL.active.load(Ordering::SeqCst) == 0 {
        task.run();
    } else {
        POOL.push(task);
    }
}

/// The workers a call may use besides its own thread.
pub(super) fn active_workers() -> usize {
    POOL.active.load(Ordering::SeqCst)
}

/// Returns once `done` holds, running queued tasks meanwhile; then, for [`SPIN`], spinning;
/// then calling `sleep`, which returns after at most [`RECHECK`] or when `done` may hold.
pub(super) fn wait_helping(done: impl Fn() -> bool, mut sleep: impl FnMut()) {
    let start = Instant::now();
    while !done() {
        if POOL.help() {
            continue;
        }
        if start.elapsed() < SPIN {
            std::hint::spin_loop();
            continue;
        }
        sleep();
    }
}
