//! Timing repeated calls: a warm-up, then as many calls as fit a time budget (within bounds),
//! summarized by quantiles, which are robust to the outliers of a noisy machine.

use std::time::{Duration, Instant};

/// The latency of repeated calls.
#[derive(Clone, Debug, PartialEq)]
pub struct Latency {
    /// Calls timed (after the warm-up).
    pub runs: usize,
    /// Median, 10th and 90th percentile.
    pub median: Duration,
    /// The 10th percentile.
    pub p10: Duration,
    /// The 90th percentile.
    pub p90: Duration,
}

/// How long to measure.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Total time for the timed calls (the warm-up comes on top, a tenth of it).
    pub time: Duration,
    /// At least this many timed calls, whatever they cost.
    pub min_runs: usize,
    /// At most this many.
    pub max_runs: usize,
}

/// Times `call` under `budget`; the first error stops it.
pub fn time_calls<E>(
    budget: Budget,
    mut call: impl FnMut() -> Result<(), E>,
) -> Result<Latency, E> {
    let warm_up_end = Instant::now() + budget.time / 10;
    call()?;
    while Instant::now() < warm_up_end {
        call()?;
    }
    let mut samples = Vec::with_capacity(budget.min_runs.max(64));
    let end = Instant::now() + budget.time;
    while samples.len() < budget.min_runs
        || (samples.len() < budget.max_runs && Instant::now() < end)
    {
        let start = Instant::now();
        call()?;
        samples.push(start.elapsed());
    }
    Ok(summarize(samples))
}

/// The quantiles of `samples` (at least one).
pub fn summarize(mut samples: Vec<Duration>) -> Latency {
    samples.sort();
    let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Latency {
        runs: samples.len(),
        median: pick(0.5),
        p10: pick(0.1),
        p90: pick(0.9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_known_samples() {
        let samples = (1..=11).rev().map(Duration::from_millis).collect();
        let latency = summarize(samples);
        assert_eq!(latency.runs, 11);
        assert_eq!(latency.median, Duration::from_millis(6));
        assert_eq!(latency.p10, Duration::from_millis(2));
        assert_eq!(latency.p90, Duration::from_millis(10));
    }

    #[test]
    fn the_budget_bounds_the_runs() {
        let budget = Budget {
            time: Duration::from_millis(5),
            min_runs: 3,
            max_runs: 7,
        };
        let mut calls = 0;
        let latency = time_calls::<()>(budget, || {
            calls += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(latency.runs, 7);
        assert!(calls > 7, "the warm-up calls too");
        let slow = Budget {
            time: Duration::from_millis(1),
            min_runs: 3,
            max_runs: 100,
        };
        let latency = time_calls::<()>(slow, || {
            std::thread::sleep(Duration::from_millis(2));
            Ok(())
        })
        .unwrap();
        assert_eq!(latency.runs, 3, "min_runs even past the budget");
    }
}
