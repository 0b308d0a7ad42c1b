//! Counts of the connections a cluster accepted, by protocol, and of those still open: tests
//! read them to tell how a client connects (one HTTP/2 connection for many requests, or one
//! HTTP/1.1 connection per request in flight), as a real API server's
//! `apiserver_tls_handshake_errors_total` and connection metrics would.

use std::sync::atomic::{AtomicU64, Ordering};

/// What a cluster's listener has seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Connections {
    /// Connections that negotiated HTTP/2 (ALPN `h2`).
    pub http2: u64,
    /// Connections that speak HTTP/1.1.
    pub http1: u64,
    /// Connections open now.
    pub open: u64,
}

/// The live counters behind [`Connections`].
#[derive(Debug, Default)]
pub struct ConnectionCounts {
    http2: AtomicU64,
    http1: AtomicU64,
    closed: AtomicU64,
}

impl ConnectionCounts {
    /// Counts a connection whose TLS handshake finished; the guard counts its close.
    pub fn opened(&self, http2: bool) -> OpenConnection<'_> {
        let counter = if http2 { &self.http2 } else { &self.http1 };
        counter.fetch_add(1, Ordering::AcqRel);
        OpenConnection(self)
    }

    /// The counts now.
    pub fn snapshot(&self) -> Connections {
        let http2 = self.http2.load(Ordering::Acquire);
        let http1 = self.http1.load(Ordering::Acquire);
        let closed = self.closed.load(Ordering::Acquire);
        Connections {
            http2,
            http1,
            open: (http2 + http1).saturating_sub(closed),
        }
    }
}

/// An open connection; dropping it counts its close.
pub struct OpenConnection<'a>(&'a ConnectionCounts);

impl Drop for OpenConnection<'_> {
    fn drop(&mut self) {
        self.0.closed.fetch_add(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_protocol_and_open_until_dropped() {
        let counts = ConnectionCounts::default();
        let a = counts.opened(true);
        let b = counts.opened(false);
        let c = counts.opened(true);
        assert_eq!(
            counts.snapshot(),
            Connections {
                http2: 2,
                http1: 1,
                open: 3
            }
        );
        drop(b);
        drop(a);
        assert_eq!(
            counts.snapshot(),
            Connections {
                http2: 2,
                http1: 1,
                open: 1
            }
        );
        drop(c);
        assert_eq!(counts.snapshot().open, 0);
    }
}
