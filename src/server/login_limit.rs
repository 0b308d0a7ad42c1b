//! Login rate limiting and the cost of unauthenticated password checks.
//!
//! [`LoginLimiter`] counts login *attempts* (not failures) before the password is checked, in
//! two sliding windows of [`WINDOW`]: per source address and user name ([`MAX_PER_USER`]) and
//! per source address whatever the name ([`MAX_PER_ADDRESS`]). An attempt beyond either limit
//! is refused (429 with `Retry-After`) without a password check; a successful login refunds
//! its attempt and forgets the failures of that user from that address. The limits are per
//! source address (IPv6 per /64), so a flood from one address cannot lock the real user out
//! from another. Its memory is bounded whatever the input: user names are cut to
//! [`MAX_USERNAME_CHARS`] before they reach it, and it tracks at most [`MAX_TRACKED`] keys of
//! each kind, evicting the least recently used.
//!
//! [`PasswordChecks`] caps how many argon2 checks (about 19 MiB each) run at once, and how
//! many logins may wait for one and for how long: a login beyond them gets 429 at once, so
//! under a flood attempts are refused quickly instead of queueing for seconds.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::{Semaphore, SemaphorePermit};

/// Login attempts allowed per source address and user name within [`WINDOW`].
pub const MAX_PER_USER: usize = 5;
/// Login attempts allowed per source address (any user names) within [`WINDOW`].
pub const MAX_PER_ADDRESS: usize = 20;
/// The sliding window attempts are counted in.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Most keys tracked at once, per kind (address, address and user); beyond it the key used
/// least recently is forgotten.
pub const MAX_TRACKED: usize = 10_000;
/// User names are cut to this many characters before any use (longer names exist nowhere, so
/// such a login fails without a password check).
pub const MAX_USERNAME_CHARS: usize = 64;
/// Password checks that run at once.
pub const MAX_CONCURRENT_CHECKS: usize = 2;
/// Logins that may wait for a password-check slot at once; more are refused with 429 at once.
pub const MAX_WAITING_CHECKS: usize = 4;
/// How long a login waits for a password-check slot before it is refused with 429.
pub const CHECK_WAIT: Duration = Duration::from_secs(1);

/// `name` cut to at most [`MAX_USERNAME_CHARS`] characters, at a character boundary.
pub fn bounded_username(name: &str) -> &str {
    match name.char_indices().nth(MAX_USERNAME_CHARS) {
        Some((end, _)) => &name[..end],
        None => name,
    }
}

/// The address key of a peer: IPv4 addresses as they are, IPv6 addresses by their /64 (one
/// host usually holds a whole /64).
pub fn address_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
    }
}

/// Sliding-window attempt times per key, bounded in keys.
struct Windows<K> {
    limit: usize,
    times: HashMap<K, VecDeque<Instant>>,
}

impl<K: Hash + Eq + Clone> Windows<K> {
    fn new(limit: usize) -> Self {
        Windows {
            limit,
            times: HashMap::new(),
        }
    }

    /// How long `key` must wait at `now`; `None` if it may try now.
    fn wait(&mut self, key: &K, now: Instant) -> Option<Duration> {
        let recent = self.times.get_mut(key)?;
        while recent
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= WINDOW)
        {
            recent.pop_front();
        }
        if recent.len() < self.limit {
            return None;
        }
        let oldest = *recent.front()?;
        Some(WINDOW.saturating_sub(now.saturating_duration_since(oldest)))
    }

    fn record(&mut self, key: &K, now: Instant) {
        if self.times.len() >= MAX_TRACKED && !self.times.contains_key(key) {
            self.times.retain(|_, times| {
                times
                    .back()
                    .is_some_and(|t| now.saturating_duration_since(*t) < WINDOW)
            });
            if self.times.len() >= MAX_TRACKED {
                let oldest = self
                    .times
                    .iter()
                    .min_by_key(|(_, times)| times.back().copied())
                    .map(|(key, _)| key.clone());
                if let Some(oldest) = oldest {
                    self.times.remove(&oldest);
                }
            }
        }
        let recent = self.times.entry(key.clone()).or_default();
        recent.push_back(now);
        while recent.len() > self.limit {
            recent.pop_front();
        }
    }

    /// Takes back the newest attempt of `key`.
    fn refund(&mut self, key: &K) {
        if let Some(recent) = self.times.get_mut(key) {
            recent.pop_back();
            if recent.is_empty() {
                self.times.remove(key);
            }
        }
    }

    fn forget(&mut self, key: &K) {
        self.times.remove(key);
    }

    fn len(&self) -> usize {
        self.times.len()
    }

    fn key_bytes(&self, size: impl Fn(&K) -> usize) -> usize {
        self.times.keys().map(size).sum()
    }
}

struct Limits {
    per_address: Windows<IpAddr>,
    per_user: Windows<(IpAddr, String)>,
}

/// Login attempts per source address and per (address, user name).
pub struct LoginLimiter {
    limits: Mutex<Limits>,
}

impl Default for LoginLimiter {
    fn default() -> Self {
        LoginLimiter::new()
    }
}

impl LoginLimiter {
    /// An empty limiter.
    pub fn new() -> LoginLimiter {
        LoginLimiter {
            limits: Mutex::new(Limits {
                per_address: Windows::new(MAX_PER_ADDRESS),
                per_user: Windows::new(MAX_PER_USER),
            }),
        }
    }

    /// Counts an attempt of `user` from `ip` at `now`, before its password is checked: `Ok`
    /// if it may proceed, else how long to wait (the refused attempt is not counted).
    pub fn attempt(&self, ip: IpAddr, user: &str, now: Instant) -> Result<(), Duration> {
        let address = address_key(ip);
        let pair = (address, bounded_username(user).to_string());
        let mut limits = self.limits.lock();
        let wait = [
            limits.per_address.wait(&address, now),
            limits.per_user.wait(&pair, now),
        ]
        .into_iter()
        .flatten()
        .max();
        if let Some(wait) = wait {
            return Err(wait);
        }
        limits.per_address.record(&address, now);
        limits.per_user.record(&pair, now);
        Ok(())
    }

    /// A successful login of `user` from `ip`: its attempt is refunded and its earlier
    /// failures from that address forgotten.
    pub fn succeeded(&self, ip: IpAddr, user: &str) {
        let address = address_key(ip);
        let pair = (address, bounded_username(user).to_string());
        let mut limits = self.limits.lock();
        limits.per_address.refund(&address);
        limits.per_user.forget(&pair);
    }

    /// Keys tracked (addresses, address-and-user pairs) and the bytes of the user names held:
    /// for tests and benchmarks of the limiter's bounds.
    pub fn footprint(&self) -> (usize, usize, usize) {
        let limits = self.limits.lock();
        (
            limits.per_address.len(),
            limits.per_user.len(),
            limits.per_user.key_bytes(|(_, user)| user.len()),
        )
    }
}

/// The password-check slots: at most [`MAX_CONCURRENT_CHECKS`] argon2 checks at once, at most
/// [`MAX_WAITING_CHECKS`] logins waiting for one. Counts checks, the most seen at once and the
/// logins refused for want of a slot (test hooks independent of timing).
pub struct PasswordChecks {
    slots: Semaphore,
    max_waiting: usize,
    waiting: AtomicUsize,
    running: AtomicUsize,
    peak: AtomicUsize,
    total: AtomicUsize,
    refused: AtomicUsize,
}

impl Default for PasswordChecks {
    fn default() -> Self {
        PasswordChecks::new(MAX_CONCURRENT_CHECKS, MAX_WAITING_CHECKS)
    }
}

/// A running password check; frees its slot when dropped.
pub struct CheckSlot<'a> {
    checks: &'a PasswordChecks,
    _permit: SemaphorePermit<'a>,
}

impl Drop for CheckSlot<'_> {
    fn drop(&mut self) {
        self.checks.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A login waiting for a slot; leaves the queue when dropped (served, timed out or
/// cancelled).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl PasswordChecks {
    /// `slots` checks at once, `max_waiting` logins waiting for one.
    pub fn new(slots: usize, max_waiting: usize) -> PasswordChecks {
        PasswordChecks {
            slots: Semaphore::new(slots),
            max_waiting,
            waiting: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            total: AtomicUsize::new(0),
            refused: AtomicUsize::new(0),
        }
    }

    /// A slot: at once if one is free; else, when fewer than `max_waiting` logins wait
    /// already, after waiting up to `wait`. `None` (counted as refused) otherwise.
    pub async fn acquire(&self, wait: Duration) -> Option<CheckSlot<'_>> {
        let permit = match self.slots.try_acquire() {
            Ok(permit) => Some(permit),
            Err(_) => {
                let queued = Waiting(&self.waiting);
                if self.waiting.fetch_add(1, Ordering::SeqCst) >= self.max_waiting {
                    None
                } else {
                    let permit = tokio::time::timeout(wait, self.slots.acquire()).await;
                    drop(queued);
                    permit.ok().and_then(Result::ok)
                }
            }
        };
        let Some(permit) = permit else {
            self.refused.fetch_add(1, Ordering::SeqCst);
            return None;
        };
        let running = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(running, Ordering::SeqCst);
        self.total.fetch_add(1, Ordering::SeqCst);
        Some(CheckSlot {
            checks: self,
            _permit: permit,
        })
    }

    /// The most checks seen running at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }

    /// Checks started so far.
    pub fn total(&self) -> usize {
        self.total.load(Ordering::SeqCst)
    }

    /// Logins refused so far for want of a slot (the queue was full or the wait ran out).
    pub fn refused(&self) -> usize {
        self.refused.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn attempts_are_limited_per_address_and_user_and_expire() {
        let limiter = LoginLimiter::new();
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        for i in 0..MAX_PER_USER as u64 {
            assert_eq!(limiter.attempt(A, "admin", at(i)), Ok(()));
        }
        assert_eq!(
            limiter.attempt(A, "admin", at(10)),
            Err(Duration::from_secs(50))
        );
        // Another address, or another name, is not affected.
        assert_eq!(limiter.attempt(B, "admin", at(10)), Ok(()));
        assert_eq!(limiter.attempt(A, "other", at(10)), Ok(()));
        assert_eq!(limiter.attempt(A, "admin", at(60)), Ok(()));
        assert_eq!(
            limiter.attempt(A, "admin", at(60)),
            Err(Duration::from_secs(1))
        );
        limiter.succeeded(A, "admin");
        assert_eq!(limiter.attempt(A, "admin", at(60)), Ok(()));
    }

    #[test]
    fn one_address_gets_a_bounded_number_of_names() {
        let limiter = LoginLimiter::new();
        let now = Instant::now();
        let allowed = (0..100)
            .filter(|i| limiter.attempt(A, &format!("user{i}"), now).is_ok())
            .count();
        assert_eq!(allowed, MAX_PER_ADDRESS);
        assert!(limiter.attempt(B, "admin", now).is_ok());
    }

    #[test]
    fn memory_is_bounded_whatever_the_input() {
        let limiter = LoginLimiter::new();
        let now = Instant::now();
        let long = "x".repeat(1 << 20);
        for i in 0..(MAX_TRACKED as u32 + 500) {
            let ip = IpAddr::V4(std::net::Ipv4Addr::from(i));
            let _ = limiter.attempt(ip, &long, now);
        }
        let (addresses, pairs, bytes) = limiter.footprint();
        assert!(addresses <= MAX_TRACKED && pairs <= MAX_TRACKED);
        assert!(bytes <= MAX_TRACKED * MAX_USERNAME_CHARS, "{bytes}");
    }

    #[test]
    fn ipv6_addresses_count_by_their_64() {
        let a: IpAddr = "2001:db8::1".parse().unwrap();
        let b: IpAddr = "2001:db8::ffff:2".parse().unwrap();
        assert_eq!(address_key(a), address_key(b));
        assert_eq!(bounded_username(&"é".repeat(100)).chars().count(), 64);
    }

    #[tokio::test]
    async fn password_checks_are_capped() {
        let checks = PasswordChecks::new(2, 4);
        let one = checks.acquire(Duration::from_millis(10)).await;
        let two = checks.acquire(Duration::from_millis(10)).await;
        assert!(one.is_some() && two.is_some());
        assert!(checks.acquire(Duration::from_millis(10)).await.is_none());
        drop(one);
        assert!(checks.acquire(Duration::from_millis(10)).await.is_some());
        assert_eq!((checks.peak(), checks.total(), checks.refused()), (2, 3, 1));
    }

    #[tokio::test]
    async fn logins_beyond_the_queue_are_refused_without_waiting() {
        let checks = PasswordChecks::new(1, 2);
        let _running = checks.acquire(Duration::ZERO).await.unwrap();
        // Two wait (for an hour, were the slot never freed); the third is refused at once,
        // so this test finishes although nothing frees the slot.
        let long = Duration::from_secs(3600);
        let waiters = futures_util::future::join(checks.acquire(long), checks.acquire(long));
        let third = async {
            tokio::task::yield_now().await;
            checks.acquire(long).await.is_none()
        };
        tokio::select! {
            _ = waiters => panic!("the slot was never freed"),
            refused = third => assert!(refused),
        }
        // The waiters were cancelled by the select: the queue is empty again.
        assert_eq!(checks.waiting.load(Ordering::SeqCst), 0);
        assert_eq!((checks.total(), checks.refused()), (1, 1));
    }
}
