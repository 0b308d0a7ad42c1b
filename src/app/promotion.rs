//! Digest promotion as the App status records it: the images a promotion pinned on an App
//! ([`PromotedFrom`]), kept until the next promotion or an unpin, and applied to every render
//! of the App as an images override (see `render::transform::pin_images`).

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::sources::spec::parse_duration;

/// `spec.promotion`: where promotions into this App come from and when they may happen.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromotionPolicy {
    /// The upstream App (`NAME`, or `CLUSTER/NAME`; `NAME:TARGET` names one target of an App
    /// with `spec.targets`, a bare `NAME` any of them): promotions into this App from any
    /// other App are refused, and `autoPromote` promotes from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// How long the source must have been Synced and Healthy at its revision before it may
    /// be promoted here (e.g. `10m`, `1h30m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_healthy_for: Option<String>,
    /// Promote from `from` as soon as it runs a revision not promoted yet and the soak time
    /// is met (Held as any promotion when this App requires approval).
    #[serde(default)]
    pub auto_promote: bool,
}

/// Why `spec.promotion` is invalid.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    /// `requireHealthyFor` is not a duration.
    #[error("spec.promotion.requireHealthyFor: {0}")]
    Duration(String),
    /// `from` is not `NAME` or `CLUSTER/NAME` (with an optional `:TARGET`).
    #[error("spec.promotion.from: {0:?} is not NAME, NAME:TARGET or CLUSTER/NAME[:TARGET]")]
    From(String),
    /// `autoPromote` without `from`.
    #[error("spec.promotion.autoPromote: needs spec.promotion.from (the App to promote from)")]
    AutoWithoutFrom,
}

impl PromotionPolicy {
    /// The soak time (`requireHealthyFor`; zero when absent).
    pub fn soak(&self) -> Result<Duration, PolicyError> {
        match &self.require_healthy_for {
            None => Ok(Duration::ZERO),
            Some(text) => parse_duration(text).map_err(PolicyError::Duration),
        }
    }

    /// `from` as `(cluster, name)`; the cluster is `None` for a bare `NAME`.
    pub fn upstream(&self) -> Result<Option<(Option<&str>, &str)>, PolicyError> {
        let Some(from) = self.from.as_deref() else {
            return Ok(None);
        };
        let (cluster, name) = match from.split_once('/') {
            Some((cluster, name)) => (Some(cluster), name),
            None => (None, from),
        };
        let part = |p: &str| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        };
        let (bare, target) = crate::app::key::split_name(name);
        let target_ok = target.is_none_or(crate::object::is_dns_label);
        if !part(bare) || !target_ok || cluster.is_some_and(|c| !part(c)) {
            return Err(PolicyError::From(from.to_string()));
        }
        Ok(Some((cluster, name)))
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), PolicyError> {
        self.soak()?;
        if self.upstream()?.is_none() && self.auto_promote {
            return Err(PolicyError::AutoWithoutFrom);
        }
        Ok(())
    }

    /// Whether a promotion from App `name` (`NAME:TARGET` for a target) on cluster segment
    /// `cluster` is allowed.
    pub fn accepts(&self, cluster: &str, name: &str) -> bool {
        let (bare, _) = crate::app::key::split_name(name);
        match self.upstream() {
            Ok(None) => true,
            Ok(Some((c, n))) => {
                (n == name || (!n.contains(':') && n == bare)) && c.is_none_or(|c| c == cluster)
            }
            Err(_) => false,
        }
    }
}

/// One image a promotion pinned: the repository, the reference the source ran and the digest
/// it resolved to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PinnedImage {
    /// The image repository (`ghcr.io/acme/web`), as the manifests spell it.
    pub repository: String,
    /// The reference the source App's workloads run (`ghcr.io/acme/web:1.4`).
    pub from: String,
    /// The digest the source's Pods run (`sha256:…`).
    pub digest: String,
}

impl PinnedImage {
    /// The pinned reference, `repository@digest`.
    pub fn pinned(&self) -> String {
        format!("{}@{}", self.repository, self.digest)
    }
}

/// `status.promotedFrom`: where the App's pinned images come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromotedFrom {
    /// The source App's name.
    pub app: String,
    /// The source App's destination cluster segment (`local`: the management cluster).
    pub cluster: String,
    /// The source revision the source App ran.
    pub revision: String,
    /// The pinned images, sorted by repository.
    pub images: Vec<PinnedImage>,
    /// The promotion record that set the pins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promotion: Option<String>,
}

impl PromotedFrom {
    /// `promotion from CLUSTER/APP at REVISION`.
    pub fn headline(&self) -> String {
        format!(
            "promotion from {}/{} at {}",
            self.cluster, self.app, self.revision
        )
    }

    /// One line per image: `repo:tag → repo@sha256:…`.
    pub fn image_lines(&self) -> Vec<String> {
        self.images
            .iter()
            .map(|i| format!("{} → {}", i.from, i.pinned()))
            .collect()
    }

    /// The headline followed by the images, on one line (status messages).
    pub fn summary(&self) -> String {
        format!("{} ({})", self.headline(), self.image_lines().join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(from: Option<&str>, soak: Option<&str>, auto: bool) -> PromotionPolicy {
        PromotionPolicy {
            from: from.map(str::to_string),
            require_healthy_for: soak.map(str::to_string),
            auto_promote: auto,
        }
    }

    #[test]
    fn policies_are_validated_field_by_field() {
        assert_eq!(PromotionPolicy::default().validate(), Ok(()));
        let p = policy(Some("staging/web"), Some("10m"), true);
        assert_eq!(p.validate(), Ok(()));
        assert_eq!(p.soak(), Ok(Duration::from_secs(600)));
        assert!(p.accepts("staging", "web"));
        assert!(!p.accepts("other", "web") && !p.accepts("staging", "api"));
        assert!(policy(Some("web"), None, false).accepts("any", "web"));
        assert!(policy(None, None, false).accepts("any", "thing"));
        // Targets: `NAME:TARGET` names one, a bare `NAME` any of the App's targets.
        let target = policy(Some("staging/web:eu"), None, false);
        assert_eq!(target.validate(), Ok(()));
        assert!(target.accepts("staging", "web:eu"));
        assert!(!target.accepts("staging", "web:us") && !target.accepts("staging", "web"));
        assert!(policy(Some("web"), None, false).accepts("prod", "web:us"));
        let err = policy(None, Some("ten minutes"), false)
            .validate()
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("spec.promotion.requireHealthyFor"),
            "{err}"
        );
        for bad in [
            "", "a/", "/b", "a/b/c", "a b", "a:", "a:B", "a:../x", "a:b:c",
        ] {
            let err = policy(Some(bad), None, false).validate().unwrap_err();
            assert_eq!(err, PolicyError::From(bad.into()));
            assert!(!policy(Some(bad), None, false).accepts("a", "b"));
        }
        assert_eq!(
            policy(None, None, true).validate(),
            Err(PolicyError::AutoWithoutFrom)
        );
    }
}
