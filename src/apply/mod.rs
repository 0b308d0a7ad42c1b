//! Apply: kind ordering, staged server-side apply, inventory and prune (with its guard), and
//! health waits.

pub mod guard;
pub mod health;
pub mod inventory;
pub mod order;
pub mod prune;
pub mod stage;

use std::time::Duration;

use crate::object::ObjectRef;

/// Why an apply or prune failed.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The API server refused or failed a request about `object`.
    #[error("{object}: {}", crate::kube_error::describe(error))]
    Kube {
        /// The object the request was about.
        object: String,
        /// The client error (not a `source`: its text is already in the message).
        error: kube::Error,
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

impl ApplyError {
    /// Wraps a client error about `object` (for `map_err`).
    pub fn about(object: &ObjectRef) -> impl Fn(kube::Error) -> ApplyError + use<> {
        let object = object.to_string();
        move |error| ApplyError::Kube {
            object: object.clone(),
            error,
        }
    }
}
