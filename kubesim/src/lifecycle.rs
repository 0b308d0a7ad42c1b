//! The last steps of every write before it is stored: API-server defaulting and
//! managedFields bookkeeping (through k8s-merge), plus the create-time steps that need the
//! new object's identity (cluster IPs, Job selectors, Pod admission).

use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::Value;

use crate::defaults;
use crate::resources::ResourceInfo;

/// The schema type of a kind: the built-in schema's, or the custom resource's from its CRD.
pub fn schema_type(info: &ResourceInfo) -> Option<k8s_merge::TypeRef<'_>> {
    match &info.types {
        Some(types) => types.0.kind_type(&info.api_version(), &info.kind),
        None => k8s_merge::Schema::builtin().kind_type(&info.api_version(), &info.kind),
    }
}

/// Runs API-server defaulting: the built-in defaults, or a custom resource's schema
/// `default`s.
fn default(info: &ResourceInfo, obj: &mut Value) {
    match &info.schema {
        None => defaults::apply_defaults(&info.api_version(), &info.kind, obj),
        Some(schema) => crate::validation::apply_custom_defaults(schema, obj),
    }
}

/// Create-time steps that need the object's uid or cluster-wide allocations.
pub fn admit_new(info: &ResourceInfo, obj: &mut Value, ip_seq: &AtomicU32, port_seq: &AtomicU32) {
    if !info.is_builtin() {
        return;
    }
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Service") => {
            // seq 0 is the `kubernetes` Service's address; user Services start at 1.
            let seq = ip_seq.load(Ordering::Relaxed);
            if defaults::assign_cluster_ip(obj, &defaults::allocate_cluster_ip(seq + 1)) {
                ip_seq.fetch_add(1, Ordering::Relaxed);
            }
            defaults::assign_node_ports(obj, || {
                defaults::allocate_node_port(port_seq.fetch_add(1, Ordering::Relaxed))
            });
        }
        ("batch", "Job") => {
            let uid = obj
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            defaults::generate_job_selector(obj, &uid);
        }
        ("", "Pod") => {
            let uid = obj
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            defaults::admit_pod(obj, &uid[..uid.len().min(5)]);
        }
        _ => {}
    }
}

/// Runs defaulting, then records the write in managedFields as an Update by `manager`
/// (through `subresource`, if any). `manager` None: managedFields were already set by apply.
pub fn finish(
    info: &ResourceInfo,
    old: Option<&Value>,
    mut new: Value,
    manager: Option<&str>,
    subresource: Option<&str>,
    now: &str,
) -> Value {
    default(info, &mut new);
    match manager {
        Some(manager) => k8s_merge::ssa::record_update_subresource(
            old,
            &new,
            manager,
            subresource,
            schema_type(info),
            now,
        ),
        None => new,
    }
}
