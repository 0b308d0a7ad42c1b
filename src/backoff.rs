//! Backoff arithmetic shared by everything in wardn that retries: exponential delays with
//! "equal jitter", per-key retry counts, ±10 % spreading of periodic work, and which Kubernetes
//! client errors are worth retrying at all. Used by the Git poller and the pass retries.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use parking_lot::Mutex;

/// Whether a client error is worth retrying: 429, 5xx, or no answer at all (connection
/// refused or reset, timeouts, a dropped stream).
pub fn kube_transient(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(status) => status.code == 429 || status.code >= 500,
        kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => true,
        _ => false,
    }
}

/// The delay before retry number `attempt` (1 for the first): `base · 2^(attempt-1)` capped
/// at `max`, then "equal jitter" — half of it fixed, half scaled by `jitter` in `[0, 1)` — so
/// Apps failing together do not retry together.
pub fn exponential(base: Duration, max: Duration, attempt: u32, jitter: f64) -> Duration {
    let full = doubling(base, max, attempt);
    let half = full / 2;
    half + half.mul_f64(jitter.clamp(0.0, 1.0))
}

/// `base · 2^(attempt-1)` capped at `max`, without jitter (attempt 1 is the first retry).
pub fn doubling(base: Duration, max: Duration, attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
    base.saturating_mul(factor).min(max)
}

/// A random fraction in `[0, 1)` for jitter (0.5 if the system has no randomness to give).
pub fn jitter() -> f64 {
    getrandom::u32().map_or(0.5, |n| f64::from(n) / (f64::from(u32::MAX) + 1.0))
}

/// `interval` spread by ±10 % (periodic resyncs of Apps loaded together drift apart).
pub fn spread(interval: Duration) -> Duration {
    interval.mul_f64(0.9 + 0.2 * jitter())
}

/// Per-key retry counts.
pub struct Backoff<K> {
    base: Duration,
    max: Duration,
    attempts: Mutex<HashMap<K, u32>>,
}

impl<K: Eq + Hash + Clone> Backoff<K> {
    /// Backoff from `base` doubling up to `max`.
    pub fn new(base: Duration, max: Duration) -> Backoff<K> {
        Backoff {
            base,
            max,
            attempts: Mutex::new(HashMap::new()),
        }
    }

    /// Records a transient failure of `key`; returns how long to wait before retrying: the
    /// jittered exponential delay, or `retry_after` when the cluster asked for longer.
    pub fn failure(&self, key: &K, retry_after: Option<Duration>) -> Duration {
        let attempt = {
            let mut attempts = self.attempts.lock();
            let n = attempts.entry(key.clone()).or_insert(0);
            *n = n.saturating_add(1);
            *n
        };
        let delay = exponential(self.base, self.max, attempt, jitter());
        retry_after.map_or(delay, |r| delay.max(r))
    }

    /// Records a success (or a failure not worth retrying): the next failure starts over.
    pub fn reset(&self, key: &K) {
        self.attempts.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_from_base_to_max_with_equal_jitter() {
        let (base, max) = (Duration::from_secs(1), Duration::from_secs(300));
        assert_eq!(exponential(base, max, 1, 0.0), Duration::from_millis(500));
        assert!(exponential(base, max, 1, 0.999_999) < Duration::from_secs(1));
        assert_eq!(exponential(base, max, 4, 0.0), Duration::from_secs(4));
        assert_eq!(exponential(base, max, 9, 0.0), Duration::from_secs(128));
        assert_eq!(exponential(base, max, 10, 0.0), Duration::from_secs(150));
        assert_eq!(exponential(base, max, 60, 0.0), Duration::from_secs(150));
        assert!(exponential(base, max, 60, 0.999) <= max);
        let j = jitter();
        assert!((0.0..1.0).contains(&j));
        let s = spread(Duration::from_secs(100));
        assert!(s >= Duration::from_secs(90) && s <= Duration::from_secs(110));
    }

    #[test]
    fn grows_per_key_honours_retry_after_and_resets() {
        let b: Backoff<&str> = Backoff::new(Duration::from_secs(1), Duration::from_secs(300));
        assert!(b.failure(&"a", None) <= Duration::from_secs(1));
        assert!(b.failure(&"a", None) <= Duration::from_secs(2));
        assert!(b.failure(&"a", None) >= Duration::from_secs(2));
        assert!(
            b.failure(&"b", None) <= Duration::from_secs(1),
            "keys are independent"
        );
        assert_eq!(
            b.failure(&"b", Some(Duration::from_secs(30))),
            Duration::from_secs(30),
            "a longer Retry-After wins"
        );
        b.reset(&"a");
        assert!(
            b.failure(&"a", None) <= Duration::from_secs(1),
            "reset starts over"
        );
    }
}
