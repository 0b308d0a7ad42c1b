//! Digest promotion as the App status records it: the images a promotion pinned on an App
//! ([`PromotedFrom`]), kept until the next promotion or an unpin, and applied to every render
//! of the App as an images override (see `render::transform::pin_images`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
