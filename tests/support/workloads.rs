//! Workloads for promotion tests: a Deployment written into an App's source, and what a
//! kubesim cluster runs of it (its image, its Pods' image digests).

use std::collections::BTreeSet;

use kubesim::Cluster;

/// Writes Deployment `name` (one replica, label `app: name`, container `web` running
/// `image`) as `dir/deployment.yaml`.
pub fn write_workload(dir: &std::path::Path, name: &str, image: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("deployment.yaml"),
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  replicas: 1\n\
             \x20 selector:\n    matchLabels:\n      app: {name}\n  template:\n    metadata:\n      labels:\n        app: {name}\n\
             \x20   spec:\n      containers:\n      - name: web\n        image: {image}\n"
        ),
    )
    .unwrap();
}

/// The image of Deployment `name` in `cluster`'s `namespace`, if it exists.
pub fn deployed_image(cluster: &Cluster, namespace: &str, name: &str) -> Option<String> {
    cluster
        .get_object("apps/v1", "Deployment", Some(namespace), name)
        .and_then(|d| {
            d["spec"]["template"]["spec"]["containers"][0]["image"]
                .as_str()
                .map(str::to_string)
        })
}

/// The image digests the Pods labelled `app=name` in `cluster`'s `namespace` run.
pub fn pod_digests(cluster: &Cluster, namespace: &str, name: &str) -> BTreeSet<String> {
    cluster
        .list_objects("v1", "Pod")
        .into_iter()
        .filter(|p| {
            p["metadata"]["namespace"] == namespace && p["metadata"]["labels"]["app"] == name
        })
        .filter_map(|p| {
            let id = p["status"]["containerStatuses"][0]["imageID"].as_str()?;
            Some(id.rsplit('@').next()?.to_string())
        })
        .collect()
}
