//! The built-in transformers that do not patch: namespace, name prefix/suffix, labels,
//! annotations, replicas, images, generator hash suffixes and build metadata.

use std::collections::BTreeMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::RenderError;
use super::config::Config;
use super::kustomization::{Image, Kustomization, Replica};
use super::labels::{self, FieldSpec};
use super::resource::{Origin, Res, child_map, ensure_map};

/// Namespace, prefix, suffix, labels and annotations of one kustomization, in kustomize's
/// order, at the built-in field specs and those `config` adds.
pub fn run(kust: &Kustomization, acc: &mut [Res], config: &Config) {
    if let Some(ns) = kust.namespace.as_deref().filter(|ns| !ns.is_empty()) {
        namespace(acc, ns, &config.namespace);
    }
    let prefix = kust.name_prefix.as_deref().unwrap_or("");
    let suffix = kust.name_suffix.as_deref().unwrap_or("");
    if !prefix.is_empty() || !suffix.is_empty() {
        let mut specs = vec![NAME_SPEC];
        specs.extend(extra(&config.name_prefix, "metadata/name").cloned());
        prefix_suffix(acc, prefix, "", &specs);
        let mut specs = vec![NAME_SPEC];
        specs.extend(extra(&config.name_suffix, "metadata/name").cloned());
        prefix_suffix(acc, "", suffix, &specs);
    }
    if !kust.common_labels.is_empty() {
        let mut specs = label_specs(true, true);
        specs.extend(config.common_labels.iter().cloned());
        set_pairs(acc, &kust.common_labels, &specs);
    }
    for label in &kust.labels {
        let mut specs = label_specs(label.include_selectors, label.include_templates);
        if label.include_selectors {
            specs.extend(config.common_labels.iter().cloned());
        } else if label.include_templates {
            specs.extend(config.template_labels.iter().cloned());
        }
        specs.extend(label.fields.iter().cloned());
        set_pairs(acc, &label.pairs, &specs);
    }
    if !kust.common_annotations.is_empty() {
        let mut specs = vec![labels::METADATA_ANNOTATIONS];
        specs.extend(labels::template_annotation_specs());
        specs.extend(config.common_annotations.iter().cloned());
        set_pairs(acc, &kust.common_annotations, &specs);
    }
}

/// `metadata/name` of every object: the name-prefix and suffix field.
const NAME_SPEC: FieldSpec = FieldSpec {
    group: None,
    version: None,
    kind: None,
    path: std::borrow::Cow::Borrowed("metadata/name"),
    create: false,
};

/// The namespace transformer (the `namespace` field, `NamespaceTransformer`): the built-in
/// fields, and `specs` besides `metadata/namespace`.
pub fn namespace(acc: &mut [Res], ns: &str, specs: &[FieldSpec]) {
    for res in acc.iter_mut() {
        res.has_previous_id = true;
        set_namespace(res, ns);
        for spec in extra(specs, "metadata/namespace") {
            set_strings(res, spec, &mut |_| ns.to_string());
        }
    }
}

/// The prefix/suffix transformer (`namePrefix`/`nameSuffix`, `PrefixSuffixTransformer`):
/// every string at `specs`, except in CustomResourceDefinitions, APIServices and Namespaces,
/// as kustomize skips them.
pub fn prefix_suffix(acc: &mut [Res], prefix: &str, suffix: &str, specs: &[FieldSpec]) {
    for res in acc.iter_mut() {
        if matches!(
            res.kind(),
            "CustomResourceDefinition" | "APIService" | "Namespace"
        ) {
            continue;
        }
        if !prefix.is_empty() || !suffix.is_empty() {
            res.has_previous_id = true;
        }
        for spec in specs {
            set_strings(res, spec, &mut |old| format!("{prefix}{old}{suffix}"));
        }
    }
}

/// The label and annotation transformers (`commonLabels`, `labels`, `commonAnnotations`,
/// `LabelTransformer`, `AnnotationsTransformer`): every pair set in the maps at `specs`.
pub fn set_pairs(acc: &mut [Res], pairs: &BTreeMap<String, String>, specs: &[FieldSpec]) {
    let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    for res in acc.iter_mut() {
        labels::set_pairs(res, specs, &pairs);
    }
}

/// The configured specs besides the built-in one at `default_path` (applied by the built-in
/// code already; applying it again would, say, prefix a name twice).
fn extra<'a>(specs: &'a [FieldSpec], default_path: &'a str) -> impl Iterator<Item = &'a FieldSpec> {
    specs
        .iter()
        .filter(move |s| !(s.path == default_path && s.kind.is_none()))
}

/// Replaces every string (or, where the spec creates it, missing field) at `spec` in `res`
/// with `f` of its old value.
fn set_strings(res: &mut Res, spec: &FieldSpec, f: &mut dyn FnMut(&str) -> String) {
    labels::visit(res, spec, &mut |node| match node {
        Value::String(old) => *old = f(old),
        Value::Null => *node = Value::String(f("")),
        _ => {}
    });
}

fn label_specs(selectors: bool, templates: bool) -> Vec<FieldSpec> {
    let mut specs = vec![labels::METADATA_LABELS];
    if selectors || templates {
        specs.extend(labels::template_label_specs());
    }
    if selectors {
        specs.extend(labels::selector_specs());
    }
    specs
}

/// The namespace transformer: namespaced objects move to `ns`, Namespace objects are renamed
/// to it, and the service reference of APIServices follows.
/// (ServiceAccount subjects follow through the name-reference fix-ups.)
fn set_namespace(res: &mut Res, ns: &str) {
    if res.kind() == "Namespace" {
        res.set_name(ns);
        return;
    }
    if !res.is_cluster_scoped() {
        res.set_namespace(ns);
    }
    // kustomize v5.5's default namespace field specs name APIService's service; webhook
    // configurations' services move only where a configuration says so.
    if res.kind() == "APIService"
        && let Some(Value::Object(service)) = res.obj.pointer_mut("/spec/service")
    {
        service.insert("namespace".into(), Value::String(ns.into()));
    }
}

/// The `replicas` transformer (built-in kinds, and the fields `config` adds).
pub fn replicas(
    entries: &[Replica],
    acc: &mut [Res],
    file: &str,
    config: &Config,
) -> Result<(), RenderError> {
    let specs: Vec<FieldSpec> = extra(&config.replicas, "spec/replicas").cloned().collect();
    for entry in entries {
        if !set_replicas(entry, acc, true, &specs) {
            return Err(RenderError::Invalid(format!(
                "{file}: replicas: resource with name {} does not match a config with the following GVK [Deployment.[noVer].[noGrp] StatefulSet.[noVer].[noGrp] ReplicaSet.[noVer].[noGrp] ReplicationController.[noVer].[noGrp]]",
                entry.name
            )));
        }
    }
    Ok(())
}

/// The `ReplicaCountTransformer` builtin: unlike the `replicas` field, only its own field
/// specs (none, and nothing matches: kustomize's error, listing no kinds).
pub fn replica_count(
    entry: &Replica,
    acc: &mut [Res],
    file: &str,
    specs: &[FieldSpec],
) -> Result<(), RenderError> {
    if set_replicas(entry, acc, false, specs) {
        return Ok(());
    }
    let gvks: Vec<String> = specs.iter().map(FieldSpec::gvk_string).collect();
    Err(RenderError::Invalid(format!(
        "{file}: ReplicaCountTransformer: resource with name {} does not match a config with the following GVK [{}]",
        entry.name,
        gvks.join(" ")
    )))
}

/// Sets `entry`'s count on the objects it names (by their current or original name): the
/// built-in workload kinds' `spec/replicas` when `builtin_kinds`, and the fields at `specs`.
/// Whether any object matched a kind.
fn set_replicas(
    entry: &Replica,
    acc: &mut [Res],
    builtin_kinds: bool,
    specs: &[FieldSpec],
) -> bool {
    const KINDS: [&str; 4] = [
        "Deployment",
        "ReplicationController",
        "ReplicaSet",
        "StatefulSet",
    ];
    let mut matched = false;
    for res in acc.iter_mut() {
        let named = res.name() == entry.name || res.orig_name == entry.name;
        if !named {
            continue;
        }
        if builtin_kinds && KINDS.contains(&res.kind()) {
            child_map(&mut res.obj, "spec").insert("replicas".into(), entry.count.into());
            matched = true;
        }
        for spec in specs {
            if spec.applies(res) {
                matched = true;
                labels::visit(res, spec, &mut |node| *node = entry.count.into());
            }
        }
    }
    matched
}

/// The `images` transformer, one entry after the other as kustomize runs one transformer
/// per entry: every `containers`/`initContainers` list anywhere in an object, then the
/// default image fields and those `config` adds (kustomize runs both passes, so the pod specs
/// the defaults name are updated twice, which `tagSuffix` shows).
pub fn images(entries: &[Image], acc: &mut [Res], config: &Config) {
    let defaults = default_image_specs();
    for entry in entries {
        let matcher = ImageMatcher::new(entry);
        for res in acc.iter_mut() {
            walk_containers(&mut res.obj, &matcher);
            for spec in defaults.iter().chain(&config.images) {
                labels::visit(res, spec, &mut |node| {
                    if let Value::String(image) = node {
                        matcher.update(image);
                    }
                });
            }
        }
    }
}

/// kustomize v5.5's default `images` field specs (any kind).
fn default_image_specs() -> Vec<FieldSpec> {
    [
        "spec/containers[]/image",
        "spec/initContainers[]/image",
        "spec/template/spec/containers[]/image",
        "spec/template/spec/initContainers[]/image",
    ]
    .into_iter()
    .map(|path| FieldSpec {
        path: std::borrow::Cow::Borrowed(path),
        ..NAME_SPEC
    })
    .collect()
}

/// One `images` entry with kustomize v5.5's `IsImageMatched` pattern compiled: the entry's
/// name, taken as a regular expression, then an optional `:tag` and `@sha256:digest` of tag
/// characters (`[a-zA-Z0-9_.{}-]`, possibly empty). A name that is no valid regular
/// expression matches nothing (kustomize crashes on it).
struct ImageMatcher<'a> {
    image: &'a Image,
    pattern: Option<regex::Regex>,
}

impl<'a> ImageMatcher<'a> {
    fn new(image: &'a Image) -> Self {
        let pattern = regex::Regex::new(&format!(
            "^(?:{})(:[a-zA-Z0-9_.{{}}-]*)?(@sha256:[a-zA-Z0-9_.{{}}-]*)?$",
            image.name
        ))
        .ok();
        Self { image, pattern }
    }

    fn matches(&self, image: &str) -> bool {
        self.pattern.as_ref().is_some_and(|p| p.is_match(image))
    }

    /// Applies the entry to one image reference, when it matches; whether it did.
    fn update(&self, current: &mut String) -> bool {
        let img = self.image;
        if !self.matches(current) {
            return false;
        }
        let (name, tag, digest) = split_image(current);
        let mut name = name.to_string();
        let (mut tag, mut digest) = (tag.to_string(), digest.to_string());
        if !img.new_name.is_empty() {
            name = img.new_name.clone();
        }
        if !img.new_tag.is_empty() && !img.digest.is_empty() {
            tag = img.new_tag.clone();
            digest = img.digest.clone();
        } else if !img.new_tag.is_empty() {
            tag = img.new_tag.clone();
            digest.clear();
        } else if !img.digest.is_empty() {
            tag.clear();
            digest = img.digest.clone();
        } else if !img.tag_suffix.is_empty() {
            tag.push_str(&img.tag_suffix);
            digest.clear();
        }
        if !tag.is_empty() {
            name = format!("{name}:{tag}");
        }
        if !digest.is_empty() {
            name = format!("{name}@{digest}");
        }
        *current = name;
        true
    }
}

/// Pins images to digests after rendering: every container whose image is one of `pins`'
/// repositories (`(repository, sha256:…)`) is set to `repository@digest`, as a kustomize
/// `images` entry with a `digest` would. Returns how many containers matched.
pub fn pin_images(objects: &mut [Value], pins: &[(String, String)]) -> usize {
    let mut matched = 0;
    for (repository, digest) in pins {
        // The matcher takes the name as a regular expression; a repository is literal.
        let entry = Image {
            name: regex::escape(repository),
            digest: digest.clone(),
            ..Image::default()
        };
        let matcher = ImageMatcher::new(&entry);
        matched += objects
            .iter_mut()
            .map(|object| walk_containers(object, &matcher))
            .sum::<usize>();
    }
    matched
}

/// Updates the image of every container in a `containers`/`initContainers` list anywhere
/// below `node` (kustomize's legacy image filter); returns how many matched.
fn walk_containers(node: &mut Value, image: &ImageMatcher) -> usize {
    let mut matched = 0;
    match node {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if (key == "containers" || key == "initContainers")
                    && let Value::Array(items) = child
                {
                    for item in items.iter_mut() {
                        if let Some(Value::String(current)) = item.get_mut("image") {
                            matched += usize::from(image.update(current));
                        }
                    }
                }
                matched += walk_containers(child, image);
            }
        }
        Value::Array(items) => {
            for item in items {
                matched += walk_containers(item, image);
            }
        }
        _ => {}
    }
    matched
}

/// kustomize's `image.Split`: name, tag and digest of an image reference (a registry host's
/// port is not taken for a tag).
pub fn split_image(image: &str) -> (&str, &str, &str) {
    let offset = match image.find('/') {
        Some(i) if i > 0 => i,
        _ => 0,
    };
    let search = &image[offset..];
    let at = search.find('@').map(|i| i + offset);
    let colon = search.find(':').map(|i| i + offset);
    match (colon, at) {
        (None, None) => (image, "", ""),
        (Some(c), Some(a)) if c < a => (&image[..c], &image[c + 1..a], &image[a + 1..]),
        (_, Some(a)) => (&image[..a], "", &image[a + 1..]),
        (Some(c), None) => (&image[..c], &image[c + 1..], ""),
    }
}

/// Appends the content hash to generated ConfigMaps and Secrets (done once, at the top).
pub fn add_hash_suffixes(acc: &mut [Res]) {
    for res in acc.iter_mut().filter(|r| r.needs_hash) {
        let hash = content_hash(&res.obj);
        let name = format!("{}-{hash}", res.name());
        res.set_name(&name);
        res.needs_hash = false;
    }
}

/// kustomize's name-suffix hash of a ConfigMap or Secret (kind, type, data, binaryData or
/// stringData).
pub fn content_hash(obj: &Value) -> String {
    let get = |key: &str| {
        obj.get(key)
            .cloned()
            .unwrap_or(Value::String(String::new()))
    };
    // kustomize looks the name up as a single field literally called `metadata/name`, which
    // never exists: the name is always hashed as "".
    let name = Value::String(String::new());
    let mut m = serde_json::Map::new();
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    m.insert("kind".into(), Value::String(kind.into()));
    m.insert("name".into(), name);
    m.insert("data".into(), get("data"));
    if kind == "Secret" {
        m.insert("type".into(), get("type"));
        if let Some(sd @ Value::Object(_)) = obj.get("stringData") {
            m.insert("stringData".into(), sd.clone());
        }
    } else if let Some(bd @ Value::Object(_)) = obj.get("binaryData") {
        m.insert("binaryData".into(), bd.clone());
    }
    let encoded = go_json(&Value::Object(m));
    let hex = hex::encode(Sha256::digest(encoded.as_bytes()));
    hex.chars()
        .take(10)
        .map(|c| match c {
            '0' => 'g',
            '1' => 'h',
            '3' => 'k',
            'a' => 'm',
            'e' => 't',
            other => other,
        })
        .collect()
}

/// Go's `json.Marshal` of a generic value: keys sorted, HTML characters escaped.
fn go_json(v: &Value) -> String {
    let sorted = sort_keys(v);
    let s = serde_json::to_string(&sorted).unwrap_or_default();
    s.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

fn sort_keys(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sort_keys(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sort_keys).collect()),
        other => other.clone(),
    }
}

/// `buildMetadata`: `managedByLabel` and `originAnnotations`.
pub fn build_metadata(
    acc: &mut [Res],
    options: &[String],
    top: &str,
    file: &str,
) -> Result<(), RenderError> {
    for option in options {
        match option.as_str() {
            "managedByLabel" => {
                for res in acc.iter_mut() {
                    let meta = child_map(&mut res.obj, "metadata");
                    ensure_map(meta.entry("labels").or_insert(Value::Null)).insert(
                        "app.kubernetes.io/managed-by".into(),
                        Value::String("kustomize-(devel)".into()),
                    );
                }
            }
            "originAnnotations" => {
                for res in acc.iter_mut() {
                    let origin = origin_text(&res.origin, top);
                    {
                        let meta = child_map(&mut res.obj, "metadata");
                        ensure_map(meta.entry("annotations").or_insert(Value::Null))
                            .insert("config.kubernetes.io/origin".into(), Value::String(origin));
                    }
                }
            }
            other => {
                return Err(RenderError::Kustomization {
                    file: file.to_string(),
                    message: format!("buildMetadata option '{other}' is not supported"),
                });
            }
        }
    }
    Ok(())
}

/// The `config.kubernetes.io/origin` annotation text, paths relative to the top directory.
fn origin_text(origin: &Origin, top: &str) -> String {
    match origin {
        Origin::File(path) => format!("path: {}\n", relative(top, path)),
        Origin::Generator { file, kind } => format!(
            "configuredIn: {}\nconfiguredBy:\n  apiVersion: builtin\n  kind: {kind}\n",
            relative(top, file)
        ),
    }
}

/// The tree path `path` relative to the directory `from`.
fn relative(from: &str, path: &str) -> String {
    let from: Vec<&str> = from.split('/').filter(|s| !s.is_empty()).collect();
    let to: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = vec![".."; from.len() - common];
    parts.extend(&to[common..]);
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_images_like_kustomize() {
        let matches = |image: &str, name: &str| {
            let entry = Image {
                name: name.into(),
                ..Image::default()
            };
            ImageMatcher::new(&entry).matches(image)
        };
        assert!(matches("nginx", "nginx"));
        assert!(matches("nginx:1.2", "nginx"));
        assert!(matches("nginx@sha256:abc", "nginx"));
        assert!(matches("nginx:1@sha256:abc", "nginx"));
        assert!(!matches("nginx-extra:1", "nginx"));
        // v5.5's tag pattern allows an empty tag and any tag character first.
        assert!(matches("nginx:", "nginx"));
        assert!(matches("nginx:-x", "nginx"));
        // The name is a regular expression; an invalid one matches nothing.
        assert!(matches("nginxy:1", "nginx."));
        assert!(!matches("nginx", "["));
    }

    #[test]
    fn splits_images_like_kustomize() {
        assert_eq!(split_image("nginx"), ("nginx", "", ""));
        assert_eq!(split_image("nginx:1.2"), ("nginx", "1.2", ""));
        assert_eq!(
            split_image("reg:5000/a/b:1@sha256:x"),
            ("reg:5000/a/b", "1", "sha256:x")
        );
        assert_eq!(split_image("a@sha256:x"), ("a", "", "sha256:x"));
    }

    #[test]
    fn pins_images_to_digests_like_a_kustomize_digest_entry() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let mut objects = vec![
            serde_json::json!({"kind": "Deployment", "spec": {"template": {"spec": {
                "initContainers": [{"name": "i", "image": "localhost:5000/web:1"}],
                "containers": [
                    {"name": "w", "image": "localhost:5000/web@sha256:0ld"},
                    {"name": "x", "image": "localhost:5000/web-extra:1"},
                    {"name": "n", "image": 7}
                ]
            }}}}),
            serde_json::json!({"kind": "ConfigMap", "data": {"image": "localhost:5000/web:1"}}),
        ];
        let pins = [("localhost:5000/web".to_string(), digest.clone())];
        assert_eq!(pin_images(&mut objects, &pins), 2);
        let spec = &objects[0]["spec"]["template"]["spec"];
        let pinned = format!("localhost:5000/web@{digest}");
        assert_eq!(spec["initContainers"][0]["image"], pinned.as_str());
        assert_eq!(spec["containers"][0]["image"], pinned.as_str());
        assert_eq!(spec["containers"][1]["image"], "localhost:5000/web-extra:1");
        assert_eq!(objects[1]["data"]["image"], "localhost:5000/web:1");
        // Pinning again changes nothing but still counts the matches.
        let before = objects.clone();
        assert_eq!(pin_images(&mut objects, &pins), 2);
        assert_eq!(objects, before);
        assert_eq!(pin_images(&mut objects, &[]), 0);
    }
}
