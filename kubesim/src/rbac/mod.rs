//! The RBAC authorizer, with the semantics of kube-apiserver's
//! (`plugin/pkg/auth/authorizer/rbac`): ClusterRoleBindings grant cluster-wide, RoleBindings
//! grant a Role or a ClusterRole within their namespace; rules match verbs, API groups,
//! resources (`resource/subresource`, `*`, `*/subresource`), resourceNames and
//! nonResourceURLs (exact or `prefix*`); aggregated ClusterRoles take the rules of the
//! ClusterRoles their `aggregationRule` selects, as the aggregation controller would write them.
//!
//! Also the 403 Forbidden message and Status body worded as kube-apiserver words them
//! (`apiserver/pkg/endpoints/handlers/responsewriters` and `apimachinery` `NewForbidden`),
//! the SelfSubjectAccessReview and SelfSubjectRulesReview statuses, and the bootstrap
//! ClusterRoles and bindings every cluster has
//! (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy`).
//!
//! The modules: `request` (who asks for what, and the decision), `authorizer` (the
//! [`Authorizer`] over a cluster's RBAC objects, with aggregation and the rules review),
//! `rules` (one PolicyRule against a request), `forbidden` (the 403 message and Status),
//! `review` (access reviews) and `bootstrap` (the bootstrap policy).

mod authorizer;
mod bootstrap;
mod forbidden;
mod request;
mod review;
mod rules;
#[cfg(test)]
mod tests;

pub use authorizer::Authorizer;
pub use bootstrap::bootstrap_policy;
pub use forbidden::{forbidden_message, forbidden_status};
pub use request::{Decision, Request, ResourceAttributes, UserInfo};
pub use review::{ReviewError, access_review_status, review_request};
pub use rules::rule_allows;
