//! kwok-like simulation of the controllers, kubelets and scheduler of a cluster, as pure
//! functions the server calls when objects change or a workload's ready delay elapses:
//!
//! * [`nodes()`] (`nodes`): the N fake Nodes (`kwok-node-0` …), Ready, with capacity and
//!   `nodeInfo` reporting kubelet v1.32.
//! * [`replica_set_for`] (`deployments`): the ReplicaSet the deployment controller creates for
//!   a Deployment's current template (name `DEPLOYMENT-HASH`, `pod-template-hash` label,
//!   revision annotations, ownerReference); [`revision`] and [`mark_revision`] read and
//!   write the revision annotation.
//! * [`stateful_set_claims`] (`claims`): the PersistentVolumeClaims of a StatefulSet's
//!   volumeClaimTemplates, Bound.
//! * [`owned_pods`] (`pods`): the Pods a ReplicaSet, StatefulSet, DaemonSet or Job owns, named
//!   and labelled like the real controllers name them, spec copied from the template (with
//!   the Pod defaults and admission changes), scheduled round-robin on the nodes, and a status
//!   (`pod_status`) that is Running and Ready once the ready delay has elapsed
//!   (ContainerCreating before), with `containerStatuses[].imageID` as containerd reports it
//!   (`images`); [`bare_pod`] does the same for a Pod no controller owns (bound to a node,
//!   then Running and Ready).
//! * [`endpoints_for`] (`endpoints`): the Endpoints of a Service with a selector, listing the
//!   Pods it selects by readiness with their resolved ports.
//! * [`endpoint_slices_for`] (`endpoint_slices`): the EndpointSlices of such a Service, one
//!   per distinct port set, with each Pod's ready/serving/terminating conditions.
//! * [`workload_status`] (`status`): the status the real controllers write for Deployments,
//!   StatefulSets, DaemonSets, ReplicaSets and Jobs, including the Deployment conditions
//!   Available and Progressing with their real reasons and messages.
//!
//! Hashes (pod-template-hash, controller-revision-hash, pod name suffixes, container IDs) have
//! the real format and alphabet and are stable for the same input, but are not bit-identical
//! to the Go controllers' (which hash Go struct dumps); they live in `names`, and the field
//! readers and ownerReference the controllers share in `fields`.

mod claims;
mod deployments;
mod endpoint_slices;
mod endpoints;
mod fields;
mod images;
mod names;
mod nodes;
mod pod_status;
mod pods;
mod status;
#[cfg(test)]
mod tests;

pub use claims::stateful_set_claims;
pub use deployments::{mark_revision, replica_set_for, replica_set_name, revision};
pub use endpoint_slices::{
    CONTROLLER as ENDPOINT_SLICE_CONTROLLER, MANAGED_BY_LABEL, SERVICE_NAME_LABEL,
    endpoint_slices_for,
};
pub use endpoints::{endpoints_for, service_selects};
pub use images::{image_id, normalize_image};
pub use names::template_hash;
pub use nodes::{KUBELET_VERSION, node_name, nodes};
pub use pods::{MAX_SIMULATED_PODS, bare_pod, owned_pods};
pub use status::workload_status;
