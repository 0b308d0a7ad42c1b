//! Promotions on the runner: read the digests a source App's workloads run, pin them on a
//! target App (kept in its status, hence in the store, until the next promotion or an
//! unpin), and run the target's manual pass: Held when it requires approval, applied
//! otherwise. Every pass of a pinned App renders with the pins applied ([`pinned`]).

use std::sync::Arc;

use super::Runner;
use super::operations::OperationError;
use crate::app::AppStatus;
use crate::app::promotion::PromotedFrom;
use crate::reconcile::decide::Trigger;
use crate::reconcile::pass::Manifests;
use crate::reconcile::promotion::{self, PromoteError};
use crate::render::{objects_digest, pin_images};

/// `(repository, digest)` of each pinned image.
fn pins(promoted: &PromotedFrom) -> Vec<(String, String)> {
    promoted
        .images
        .iter()
        .map(|i| (i.repository.clone(), i.digest.clone()))
        .collect()
}

/// `manifests` with `promoted`'s images pinned (an images override after the render), known
/// by the digest of the pinned objects; unchanged without pins.
pub(super) fn pinned(manifests: Arc<Manifests>, promoted: Option<&PromotedFrom>) -> Arc<Manifests> {
    let Some(promoted) = promoted else {
        return manifests;
    };
    let mut objects = manifests.objects.clone();
    pin_images(&mut objects, &pins(promoted));
    let digest = objects_digest(&objects);
    Arc::new(Manifests {
        revision: manifests.revision.clone(),
        digest,
        objects,
    })
}

impl Runner {
    /// Promotes what App `source` runs onto App `target` as promotion `id`: refuses a source
    /// that is not Synced and Healthy, reads the digests of its workloads' Pods, and pins them
    /// on `target` ([`Runner::pin`]).
    pub(super) async fn promote(
        &self,
        source: &str,
        target: &str,
        id: &str,
    ) -> Result<AppStatus, OperationError> {
        let app = self
            .app(source)
            .ok_or_else(|| OperationError::NotFound(source.to_string()))?;
        let (status, manifests) = {
            let apps = self.apps.lock();
            let record = apps
                .get(source)
                .ok_or_else(|| OperationError::NotFound(source.to_string()))?;
            (record.status.clone(), record.manifests.clone())
        };
        promotion::check_source(source, &status)?;
        let manifests = manifests.ok_or_else(|| OperationError::NotRendered(source.to_string()))?;
        let manifests = pinned(manifests, status.promoted_from.as_ref());
        let (destination, _, _) = self
            .target(&app)
            .await
            .map_err(OperationError::Destination)?;
        let workloads = promotion::workloads(&manifests.objects, &app.spec.destination.namespace);
        let images = promotion::running_images(&destination.client, source, workloads).await?;
        let promoted = PromotedFrom {
            app: app.metadata.name.clone().unwrap_or_default(),
            cluster: app.spec.destination.cluster_segment().to_string(),
            revision: status
                .synced_revision
                .or(status.revision)
                .unwrap_or_default(),
            images,
            promotion: Some(id.to_string()),
        };
        self.pin(target, Some(promoted)).await
    }

    /// Pins `promoted`'s images on App `key` (refused when its render has none of them), or
    /// with `None` removes the pins, then runs a manual pass with them.
    pub(super) async fn pin(
        &self,
        key: &str,
        promoted: Option<PromotedFrom>,
    ) -> Result<AppStatus, OperationError> {
        let _guard = self.lock_app(key).await?;
        let (mut status, manifests) = {
            let apps = self.apps.lock();
            let record = apps
                .get(key)
                .ok_or_else(|| OperationError::NotFound(key.to_string()))?;
            (record.status.clone(), record.manifests.clone())
        };
        if let Some(promoted) = &promoted {
            let manifests =
                manifests.ok_or_else(|| OperationError::NotRendered(key.to_string()))?;
            let mut objects = manifests.objects.clone();
            if pin_images(&mut objects, &pins(promoted)) == 0 {
                return Err(PromoteError::NotRendered {
                    target: key.to_string(),
                    repositories: promoted
                        .images
                        .iter()
                        .map(|i| i.repository.clone())
                        .collect(),
                }
                .into());
            }
        }
        status.promoted_from = promoted;
        self.record(key, status);
        let trigger = Trigger::Manual {
            override_windows: false,
        };
        self.pass_locked(key, &trigger, false).await
    }
}
