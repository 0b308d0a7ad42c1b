//! Login rate limiting and the cost of unauthenticated password checks.
//!
//! [`LoginLimiter`] counts login *attempts* (not failures) before the password is checked, in
//! two sliding windows of [`WINDOW`]: per source address and user name ([`MAX_PER_USER`]) and
//! per source address whatever the name ([`MAX_PER_ADDRESS`]). An attempt beyond either limit
//! is refused (429 with `Retry-After`) without a password check; a successful login refunds
//! its attempt and forgets the failures of that user from that address. The limits are per
//! source address (IPv6 per /64), so a flood from one address cannot lock the real user out
//! from another. The attempts are counted in the store ([`crate::store::login_attempts`]), so
//! server replicas sharing one PostgreSQL together allow only these attempts, whichever
//! replica each request reaches. The rows are bounded whatever the input: user names are cut
//! to [`MAX_USERNAME_CHARS`] before they reach it, a subject holds at most its limit of rows,
//! rows leave after the window, and the table keeps at most [`MAX_ROWS`], the oldest going
//! first.
//!
//! [`PasswordChecks`] caps how many argon2 checks (about 19 MiB each) run at once, and how
//! many logins may wait for one and for how long: a login beyond them gets 429 at once, so
//! under a flood attempts are refused quickly instead of queueing for seconds.

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};

use crate::store::login_attempts::AttemptLimits;
use crate::store::{Store, StoreError};

/// Login attempts allowed per source address and user name within [`WINDOW`].
pub const MAX_PER_USER: usize = 5;
/// Login attempts allowed per source address (any user names) within [`WINDOW`].
pub const MAX_PER_ADDRESS: usize = 20;
/// The sliding window attempts are counted in.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Most keys tracked at once, per kind (address, address and user), where they are kept in
/// memory (the failed-login audit's aggregation).
pub const MAX_TRACKED: usize = 10_000;
/// Most login-attempt rows the store keeps (every replica together); beyond it the oldest go.
pub const MAX_ROWS: i64 = 50_000;
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

/// Login attempts per source address and per (address, user name), counted in the store.
pub struct LoginLimiter {
    store: Store,
}

/// An attempt the limiter admitted: what a successful login refunds.
#[derive(Debug, Clone)]
pub struct Admitted {
    /// The attempt's row under its address.
    address_row: String,
    /// The (address, user name) subject, whose failures a success forgets.
    pair: String,
}

impl LoginLimiter {
    /// A limiter counting in `store`.
    pub fn new(store: Store) -> LoginLimiter {
        LoginLimiter { store }
    }

    /// Counts an attempt of `user` from `ip` at `now_ms` (Unix milliseconds), before its
    /// password is checked: `Ok(admitted)` if it may proceed, else how long to wait (the
    /// refused attempt is not counted).
    pub async fn attempt(
        &self,
        ip: IpAddr,
        user: &str,
        now_ms: i64,
    ) -> Result<Result<Admitted, Duration>, StoreError> {
        let address = address_key(ip);
        let address_subject = format!("a {address}");
        let pair = format!("u {address} {}", bounded_username(user));
        let limits = AttemptLimits {
            subjects: vec![
                (address_subject, MAX_PER_ADDRESS),
                (pair.clone(), MAX_PER_USER),
            ],
            window_ms: i64::try_from(WINDOW.as_millis()).unwrap_or(i64::MAX),
            max_rows: MAX_ROWS,
        };
        Ok(
            match self.store.count_login_attempt(&limits, now_ms).await? {
                Ok(counted) => Ok(Admitted {
                    address_row: counted.rows.into_iter().next().unwrap_or_default(),
                    pair,
                }),
                Err(ms) => Err(Duration::from_millis(u64::try_from(ms).unwrap_or(1))),
            },
        )
    }

    /// A successful login after `admitted`: its attempt is refunded and the earlier failures
    /// of that user from that address forgotten.
    pub async fn succeeded(&self, admitted: &Admitted) -> Result<(), StoreError> {
        self.store
            .forget_login_attempts(&admitted.address_row, &admitted.pair)
            .await
    }

    /// The attempt rows kept and the longest subject's bytes: for tests and benchmarks of
    /// the limiter's bounds.
    pub async fn footprint(&self) -> Result<(i64, i64), StoreError> {
        self.store.login_attempts_footprint().await
    }
}

/// The current time in Unix milliseconds, as [`LoginLimiter::attempt`] takes it.
pub fn now_ms() -> i64 {
    let now = jiff::Timestamp::now();
    now.as_millisecond()
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

    /// A limiter on a fresh SQLite store (and the directory holding it).
    async fn limiter() -> (LoginLimiter, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).await.unwrap();
        (LoginLimiter::new(store), dir)
    }

    #[tokio::test]
    async fn attempts_are_limited_per_address_and_user_and_expire() {
        let (limiter, _dir) = limiter().await;
        let start = 1_700_000_000_000i64;
        let at = |secs: i64| start + secs * 1000;
        for i in 0..MAX_PER_USER as i64 {
            assert!(limiter.attempt(A, "admin", at(i)).await.unwrap().is_ok());
        }
        assert_eq!(
            limiter
                .attempt(A, "admin", at(10))
                .await
                .unwrap()
                .unwrap_err(),
            Duration::from_secs(50)
        );
        // Another address, or another name, is not affected.
        assert!(limiter.attempt(B, "admin", at(10)).await.unwrap().is_ok());
        assert!(limiter.attempt(A, "other", at(10)).await.unwrap().is_ok());
        let admitted = limiter.attempt(A, "admin", at(60)).await.unwrap().unwrap();
        assert_eq!(
            limiter
                .attempt(A, "admin", at(60))
                .await
                .unwrap()
                .unwrap_err(),
            Duration::from_secs(1)
        );
        limiter.succeeded(&admitted).await.unwrap();
        assert!(limiter.attempt(A, "admin", at(60)).await.unwrap().is_ok());
    }

    #[tokio::test]
    async fn one_address_gets_a_bounded_number_of_names() {
        let (limiter, _dir) = limiter().await;
        let now = now_ms();
        let mut allowed = 0;
        for i in 0..100 {
            if limiter
                .attempt(A, &format!("user{i}"), now)
                .await
                .unwrap()
                .is_ok()
            {
                allowed += 1;
            }
        }
        assert_eq!(allowed, MAX_PER_ADDRESS);
        assert!(limiter.attempt(B, "admin", now).await.unwrap().is_ok());
    }

    #[tokio::test]
    async fn rows_are_bounded_whatever_the_input_and_leave_after_the_window() {
        let (limiter, _dir) = limiter().await;
        let now = now_ms();
        let long = "x".repeat(1 << 20);
        for i in 0..300u32 {
            let ip = IpAddr::V4(std::net::Ipv4Addr::from(i));
            let _ = limiter.attempt(ip, &long, now).await.unwrap();
        }
        let (rows, longest) = limiter.footprint().await.unwrap();
        assert_eq!(rows, 600, "one row per address and per pair");
        assert!(
            longest <= 2 + 39 + 1 + 4 * MAX_USERNAME_CHARS as i64,
            "{longest}"
        );
        // One attempt after the window: every earlier row has left.
        let later = now + i64::try_from(WINDOW.as_millis()).unwrap();
        limiter.attempt(A, "admin", later).await.unwrap().unwrap();
        assert_eq!(limiter.footprint().await.unwrap().0, 2);
        // Beyond the total cap the oldest rows go first.
        for i in 0..20i64 {
            let limits = AttemptLimits {
                subjects: vec![(format!("a 10.1.0.{i}"), 5)],
                window_ms: 60_000,
                max_rows: 10,
            };
            let counted = limiter.store.count_login_attempt(&limits, later + i).await;
            counted.unwrap().unwrap();
        }
        assert_eq!(limiter.footprint().await.unwrap().0, 10);
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
