//! The pins of a promoted App applied to its rendered manifests: an images override after the
//! render, so every pass of the App deploys the promoted digests.

use std::sync::Arc;

use crate::app::promotion::PromotedFrom;
use crate::reconcile::pass::Manifests;
use crate::render::{PackedObjects, UnpackError, objects_digest, pin_images};

/// `(repository, digest)` of each pinned image.
pub(super) fn pins(promoted: &PromotedFrom) -> Vec<(String, String)> {
    promoted
        .images
        .iter()
        .map(|i| (i.repository.clone(), i.digest.clone()))
        .collect()
}

/// `manifests` with `promoted`'s images pinned (an images override after the render), known
/// by the digest of the pinned objects; unchanged without pins.
pub(super) fn pinned(
    manifests: Arc<Manifests>,
    promoted: Option<&PromotedFrom>,
) -> Result<Arc<Manifests>, UnpackError> {
    let Some(promoted) = promoted else {
        return Ok(manifests);
    };
    let mut objects = manifests.objects.unpack()?;
    pin_images(&mut objects, &pins(promoted));
    let digest = objects_digest(&objects);
    Ok(Arc::new(Manifests {
        revision: manifests.revision.clone(),
        digest,
        objects: PackedObjects::pack(&objects),
    }))
}
