//! Retry policy of failed passes: a pass that fails with a transient cluster error (429, 5xx,
//! timeouts, refused or dropped connections) is retried after a per-App exponential backoff
//! (jittered, reset by a success), or after the `Retry-After` the cluster asked for when that
//! is longer. Other failures (invalid spec, allowlist refusals) wait for a change instead.

use std::time::Duration;

use super::error::ReconcileError;
use crate::apply::ApplyError;
use crate::backoff::kube_transient;

/// The first retry delay.
pub const DEFAULT_BASE: Duration = Duration::from_secs(1);
/// The longest retry delay.
pub const DEFAULT_MAX: Duration = Duration::from_secs(300);

/// Whether a failed pass should be retried with backoff.
pub fn transient(err: &ReconcileError) -> bool {
    match err {
        ReconcileError::Object { error: e, .. }
        | ReconcileError::Apply(ApplyError::Kube { error: e, .. }) => kube_transient(e),
        ReconcileError::Apply(ApplyError::CrdNotEstablished { .. }) => true,
        _ => false,
    }
}

/// The delay the cluster asked for in the failed request's Status (`details.retryAfterSeconds`),
/// if any.
pub fn status_retry_after(err: &ReconcileError) -> Option<Duration> {
    let (ReconcileError::Object {
        error: kube::Error::Api(status),
        ..
    }
    | ReconcileError::Apply(ApplyError::Kube {
        error: kube::Error::Api(status),
        ..
    })) = err
    else {
        return None;
    };
    let secs = status.details.as_ref()?.retry_after_seconds;
    (secs > 0).then(|| Duration::from_secs(u64::from(secs)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16, retry_after_seconds: u32) -> kube::Error {
        let status = serde_json::json!({
            "code": code, "details": {"retryAfterSeconds": retry_after_seconds}
        });
        kube::Error::Api(Box::new(serde_json::from_value(status).unwrap()))
    }

    fn dry_run_failed(error: kube::Error) -> ReconcileError {
        ReconcileError::Object {
            object: "ConfigMap n/c (v1)".into(),
            step: "dry-run",
            error,
        }
    }

    #[test]
    fn classifies_transient_errors_and_reads_retry_after() {
        assert!(transient(&dry_run_failed(api(429, 0))));
        assert!(transient(&dry_run_failed(api(503, 0))));
        assert!(transient(&ReconcileError::Apply(ApplyError::Kube {
            object: "ConfigMap n/c".into(),
            error: api(500, 0),
        })));
        assert!(!transient(&dry_run_failed(api(403, 0))));
        assert!(!transient(&dry_run_failed(api(422, 0))));
        assert!(!transient(&ReconcileError::NothingHeld));
        assert!(transient(&dry_run_failed(kube::Error::Service(
            "connection refused".into()
        ))));
        assert_eq!(
            status_retry_after(&dry_run_failed(api(429, 7))),
            Some(Duration::from_secs(7))
        );
        assert_eq!(status_retry_after(&dry_run_failed(api(429, 0))), None);
        assert_eq!(status_retry_after(&ReconcileError::NothingHeld), None);
    }
}
