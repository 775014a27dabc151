//! The clock compiled code reads where `tessera-profile-kernels` marked it
//! (src/mlir/cpu/cxx/kernel_profile.cpp): each mark ends the kernel it names, which is
//! charged the time since the previous mark. One profile per process: the tool that asks for
//! one (`tessera-run --profile`) resets it, runs one profiled module and takes it.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The time one kernel took over the calls since the last reset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelTime {
    /// The total.
    pub time: Duration,
    /// How many times it ran.
    pub runs: u64,
}

/// The profile being gathered: the last mark's time and every kernel's total.
struct Profile {
    last: Option<Instant>,
    kernels: Vec<KernelTime>,
}

static PROFILE: Mutex<Profile> = Mutex::new(Profile {
    last: None,
    kernels: Vec::new(),
});

/// The most kernels a profile counts: a mark beyond it is ignored rather than grow the table
/// without bound.
const MAX_KERNELS: usize = 1 << 20;

/// Compiled code's mark: `id` < 0 starts a function's first kernel, `id` >= 0 ends kernel
/// `id` (the label of index `id` in the module's `tessera.kernel_profile`).
extern "C" fn tessera_profile_mark(id: i64) {
    let now = Instant::now();
    let mut profile = PROFILE.lock().unwrap_or_else(|e| e.into_inner());
    let last = profile.last.replace(now);
    let (Ok(index), Some(last)) = (usize::try_from(id), last) else {
        return;
    };
    if index >= MAX_KERNELS {
        return;
    }
    if profile.kernels.len() <= index {
        profile.kernels.resize(index + 1, KernelTime::default());
    }
    let kernel = &mut profile.kernels[index];
    kernel.time += now.saturating_duration_since(last);
    kernel.runs += 1;
}

/// Forgets what was gathered.
pub fn reset() {
    let mut profile = PROFILE.lock().unwrap_or_else(|e| e.into_inner());
    profile.last = None;
    profile.kernels.clear();
}

/// What was gathered since the last reset, by kernel index (kernels that never ran are
/// missing at the end or zero).
pub fn take() -> Vec<KernelTime> {
    let mut profile = PROFILE.lock().unwrap_or_else(|e| e.into_inner());
    profile.last = None;
    std::mem::take(&mut profile.kernels)
}

/// The symbol compiled code calls.
pub fn symbols() -> [(&'static str, *mut ()); 1] {
    [("tessera_profile_mark", tessera_profile_mark as *mut ())]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_charge_the_time_since_the_previous_one() {
        reset();
        tessera_profile_mark(3);
        assert!(take().is_empty(), "a mark without a start charges nothing");
        tessera_profile_mark(-1);
        std::thread::sleep(Duration::from_millis(2));
        tessera_profile_mark(1);
        tessera_profile_mark(1);
        tessera_profile_mark(0);
        let kernels = take();
        assert_eq!(kernels.len(), 2);
        assert_eq!(kernels[1].runs, 2);
        assert_eq!(kernels[0].runs, 1);
        assert!(kernels[1].time >= Duration::from_millis(2));
        assert!(kernels[0].time < kernels[1].time);
        tessera_profile_mark(-1);
        tessera_profile_mark(i64::MAX);
        assert!(take().is_empty(), "an index past the limit is ignored");
    }
}
