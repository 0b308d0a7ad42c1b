//! Fault injection: error rate, added latency and dropped watch streams.

use std::time::Duration;

use crate::status::ApiError;

/// Faults a test asks a cluster to inject into every API request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Faults {
    /// Fraction of requests (0.0..=1.0) answered with `error_status` instead of being served.
    pub error_rate: f64,
    /// 500, 503 or 429 (429 and 503 carry `Retry-After: 1`); 0 means 500.
    pub error_status: u16,
    /// Latency added before every request is served.
    pub latency: Duration,
    /// While true, open watch streams are closed and new ones close at once.
    pub drop_watches: bool,
    /// `Some(n)`: the next `n` writes (POST, PUT, PATCH and DELETE requests that are not
    /// dry-runs) are served, every later one is answered with `error_status` — a cluster
    /// failing midway through an apply. Counted from the `set_faults` call that set it.
    pub fail_writes_after: Option<usize>,
}

impl Faults {
    /// The injected error for this request, if the dice say so.
    pub fn roll(&self) -> Option<ApiError> {
        if self.error_rate > 0.0 && fastrand::f64() < self.error_rate {
            let code = match self.error_status {
                429 | 503 => self.error_status,
                _ => 500,
            };
            Some(ApiError::fault(code))
        } else {
            None
        }
    }
}

/// Whether a request with this method and query is a write that counts against
/// [`Faults::fail_writes_after`] (dry-runs do not).
pub fn is_write(method: &hyper::Method, query: Option<&str>) -> bool {
    let writes = matches!(
        *method,
        hyper::Method::POST | hyper::Method::PUT | hyper::Method::PATCH | hyper::Method::DELETE
    );
    let dry_run = query.is_some_and(|q| q.split('&').any(|kv| kv.starts_with("dryRun=")));
    writes && !dry_run
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_error_rate_always_fails_with_the_chosen_status() {
        let f = Faults {
            error_rate: 1.0,
            error_status: 429,
            ..Faults::default()
        };
        let e = f.roll().unwrap();
        assert_eq!((e.code, e.retry_after), (429, Some(1)));
        assert!(Faults::default().roll().is_none());
    }

    #[test]
    fn dry_runs_and_reads_are_not_writes() {
        use hyper::Method;
        assert!(is_write(
            &Method::PATCH,
            Some("fieldManager=wardn&force=true")
        ));
        assert!(!is_write(
            &Method::PATCH,
            Some("fieldManager=wardn&dryRun=All")
        ));
        assert!(!is_write(&Method::GET, None));
        assert!(is_write(&Method::DELETE, None));
    }
}
