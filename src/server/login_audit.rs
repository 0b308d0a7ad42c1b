//! The audit of failed logins, one row per source and kind of failure per window.
//!
//! A flood of failed logins would otherwise write one chained audit entry (and a few pages of
//! SQLite write-ahead log) per attempt. [`FailedLogins`] writes the *first* failure of each
//! kind from a source address (IPv6 per /64) for a user name at once — an alert on the log
//! sees it immediately — and counts the repeats within [`WINDOW`]; when the window closes
//! (the server sweeps every [`SWEEP_EVERY`], and at shutdown) the count is written as one
//! more entry: `failure: invalid credentials, 37 more from 10.0.0.1 within 60 s`. Every
//! failure is therefore in the log, chained under the audit key like any entry, either as
//! its own row or counted in its window's summary.
//!
//! Refusals that ran no password check (rate limited, server busy) are counted per source
//! whatever the user name (an address trying many names costs one row per window, naming the
//! first one and how many attempts named others). Memory is bounded: at most
//! [`MAX_TRACKED`] windows are open; opening one more closes the oldest (its count written).

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::login_limit::{MAX_TRACKED, WINDOW, address_key};
use crate::store::Store;
use crate::time::now_rfc3339;

/// How often the server writes the counts of closed windows.
pub const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// The audit action of logins.
pub const ACTION: &str = "auth.login";

/// Why a login failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Failure {
    /// The password was checked and did not match (or the user does not exist).
    InvalidCredentials,
    /// Refused by the login limiter, without a password check.
    RateLimited,
    /// Refused for want of a password-check slot.
    Busy,
}

impl Failure {
    /// The reason as the audit entry's outcome says it.
    pub fn reason(self) -> &'static str {
        match self {
            Failure::InvalidCredentials => "invalid credentials",
            Failure::RateLimited => "rate limited",
            Failure::Busy => "server busy",
        }
    }
}

/// One audit entry to write: actor and target are the user name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The user name the attempt named (cut to the login's bound).
    pub user: String,
    /// `failure: REASON (from ADDRESS)` or the window's summary.
    pub outcome: String,
}

/// Windows are keyed by source, kind, and for checked passwords the user name.
type Key = (IpAddr, Failure, Option<String>);

/// An open window: when it opened, the user name of its first failure, and the repeats.
struct Window {
    opened: Instant,
    user: String,
    repeats: u64,
    /// Repeats that named a user other than `user` (refusals are counted whatever the name).
    other_users: u64,
}

/// The address as entries name it: IPv4 as is, IPv6 as its /64.
fn source(address: IpAddr) -> String {
    match address {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("{v6}/64"),
    }
}

impl Window {
    /// The summary of a closed window, when it counted repeats.
    fn summary(&self, key: &Key) -> Option<Row> {
        if self.repeats == 0 {
            return None;
        }
        let others = if self.other_users > 0 {
            format!(" ({} naming other users)", self.other_users)
        } else {
            String::new()
        };
        Some(Row {
            user: self.user.clone(),
            outcome: format!(
                "failure: {}, {} more from {} within {} s{others}",
                key.1.reason(),
                self.repeats,
                source(key.0),
                WINDOW.as_secs(),
            ),
        })
    }
}

/// Failed logins, aggregated per window (see the module documentation).
#[derive(Default)]
pub struct FailedLogins {
    windows: Mutex<HashMap<Key, Window>>,
}

impl FailedLogins {
    /// Records a failure of `kind` for `user` from `ip` at `now`; returns the entries to
    /// write now: the failure itself if it opens a window, the summary of a window it closes.
    pub fn failed(&self, ip: IpAddr, user: &str, kind: Failure, now: Instant) -> Vec<Row> {
        let address = address_key(ip);
        let named = (kind == Failure::InvalidCredentials).then(|| user.to_string());
        let key = (address, kind, named);
        let mut windows = self.windows.lock();
        let mut rows = Vec::new();
        if let Some(window) = windows.get_mut(&key) {
            if now.saturating_duration_since(window.opened) < WINDOW {
                window.repeats += 1;
                window.other_users += u64::from(window.user != user);
                return rows;
            }
            rows.extend(window.summary(&key));
            windows.remove(&key);
        } else if windows.len() >= MAX_TRACKED {
            let oldest = windows
                .iter()
                .min_by_key(|(_, window)| window.opened)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest.and_then(|key| windows.remove_entry(&key)) {
                rows.extend(oldest.1.summary(&oldest.0));
            }
        }
        windows.insert(
            key,
            Window {
                opened: now,
                user: user.to_string(),
                repeats: 0,
                other_users: 0,
            },
        );
        rows.push(Row {
            user: user.to_string(),
            outcome: format!("failure: {} (from {ip})", kind.reason()),
        });
        rows
    }

    /// Closes the windows open for [`WINDOW`] or longer at `now` (every window with `all`):
    /// the summaries to write.
    pub fn close(&self, now: Instant, all: bool) -> Vec<Row> {
        let mut windows = self.windows.lock();
        let mut rows = Vec::new();
        windows.retain(|key, window| {
            let open = !all && now.saturating_duration_since(window.opened) < WINDOW;
            if !open {
                rows.extend(window.summary(key));
            }
            open
        });
        rows
    }

    /// Windows open now (a test hook for the bound).
    pub fn open_windows(&self) -> usize {
        self.windows.lock().len()
    }
}

/// Writes `rows` to the audit log, in order.
pub async fn write(store: &Store, rows: Vec<Row>) {
    for row in rows {
        store
            .record_audit(&row.user, ACTION, &row.user, &row.outcome, &now_rfc3339())
            .await;
    }
}

/// Writes the summaries of closed windows every [`SWEEP_EVERY`] until `stop` completes, then
/// those of every window still open.
pub async fn sweep(
    failed: &FailedLogins,
    store: &Store,
    stop: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(stop);
    let mut every = tokio::time::interval(SWEEP_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = &mut stop => break,
            _ = every.tick() => write(store, failed.close(Instant::now(), false)).await,
        }
    }
    write(store, failed.close(Instant::now(), true)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn the_first_failure_is_written_repeats_are_counted_and_summarised() {
        let failed = FailedLogins::default();
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        let first = failed.failed(A, "admin", Failure::InvalidCredentials, at(0));
        assert_eq!(
            first,
            [Row {
                user: "admin".into(),
                outcome: "failure: invalid credentials (from 10.0.0.1)".into()
            }]
        );
        for i in 1..=37 {
            assert!(
                failed
                    .failed(A, "admin", Failure::InvalidCredentials, at(i))
                    .is_empty()
            );
        }
        // Another address, user or kind opens its own window.
        assert_eq!(
            failed
                .failed(B, "admin", Failure::InvalidCredentials, at(1))
                .len(),
            1
        );
        assert_eq!(
            failed
                .failed(A, "bob", Failure::InvalidCredentials, at(1))
                .len(),
            1
        );
        assert_eq!(
            failed.failed(A, "admin", Failure::RateLimited, at(1)).len(),
            1
        );
        // Refusals count whatever the name.
        assert!(
            failed
                .failed(A, "carol", Failure::RateLimited, at(2))
                .is_empty()
        );
        assert!(failed.close(at(59), false).is_empty());
        let closed = failed.close(at(61), false);
        assert!(closed.contains(&Row {
            user: "admin".into(),
            outcome: "failure: invalid credentials, 37 more from 10.0.0.1 within 60 s".into()
        }));
        assert!(
            closed.contains(&Row {
                user: "admin".into(),
                outcome:
                    "failure: rate limited, 1 more from 10.0.0.1 within 60 s (1 naming other users)"
                        .into()
            })
        );
        assert_eq!(closed.len(), 2, "windows without repeats need no summary");
        assert_eq!(failed.open_windows(), 0);
    }

    #[test]
    fn a_failure_after_the_window_closes_it_and_opens_another() {
        let failed = FailedLogins::default();
        let start = Instant::now();
        failed.failed(A, "admin", Failure::Busy, start);
        failed.failed(A, "admin", Failure::Busy, start);
        let later = failed.failed(A, "admin", Failure::Busy, start + WINDOW);
        assert_eq!(later.len(), 2);
        assert!(
            later[0].outcome.starts_with("failure: server busy, 1 more"),
            "{later:?}"
        );
        assert_eq!(later[1].outcome, "failure: server busy (from 10.0.0.1)");
    }

    #[test]
    fn windows_are_bounded_and_the_oldest_is_closed_first() {
        let failed = FailedLogins::default();
        let start = Instant::now();
        let mut written = 0;
        for i in 0..(MAX_TRACKED as u32 + 100) {
            let ip = IpAddr::V4(std::net::Ipv4Addr::from(i));
            let at = start + Duration::from_millis(u64::from(i));
            written += failed
                .failed(ip, "u", Failure::InvalidCredentials, at)
                .len();
            written += failed
                .failed(ip, "u", Failure::InvalidCredentials, at)
                .len();
        }
        assert_eq!(failed.open_windows(), MAX_TRACKED);
        // Every window wrote its first failure; the 100 closed early wrote their counts.
        assert_eq!(written, MAX_TRACKED + 100 + 100);
        assert_eq!(failed.close(start, true).len(), MAX_TRACKED);
    }

    #[test]
    fn ipv6_sources_are_named_by_their_64() {
        let failed = FailedLogins::default();
        let now = Instant::now();
        let a: IpAddr = "2001:db8::1".parse().unwrap();
        let b: IpAddr = "2001:db8::2".parse().unwrap();
        failed.failed(a, "admin", Failure::RateLimited, now);
        assert!(
            failed
                .failed(b, "admin", Failure::RateLimited, now)
                .is_empty()
        );
        let closed = failed.close(now, true);
        assert_eq!(
            closed[0].outcome,
            "failure: rate limited, 1 more from 2001:db8::/64 within 60 s"
        );
    }
}
