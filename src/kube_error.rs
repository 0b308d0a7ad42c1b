//! Kubernetes client errors as people read them. kube's own `Display` of an API error appends
//! a Rust debug dump of the whole `Status`; wardn shows what kubectl shows instead: the API
//! server's message (`deployments.apps "web" is forbidden: User "…" cannot patch resource
//! "deployments" in API group "apps" in the namespace "production"`), or the reason and code
//! when the server sent no message. Other client errors keep kube's wording.

/// The message of `err` as kubectl would print it, without debug dumps.
pub fn describe(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(status) => {
            let message = status.message.trim();
            if !message.is_empty() {
                return message.to_string();
            }
            match status.reason.trim() {
                "" => format!("the server answered {}", status.code),
                reason => format!("{reason} ({})", status.code),
            }
        }
        other => other.to_string(),
    }
}

/// Whether `err` means the cluster could not be reached at all (no connection, TLS failure,
/// timeout), as opposed to an answer from its API server.
pub fn is_unreachable(err: &kube::Error) -> bool {
    matches!(err, kube::Error::HyperError(_) | kube::Error::Service(_))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(value: serde_json::Value) -> kube::Error {
        kube::Error::Api(Box::new(serde_json::from_value(value).unwrap()))
    }

    #[test]
    fn api_errors_read_like_kubectl() {
        let forbidden = api(serde_json::json!({
            "status": "Failure", "code": 403, "reason": "Forbidden",
            "message": "deployments.apps \"web\" is forbidden: User \"system:serviceaccount:wardn:wardn\" cannot patch resource \"deployments\" in API group \"apps\" in the namespace \"production\""
        }));
        let text = describe(&forbidden);
        assert!(
            text.starts_with("deployments.apps \"web\" is forbidden: User"),
            "{text}"
        );
        assert!(!text.contains("Status {"), "no debug dump: {text}");
        assert_eq!(
            describe(&api(serde_json::json!({"code": 409, "reason": "Conflict"}))),
            "Conflict (409)"
        );
        assert_eq!(
            describe(&api(serde_json::json!({"code": 500}))),
            "the server answered 500"
        );
    }
}
