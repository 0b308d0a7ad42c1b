//! `GET /metrics`: the reconcile metrics and the audit chain head in the Prometheus text
//! format. Public, as Prometheus scrapes without a session: it shows only aggregate numbers,
//! cluster names and the audit head (a sequence number and a MAC, which reveal no entry).
//!
//! The audit head is exposed so that a copy of it lives outside the database: a scrape history
//! of `wardn_audit_head_seq` and `wardn_audit_head_info{mac}` is what `wardn audit verify
//! --expect-head SEQ:MAC` checks a possibly truncated log against.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::AppState;
use crate::reconcile::metrics::CONTENT_TYPE;
use crate::store::audit::Head;

/// The `mac` label of `wardn_audit_head_info`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MacLabel {
    seq: i64,
    mac: String,
}

/// Renders the runner's metrics, the audit head and the webhook's deliveries.
pub async fn scrape(State(state): State<AppState>) -> impl IntoResponse {
    let mut text = state.runner().metrics_text();
    text.push_str(&audit_metrics(state.store().audit_head().as_ref()));
    text.push_str(&state.webhook().metrics_text());
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], text)
}

/// `wardn_audit_head_seq` (0 for an empty log) and `wardn_audit_head_info{seq, mac} 1`.
fn audit_metrics(head: Option<&Head>) -> String {
    let seq = Gauge::<i64>::default();
    let info = Family::<MacLabel, Gauge>::default();
    if let Some(head) = head {
        seq.set(head.seq);
        info.get_or_create(&MacLabel {
            seq: head.seq,
            mac: head.hash.clone(),
        })
        .set(1);
    }
    let mut registry = Registry::default();
    registry.register(
        "wardn_audit_head_seq",
        "Sequence number of the newest audit entry written by this process",
        seq,
    );
    registry.register(
        "wardn_audit_head_info",
        "The newest audit entry's sequence number and HMAC-SHA256 (hex) as labels",
        info,
    );
    crate::telemetry::prometheus_text(&[&registry])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_audit_head_is_a_gauge_and_an_info_metric() {
        let text = audit_metrics(Some(&Head {
            seq: 42,
            hash: "ab".repeat(32),
        }));
        assert!(text.contains("wardn_audit_head_seq 42"), "{text}");
        let info = format!(
            "wardn_audit_head_info{{seq=\"42\",mac=\"{}\"}} 1",
            "ab".repeat(32)
        );
        assert!(text.contains(&info), "{text}");
        let empty = audit_metrics(None);
        assert!(empty.contains("wardn_audit_head_seq 0"), "{empty}");
        assert!(!empty.contains("mac="), "{empty}");
    }
}
