//! Login rate limiting: after [`MAX_FAILURES`] failed logins for one user name within
//! [`WINDOW`], further attempts for that name are refused (429 with `Retry-After`) until the
//! oldest failure leaves the window — password guessing gets five tries a minute.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Failed logins allowed per user name within [`WINDOW`].
pub const MAX_FAILURES: usize = 5;
/// The sliding window failures are counted in.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Most user names tracked at once (names are caller-supplied); beyond it, names without a
/// failure inside the window are forgotten first.
const MAX_TRACKED: usize = 10_000;

/// Recent login failures per user name.
#[derive(Default)]
pub struct LoginLimiter {
    failures: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl LoginLimiter {
    /// An empty limiter.
    pub fn new() -> LoginLimiter {
        LoginLimiter::default()
    }

    /// How long `user` must wait at `now` before trying again; `None` if it may try now.
    pub fn retry_after(&self, user: &str, now: Instant) -> Option<Duration> {
        let mut failures = self.failures.lock();
        let recent = failures.get_mut(user)?;
        while recent
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= WINDOW)
        {
            recent.pop_front();
        }
        if recent.len() < MAX_FAILURES {
            return None;
        }
        let oldest = *recent.front()?;
        Some(WINDOW.saturating_sub(now.saturating_duration_since(oldest)))
    }

    /// Records a failed login for `user` at `now`.
    pub fn failed(&self, user: &str, now: Instant) {
        let mut failures = self.failures.lock();
        if failures.len() >= MAX_TRACKED && !failures.contains_key(user) {
            failures.retain(|_, times| {
                times
                    .back()
                    .is_some_and(|t| now.saturating_duration_since(*t) < WINDOW)
            });
        }
        let recent = failures.entry(user.to_string()).or_default();
        recent.push_back(now);
        while recent.len() > MAX_FAILURES {
            recent.pop_front();
        }
    }

    /// Forgets the failures of `user` (after a successful login).
    pub fn succeeded(&self, user: &str) {
        self.failures.lock().remove(user);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_failures_a_minute_then_wait_for_the_oldest_to_expire() {
        let limiter = LoginLimiter::new();
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        for i in 0..MAX_FAILURES as u64 {
            assert_eq!(limiter.retry_after("admin", at(i)), None);
            limiter.failed("admin", at(i));
        }
        assert_eq!(
            limiter.retry_after("admin", at(10)),
            Some(Duration::from_secs(50))
        );
        assert_eq!(limiter.retry_after("other", at(10)), None);
        assert_eq!(limiter.retry_after("admin", at(60)), None);
        limiter.failed("admin", at(60));
        assert_eq!(
            limiter.retry_after("admin", at(60)),
            Some(Duration::from_secs(1))
        );
        limiter.succeeded("admin");
        assert_eq!(limiter.retry_after("admin", at(60)), None);
    }
}
