//! What a Kubernetes API path forwarded by the cluster shell asks for, and whether the
//! cluster's namespace allowlist lets it through. The path is checked as it came off the wire
//! (before any decoding), so `..`, `%2e%2e`, `//` and friends are refused rather than
//! normalised into something else.
//!
//! The rules, with a restricted allowlist (a cluster registered with namespaces):
//! - discovery (`/api`, `/apis`, their group and version documents, `/version`, `/openapi/…`)
//!   passes, for reads;
//! - anything under `/api/v1/namespaces/NS/…` or `/apis/G/V/namespaces/NS/…`, and the Namespace
//!   object `/api/v1/namespaces/NS` itself, passes when NS is allowed;
//! - everything else (cluster-wide lists of namespaced resources such as `get pods -A`,
//!   cluster-scoped resources such as Nodes, the list of Namespaces) is refused, since it would
//!   show or touch what lies outside the allowed namespaces.
//!
//! With an unrestricted allowlist (registered without namespaces) every well-formed path passes.
//! Either way, exec, attach, port-forward and the `proxy` subresources are refused: they need a
//! connection upgrade (or reach into Pods and Services), which the shell does not forward.

/// The subresources the shell refuses whatever the allowlist.
pub const REFUSED_SUBRESOURCES: [&str; 4] = ["exec", "attach", "portforward", "proxy"];

/// What a forwarded path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// API discovery, the version and the OpenAPI documents.
    Discovery,
    /// Something inside one namespace (or the Namespace object itself).
    Namespace(String),
    /// A cluster-scoped resource, or a namespaced resource across every namespace.
    ClusterWide,
}

/// A forwarded path, checked and classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiPath {
    /// The path as forwarded (starts with `/`).
    pub path: String,
    /// What it addresses.
    pub scope: Scope,
    /// The subresource (`status`, `log`, `exec`…), when the path names one.
    pub subresource: Option<String>,
}

/// Why the shell refuses a path (answered as a Kubernetes `Status`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Not a path the shell forwards (400).
    #[error("path {path:?} is refused: {reason}")]
    Malformed {
        /// The path (bounded).
        path: String,
        /// Why.
        reason: &'static str,
    },
    /// The namespace is outside the cluster's allowlist (403).
    #[error(
        "namespace {namespace:?} is not in the namespaces allowlist of cluster {cluster:?} (allowed: {allowed})"
    )]
    NamespaceNotAllowed {
        /// The namespace asked for.
        namespace: String,
        /// The cluster.
        cluster: String,
        /// The allowed namespaces, comma-separated.
        allowed: String,
    },
    /// A cluster-wide request under a restricted allowlist (403).
    #[error(
        "{path} is cluster-wide, and cluster {cluster:?} allows only namespaces {allowed}: name one of them (-n NAMESPACE)"
    )]
    ClusterWide {
        /// The path.
        path: String,
        /// The cluster.
        cluster: String,
        /// The allowed namespaces, comma-separated.
        allowed: String,
    },
    /// exec, attach, port-forward or a proxy subresource (403).
    #[error(
        "{subresource} is not available through the wardn cluster shell (it forwards API requests only, not exec, attach, port-forward or proxy)"
    )]
    Upgrade {
        /// The refused subresource.
        subresource: String,
    },
}

/// The longest forwarded path accepted (in bytes).
pub const MAX_PATH_BYTES: usize = 2048;

fn malformed(path: &str, reason: &'static str) -> PathError {
    PathError::Malformed {
        path: crate::store::audit::bounded(path).to_string(),
        reason,
    }
}

impl ApiPath {
    /// Checks and classifies `raw`, the path to forward exactly as received (not decoded).
    pub fn parse(raw: &str) -> Result<ApiPath, PathError> {
        if raw.len() > MAX_PATH_BYTES {
            return Err(malformed(raw, "longer than 2048 bytes"));
        }
        let Some(rest) = raw.strip_prefix('/') else {
            return Err(malformed(raw, "it does not start with /"));
        };
        if raw.contains('%') {
            return Err(malformed(
                raw,
                "percent-encoded characters are not forwarded (Kubernetes names never need them)",
            ));
        }
        let segments: Vec<&str> = rest.split('/').collect();
        for segment in &segments {
            if segment.is_empty() {
                return Err(malformed(
                    raw,
                    "it has an empty segment (//, or a trailing /)",
                ));
            }
            if *segment == "." || *segment == ".." {
                return Err(malformed(raw, "it has a . or .. segment"));
            }
            if !segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._:~@".contains(&b))
            {
                return Err(malformed(
                    raw,
                    "a segment has characters Kubernetes paths never have",
                ));
            }
        }
        let (scope, subresource) =
            classify(&segments).ok_or_else(|| malformed(raw, "it is not a Kubernetes API path"))?;
        Ok(ApiPath {
            path: raw.to_string(),
            scope,
            subresource,
        })
    }

    /// Refuses the path under `allowlist` of `cluster` (empty: every namespace), and refuses
    /// [`REFUSED_SUBRESOURCES`] always.
    pub fn check(&self, cluster: &str, allowlist: &[String]) -> Result<(), PathError> {
        if let Some(sub) = self
            .subresource
            .as_deref()
            .filter(|s| REFUSED_SUBRESOURCES.contains(s))
        {
            return Err(PathError::Upgrade {
                subresource: sub.to_string(),
            });
        }
        if allowlist.is_empty() {
            return Ok(());
        }
        let allowed = || allowlist.join(", ");
        match &self.scope {
            Scope::Discovery => Ok(()),
            Scope::Namespace(ns) if allowlist.iter().any(|a| a == ns) => Ok(()),
            Scope::Namespace(ns) => Err(PathError::NamespaceNotAllowed {
                namespace: ns.clone(),
                cluster: cluster.to_string(),
                allowed: allowed(),
            }),
            Scope::ClusterWide => Err(PathError::ClusterWide {
                path: self.path.clone(),
                cluster: cluster.to_string(),
                allowed: allowed(),
            }),
        }
    }
}

/// The scope and subresource of a path's segments; `None` when it is no API path.
fn classify(segments: &[&str]) -> Option<(Scope, Option<String>)> {
    // `/api/v1/…` and `/apis/G/V/…` share their tail: the resource part after the version.
    let tail = match segments {
        ["version"] | ["api"] | ["apis"] | ["api", _] | ["apis", _] | ["apis", _, _] => {
            return Some((Scope::Discovery, None));
        }
        ["openapi", ..] => return Some((Scope::Discovery, None)),
        ["api", _version, tail @ ..] => tail,
        ["apis", _group, _version, tail @ ..] => tail,
        _ => return None,
    };
    Some(match tail {
        // The Namespace object itself and what it holds.
        ["namespaces", ns] => (Scope::Namespace((*ns).to_string()), None),
        ["namespaces", ns, "status" | "finalize"] => (
            Scope::Namespace((*ns).to_string()),
            Some(tail[2].to_string()),
        ),
        ["namespaces", ns, _resource, rest @ ..] => (
            Scope::Namespace((*ns).to_string()),
            rest.get(1).map(|s| (*s).to_string()),
        ),
        // `/api/v1/namespaces` and every other cluster-level resource path.
        [_resource, rest @ ..] => (Scope::ClusterWide, rest.get(1).map(|s| (*s).to_string())),
        [] => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(path: &str) -> Scope {
        ApiPath::parse(path).unwrap().scope
    }

    #[test]
    fn paths_are_classified() {
        assert_eq!(scope("/api"), Scope::Discovery);
        assert_eq!(scope("/apis/apps/v1"), Scope::Discovery);
        assert_eq!(scope("/openapi/v3/api/v1"), Scope::Discovery);
        assert_eq!(scope("/version"), Scope::Discovery);
        let demo = Scope::Namespace("demo".into());
        assert_eq!(scope("/api/v1/namespaces/demo/pods"), demo);
        assert_eq!(scope("/apis/apps/v1/namespaces/demo/deployments/web"), demo);
        assert_eq!(scope("/api/v1/namespaces/demo"), demo);
        assert_eq!(scope("/api/v1/pods"), Scope::ClusterWide);
        assert_eq!(scope("/api/v1/namespaces"), Scope::ClusterWide);
        assert_eq!(scope("/api/v1/nodes/n1"), Scope::ClusterWide);
        let exec = ApiPath::parse("/api/v1/namespaces/demo/pods/web/exec").unwrap();
        assert_eq!(exec.subresource.as_deref(), Some("exec"));
    }

    #[test]
    fn hostile_paths_are_refused() {
        for path in [
            "/api/v1/namespaces/demo/../../namespaces/other/pods",
            "/api/v1/namespaces/%2e%2e/pods",
            "/api/v1/namespaces/demo%2Fpods",
            "/api/v1//namespaces/other/pods",
            "/api/v1/namespaces/demo/pods/",
            "/api/v1/namespaces/./pods",
            "api/v1/pods",
            "/healthz",
            "/api/v1/namespaces/demo\\pods",
        ] {
            assert!(
                matches!(ApiPath::parse(path), Err(PathError::Malformed { .. })),
                "{path}"
            );
        }
        assert!(ApiPath::parse(&format!("/api/{}", "a".repeat(3000))).is_err());
    }

    #[test]
    fn the_allowlist_is_applied() {
        let allow = vec!["demo".to_string()];
        let check = |path: &str| ApiPath::parse(path).unwrap().check("c", &allow);
        assert!(check("/api/v1/namespaces/demo/pods").is_ok());
        assert!(check("/apis").is_ok());
        assert!(matches!(
            check("/api/v1/namespaces/kube-system/secrets"),
            Err(PathError::NamespaceNotAllowed { .. })
        ));
        assert!(matches!(
            check("/api/v1/pods"),
            Err(PathError::ClusterWide { .. })
        ));
        assert!(matches!(
            check("/api/v1/namespaces/demo/pods/web/exec"),
            Err(PathError::Upgrade { .. })
        ));
        let open = ApiPath::parse("/api/v1/pods").unwrap();
        assert!(open.check("c", &[]).is_ok());
        let attach = ApiPath::parse("/api/v1/namespaces/x/pods/w/attach").unwrap();
        assert!(attach.check("c", &[]).is_err());
    }
}
