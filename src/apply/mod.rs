//! Apply: kind ordering, staged server-side apply, inventory and prune (with its guard), and
//! health waits.

pub mod guard;
pub mod health;
pub mod inventory;
pub mod order;
pub mod prune;
pub mod stage;

use std::time::Duration;

/// The server-side apply field manager wardn applies (and dry-runs) with.
pub const FIELD_MANAGER: &str = "wardn";

/// The annotation wardn stamps on every object it applies, naming the App
/// (`namespace/name`). Prune only deletes objects that carry it with the pruning App's name
/// (and wardn's field manager), so one App never deletes another's objects.
pub const OWNER_ANNOTATION: &str = "cd.wardn.space/app";

/// Why an apply or prune failed.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The API server refused or failed a request about `object`.
    #[error("{object}: {source}")]
    Kube {
        /// The object the request was about.
        object: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// The cluster does not serve the object's kind (no CRD for it).
    #[error("{object}: the cluster does not serve this kind (is its CRD installed?)")]
    UnknownKind {
        /// The object.
        object: String,
    },
    /// A CRD applied by the plan did not become Established in time.
    #[error("CustomResourceDefinition {name} not Established after {}s", timeout.as_secs())]
    CrdNotEstablished {
        /// The CRD name.
        name: String,
        /// How long wardn waited.
        timeout: Duration,
    },
}
