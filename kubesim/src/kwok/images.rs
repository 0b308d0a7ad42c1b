//! Container images as containerd reports them: normalized references
//! (`containerStatuses[].image`) and image IDs (`containerStatuses[].imageID`).

use super::names::sha256_hex;

/// An image reference normalized as containerd reports it in `containerStatuses[].image`:
/// Docker Hub names gain `docker.io/` (and `library/` for official images), and a reference
/// with neither tag nor digest gains `:latest`.
pub fn normalize_image(image: &str) -> String {
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    let (first, rest) = match name.split_once('/') {
        Some((first, rest)) => (first, Some(rest)),
        None => (name, None),
    };
    let has_domain =
        rest.is_some() && (first.contains('.') || first.contains(':') || first == "localhost");
    let full = match (has_domain, rest) {
        (true, _) => name.to_string(),
        (false, Some(_)) => format!("docker.io/{name}"),
        (false, None) => format!("docker.io/library/{name}"),
    };
    let last_segment = full.rsplit('/').next().unwrap_or_default();
    let tagged = last_segment.contains(':');
    match digest {
        Some(digest) => format!("{full}@{digest}"),
        None if tagged => full,
        None => format!("{full}:latest"),
    }
}

/// `containerStatuses[].imageID` as containerd reports it: `REPOSITORY@sha256:DIGEST`. When
/// the image names its digest (`repo@sha256:…`, with or without a tag) that digest is used;
/// otherwise the digest is a stable sha256 of the image string (no registry to ask).
pub fn image_id(image: &str) -> String {
    let normalized = normalize_image(image);
    let (name, digest) = match normalized.split_once('@') {
        Some((name, digest)) => (name.to_string(), digest.to_string()),
        None => (normalized.clone(), format!("sha256:{}", sha256_hex(image))),
    };
    let last_slash = name.rfind('/').map_or(0, |index| index + 1);
    let repository = match name[last_slash..].find(':') {
        Some(colon) => &name[..last_slash + colon],
        None => name.as_str(),
    };
    format!("{repository}@{digest}")
}
