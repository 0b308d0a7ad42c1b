//! Bound ServiceAccount tokens, as the TokenRequest API (`POST
//! /api/v1/namespaces/NS/serviceaccounts/NAME/token`, `kubectl create token`) issues them: a
//! JWT with kube-apiserver's claims (`iss`, `sub` `system:serviceaccount:NS:NAME`, `aud`,
//! `exp`, `iat`, `nbf` and the `kubernetes.io` claim naming the namespace, the ServiceAccount
//! and its uid, and the bound object if any). kubesim signs with HMAC-SHA256 under a key of
//! the cluster's (kube-apiserver signs with RS256 under its service-account key); a token
//! authenticates while it is unexpired, its audiences include the API server's, and its
//! ServiceAccount (and bound object) still exist with the uids it names.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use serde_json::{Value, json};

/// The issuer and default audience, as a kubeadm or kind API server has them.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// What a verified token says.
#[derive(Debug, Clone, PartialEq)]
pub struct Claims {
    /// The ServiceAccount's namespace.
    pub namespace: String,
    /// The ServiceAccount's name.
    pub name: String,
    /// The ServiceAccount's uid when the token was issued.
    pub uid: String,
    /// The object the token is bound to: (kind, name, uid).
    pub bound: Option<(String, String, String)>,
}

/// What a token is issued for.
pub struct Request<'a> {
    /// The ServiceAccount's namespace.
    pub namespace: &'a str,
    /// The ServiceAccount's name.
    pub name: &'a str,
    /// The ServiceAccount's uid.
    pub uid: &'a str,
    /// The audiences (`spec.audiences`; empty: the API server's).
    pub audiences: &'a [String],
    /// Seconds since the epoch now.
    pub now: u64,
    /// Lifetime in seconds (`spec.expirationSeconds`).
    pub expiration_seconds: u64,
    /// The bound object: (kind, name, uid).
    pub bound: Option<(&'a str, &'a str, &'a str)>,
}

/// Issues a token; returns it with its expiry (seconds since the epoch).
pub fn issue(key: &[u8], req: &Request<'_>) -> (String, u64) {
    let exp = req.now.saturating_add(req.expiration_seconds);
    let audiences: Vec<&str> = if req.audiences.is_empty() {
        vec![ISSUER]
    } else {
        req.audiences.iter().map(String::as_str).collect()
    };
    let mut k8s = json!({
        "namespace": req.namespace,
        "serviceaccount": {"name": req.name, "uid": req.uid},
    });
    if let Some((kind, name, uid)) = req.bound {
        k8s[kind.to_ascii_lowercase()] = json!({"name": name, "uid": uid});
    }
    let claims = json!({
        "aud": audiences,
        "exp": exp,
        "iat": req.now,
        "nbf": req.now,
        "iss": ISSUER,
        "jti": crate::util::new_uid(),
        "kubernetes.io": k8s,
        "sub": format!("system:serviceaccount:{}:{}", req.namespace, req.name),
    });
    let header = json!({"alg": "HS256", "typ": "JWT"});
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), input.as_bytes());
    let signature = URL_SAFE_NO_PAD.encode(tag.as_ref());
    (format!("{input}.{signature}"), exp)
}

/// The claims of a token this cluster issued, if its signature holds, it is within its
/// lifetime at `now` and one of its audiences is the API server's.
pub fn verify(key: &[u8], token: &str, now: u64) -> Option<Claims> {
    let (input, signature) = token.rsplit_once('.')?;
    let (_, payload) = input.split_once('.')?;
    let signature = URL_SAFE_NO_PAD.decode(signature).ok()?;
    let key = hmac::Key::new(hmac::HMAC_SHA256, key);
    hmac::verify(&key, input.as_bytes(), &signature).ok()?;
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    let exp = claims.get("exp")?.as_u64()?;
    let nbf = claims.get("nbf")?.as_u64()?;
    if now >= exp || now < nbf {
        return None;
    }
    let audience_ok = claims
        .get("aud")?
        .as_array()?
        .iter()
        .any(|a| a.as_str() == Some(ISSUER));
    if !audience_ok {
        return None;
    }
    let k8s = claims.get("kubernetes.io")?;
    let text = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).map(String::from);
    let bound = ["pod", "secret"].iter().find_map(|kind| {
        let o = k8s.get(*kind)?;
        let kind = if *kind == "pod" { "Pod" } else { "Secret" };
        Some((kind.to_string(), text(o, "/name")?, text(o, "/uid")?))
    });
    Some(Claims {
        namespace: text(k8s, "/namespace")?,
        name: text(k8s, "/serviceaccount/name")?,
        uid: text(k8s, "/serviceaccount/uid")?,
        bound,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(audiences: &'a [String], now: u64) -> Request<'a> {
        Request {
            namespace: "team-a",
            name: "deployer",
            uid: "u-1",
            audiences,
            now,
            expiration_seconds: 600,
            bound: None,
        }
    }

    #[test]
    fn issued_tokens_verify_until_they_expire() {
        let key = b"k".repeat(32);
        let (token, exp) = issue(&key, &request(&[], 1_000));
        assert_eq!(exp, 1_600);
        let claims = verify(&key, &token, 1_001).unwrap();
        assert_eq!(
            (claims.namespace.as_str(), claims.name.as_str()),
            ("team-a", "deployer")
        );
        assert_eq!(claims.uid, "u-1");
        assert!(verify(&key, &token, 1_600).is_none(), "expired");
        assert!(verify(&key, &token, 999).is_none(), "not yet valid");
        assert!(verify(b"other-key", &token, 1_001).is_none(), "foreign key");
    }

    #[test]
    fn forged_and_foreign_audience_tokens_are_refused() {
        let key = b"k".repeat(32);
        let other = vec!["vault".to_string()];
        let (token, _) = issue(&key, &request(&other, 1_000));
        assert!(verify(&key, &token, 1_001).is_none(), "audience");
        let (token, _) = issue(&key, &request(&[], 1_000));
        let mut parts: Vec<&str> = token.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(
            r#"{"aud":["https://kubernetes.default.svc.cluster.local"],"exp":9999999999,"nbf":0,"kubernetes.io":{"namespace":"kube-system","serviceaccount":{"name":"admin","uid":"x"}}}"#,
        );
        parts[1] = &forged;
        assert!(verify(&key, &parts.join("."), 1_001).is_none());
        for junk in ["", ".", "..", "a.b.c", "a.b", "\u{0}.\u{0}.\u{0}"] {
            assert!(verify(&key, junk, 1_001).is_none(), "{junk:?}");
        }
    }
}
