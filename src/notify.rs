//! Notifications: what happened to an App (a plan Held for approval, approved, rejected, a
//! promotion, Degraded, Failed), posted to webhooks as a generic JSON document signed with
//! HMAC-SHA256 (`X-Wardn-Signature: sha256=HEX` over the body, under `--notify-secret`) or as
//! a Slack-compatible incoming-webhook payload (`{"text": …}`). Delivery runs off the
//! reconcile path: [`Notifier::send`] only queues, and each delivery is retried with
//! exponential backoff on its own task.

use std::time::Duration;

use hmac::{Hmac, Mac};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::Sha256;
use tokio::sync::mpsc;

use crate::backoff::doubling;

/// The signature header of the generic JSON payload.
pub const SIGNATURE_HEADER: &str = "X-Wardn-Signature";

/// How many deliveries may wait before new notifications are dropped (and logged).
const QUEUE: usize = 1024;
/// How often one delivery is tried.
const ATTEMPTS: u32 = 6;
/// The first retry's delay (doubling up to [`MAX_DELAY`]).
const FIRST_DELAY: Duration = Duration::from_millis(250);
const MAX_DELAY: Duration = Duration::from_secs(30);
/// Time limit of one attempt.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The payload a notification URL receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// The generic JSON document, HMAC-signed.
    #[default]
    Json,
    /// A Slack-compatible incoming-webhook payload (`{"text": …}`).
    Slack,
}

/// One notification URL (an entry of an App's `spec.notify`, or `--notify-url`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// The `http://` or `https://` URL to POST to.
    pub url: String,
    /// `json` (default) or `slack`.
    #[serde(default)]
    pub format: Format,
}

impl Target {
    /// Refuses a URL that is not `http(s)://HOST…`.
    pub fn validate(&self) -> Result<(), String> {
        let rest = self
            .url
            .strip_prefix("https://")
            .or_else(|| self.url.strip_prefix("http://"));
        match rest {
            Some(rest) if !rest.is_empty() && !rest.starts_with('/') => Ok(()),
            _ => Err(format!(
                "notify url {:?}: expected http:// or https:// and a host",
                self.url
            )),
        }
    }
}

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Event {
    /// A plan waits for approval.
    Held,
    /// A Held plan was approved.
    Approved,
    /// A Held plan was rejected.
    Rejected,
    /// Digests were promoted onto the App.
    Promoted,
    /// Applied, but not healthy.
    Degraded,
    /// The pass failed.
    Failed,
}

/// One notification about one App.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Notification {
    /// What happened.
    pub event: Event,
    /// The App's key (`namespace/name`).
    pub app: String,
    /// The App as the API addresses it (`CLUSTER/NAME`).
    pub address: String,
    /// The revision concerned.
    pub revision: Option<String>,
    /// The plan's hash (Held, approved, rejected).
    pub plan_hash: Option<String>,
    /// A one-line summary (the plan's counts, the promotion, the error).
    pub summary: String,
    /// Where to approve (`POST`), for a Held plan when `--public-url` is set.
    pub approve_url: Option<String>,
    /// When (RFC 3339).
    pub at: String,
}

impl Notification {
    /// The generic JSON body.
    pub fn json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The Slack incoming-webhook body.
    pub fn slack(&self) -> Value {
        let mut text = format!("*{:?}* {}: {}", self.event, self.address, self.summary);
        if let Some(url) = &self.approve_url {
            text.push_str(&format!("\nApprove: `POST {url}`"));
            if let Some(hash) = &self.plan_hash {
                text.push_str(&format!(" with `{{\"plan_hash\":\"{hash}\"}}`"));
            }
        }
        json!({ "text": text })
    }
}

/// `sha256=HEX` of HMAC-SHA256 over `body` under `secret`.
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    // HMAC takes keys of any length.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).unwrap_or_else(|_| unreachable!());
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// Queues notifications and delivers them in the background.
#[derive(Clone)]
pub struct Notifier {
    queue: mpsc::Sender<(Vec<Target>, Notification)>,
    global: Vec<Target>,
}

impl Notifier {
    /// Starts the delivery task: every notification goes to `global` and to the targets it
    /// is sent with, JSON payloads signed with `secret` (unsigned without one). Must be
    /// called inside a tokio runtime.
    pub fn start(global: Vec<Target>, secret: Option<String>) -> Notifier {
        let (queue, mut received) = mpsc::channel::<(Vec<Target>, Notification)>(QUEUE);
        let http = reqwest::Client::new();
        tokio::spawn(async move {
            while let Some((targets, notification)) = received.recv().await {
                for target in targets {
                    let (http, secret) = (http.clone(), secret.clone());
                    let notification = notification.clone();
                    tokio::spawn(deliver(http, target, secret, notification));
                }
            }
        });
        Notifier { queue, global }
    }

    /// Queues `notification` for the global targets and `targets` (never waits; a full
    /// queue drops it with a warning).
    pub fn send(&self, targets: &[Target], notification: Notification) {
        let mut all = self.global.clone();
        all.extend(targets.iter().filter(|t| !self.global.contains(t)).cloned());
        if all.is_empty() {
            return;
        }
        if let Err(e) = self.queue.try_send((all, notification)) {
            tracing::warn!(error = %e, "notification dropped");
        }
    }
}

/// Posts `notification` to `target`, retried with backoff until it is answered 2xx.
async fn deliver(
    http: reqwest::Client,
    target: Target,
    secret: Option<String>,
    notification: Notification,
) {
    let body = match target.format {
        Format::Json => notification.json(),
        Format::Slack => notification.slack(),
    }
    .to_string();
    for attempt in 0..ATTEMPTS {
        let mut request = http
            .post(&target.url)
            .timeout(TIMEOUT)
            .header("content-type", "application/json")
            .body(body.clone());
        if let (Format::Json, Some(secret)) = (target.format, &secret) {
            request = request.header(
                SIGNATURE_HEADER,
                signature(secret.as_bytes(), body.as_bytes()),
            );
        }
        let outcome = match request.send().await {
            Ok(response) if response.status().is_success() => return,
            Ok(response) => format!("answered {}", response.status()),
            Err(e) => e.to_string(),
        };
        tracing::debug!(url = %target.url, attempt, %outcome, "notification not delivered");
        if attempt + 1 == ATTEMPTS {
            tracing::warn!(url = %target.url, event = ?notification.event, app = %notification.app, %outcome, "notification given up");
            return;
        }
        tokio::time::sleep(doubling(FIRST_DELAY, MAX_DELAY, attempt)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held() -> Notification {
        Notification {
            event: Event::Held,
            app: "org/web".into(),
            address: "production/web".into(),
            revision: Some("abc".into()),
            plan_hash: Some("f00".into()),
            summary: "1 to create".into(),
            approve_url: Some("https://wardn.example/api/v1/apps/production/web/approve".into()),
            at: "2026-12-01T15:00:00Z".into(),
        }
    }

    #[test]
    fn payloads_carry_the_event_the_summary_and_the_approve_link() {
        let json = held().json();
        assert_eq!(json["event"], "Held");
        assert_eq!(json["address"], "production/web");
        assert_eq!(json["planHash"], "f00");
        assert_eq!(
            json["approveUrl"],
            "https://wardn.example/api/v1/apps/production/web/approve"
        );
        let slack = held().slack();
        let text = slack["text"].as_str().unwrap();
        assert!(
            text.starts_with("*Held* production/web: 1 to create"),
            "{text}"
        );
        assert!(
            text.contains("POST https://wardn.example/api/v1/apps/production/web/approve"),
            "{text}"
        );
        assert!(text.contains("\"plan_hash\":\"f00\""), "{text}");
    }

    #[test]
    fn signatures_are_hmac_sha256_of_the_body() {
        // RFC 4231 test case 2.
        assert_eq!(
            signature(b"Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn only_http_urls_with_a_host_are_targets() {
        let t = |url: &str| Target {
            url: url.into(),
            format: Format::Json,
        };
        assert!(t("https://hooks.slack.com/services/x").validate().is_ok());
        assert!(t("http://127.0.0.1:9/x").validate().is_ok());
        for bad in [
            "",
            "ftp://x",
            "https://",
            "http:///x",
            "file:///etc/passwd",
            "hooks.slack.com",
        ] {
            assert!(t(bad).validate().is_err(), "{bad}");
        }
    }
}
