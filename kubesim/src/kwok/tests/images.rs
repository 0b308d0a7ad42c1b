//! Tests of image normalization and image IDs.

use super::*;

#[test]
fn image_normalization_and_ids() {
    assert_eq!(normalize_image("nginx"), "docker.io/library/nginx:latest");
    assert_eq!(
        normalize_image("nginx:1.27"),
        "docker.io/library/nginx:1.27"
    );
    assert_eq!(
        normalize_image("bitnami/redis:7"),
        "docker.io/bitnami/redis:7"
    );
    assert_eq!(
        normalize_image("ghcr.io/acme/app:v1"),
        "ghcr.io/acme/app:v1"
    );
    assert_eq!(
        normalize_image("localhost:5000/app"),
        "localhost:5000/app:latest"
    );
    assert_eq!(
        image_id(&format!("nginx@{DIGEST}")),
        format!("docker.io/library/nginx@{DIGEST}")
    );
    assert_eq!(
        image_id(&format!("ghcr.io/acme/app:v1@{DIGEST}")),
        format!("ghcr.io/acme/app@{DIGEST}")
    );
    let tagged = image_id("nginx:1.27");
    assert!(tagged.starts_with("docker.io/library/nginx@sha256:"));
    assert_eq!(tagged.len(), "docker.io/library/nginx@sha256:".len() + 64);
    assert_eq!(tagged, image_id("nginx:1.27"), "stable");
    assert_ne!(tagged, image_id("nginx:1.28"));
    assert!(image_id("localhost:5000/app:v1").starts_with("localhost:5000/app@sha256:"));
}
