//! Finding the resource a command box word names (`pods`, `po`, `pod`, `Pod`,
//! `deployments.apps`) in the cluster's discovery documents, as kubectl does: the core group
//! first, then every group at its preferred version.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;

/// A resource found in discovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// `/api/v1` or `/apis/GROUP/VERSION`.
    pub prefix: String,
    /// The plural resource name.
    pub plural: String,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
}

impl Found {
    /// The path of the collection in `namespace` (ignored for cluster-scoped resources;
    /// `None`: every namespace), or of the object `name` in it.
    pub fn path(&self, namespace: Option<&str>, name: Option<&str>) -> String {
        let mut path = self.prefix.clone();
        if let (true, Some(ns)) = (self.namespaced, namespace) {
            path.push_str(&format!("/namespaces/{ns}"));
        }
        path.push_str(&format!("/{}", self.plural));
        if let Some(name) = name {
            path.push_str(&format!("/{name}"));
        }
        path
    }
}

/// Why a resource word could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    /// No resource of the cluster answers to the word.
    #[error("the server doesn't have a resource type {0:?}")]
    Unknown(String),
    /// The discovery documents could not be read.
    #[error("discovery failed: {0}")]
    Cluster(#[from] kube::Error),
}

/// Whether `word` names a top-level resource of `list` (by plural, singular, kind or short
/// name, case-insensitively for the kind).
fn matching(list: &APIResourceList, word: &str) -> Option<(String, bool)> {
    list.resources
        .iter()
        .filter(|r| !r.name.contains('/'))
        .find(|r| {
            r.name == word
                || r.singular_name == word
                || r.kind.eq_ignore_ascii_case(word)
                || r.short_names.iter().flatten().any(|s| s == word)
        })
        .map(|r| (r.name.clone(), r.namespaced))
}

/// Finds the resource `typed` names on the cluster of `client`.
pub async fn find(client: &kube::Client, typed: &str) -> Result<Found, DiscoverError> {
    let (word, group) = match typed.split_once('.') {
        Some((word, group)) => (word, Some(group)),
        None => (typed, None),
    };
    if group.is_none() {
        let core = client.list_core_api_resources("v1").await?;
        if let Some((plural, namespaced)) = matching(&core, word) {
            return Ok(Found {
                prefix: "/api/v1".into(),
                plural,
                namespaced,
            });
        }
    }
    let groups = client.list_api_groups().await?;
    for api_group in groups
        .groups
        .iter()
        .filter(|g| group.is_none_or(|wanted| g.name == wanted))
    {
        let Some(version) = api_group
            .preferred_version
            .as_ref()
            .or(api_group.versions.first())
        else {
            continue;
        };
        let list = client
            .list_api_group_resources(&version.group_version)
            .await?;
        if let Some((plural, namespaced)) = matching(&list, word) {
            return Ok(Found {
                prefix: format!("/apis/{}", version.group_version),
                plural,
                namespaced,
            });
        }
    }
    Err(DiscoverError::Unknown(typed.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_scope() {
        let pods = Found {
            prefix: "/api/v1".into(),
            plural: "pods".into(),
            namespaced: true,
        };
        assert_eq!(
            pods.path(Some("demo"), Some("web")),
            "/api/v1/namespaces/demo/pods/web"
        );
        assert_eq!(pods.path(None, None), "/api/v1/pods");
        let nodes = Found {
            prefix: "/api/v1".into(),
            plural: "nodes".into(),
            namespaced: false,
        };
        assert_eq!(nodes.path(Some("demo"), None), "/api/v1/nodes");
    }
}
