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
}
