//! Builtin plugin configs listed under `transformers:` and `generators:` (`apiVersion:
//! builtin`, inline or loaded from files and directories). Each builtin runs the code of
//! the kustomization field it stands for; external plugins (any other `apiVersion`) are
//! refused with kustomize's offline message, since wardn runs no plugin code.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::config::Config;
use super::kustomization::{Generator, GeneratorOptions, Image, Patch, Replica, Target};
use super::labels::FieldSpec;
use super::resource::{Res, str_at};
use super::tree::Tree;
use super::{RenderError, generators, patches, replacements, transform};

/// Where the plugins run: the kustomization's directory and file, and its tree.
pub struct Site<'a> {
    /// The tree.
    pub tree: &'a dyn Tree,
    /// The kustomization's directory.
    pub dir: &'a str,
    /// The kustomization file (for messages).
    pub file: &'a str,
}

/// `PrefixSuffixTransformer`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PrefixSuffix {
    #[serde(default)]
    prefix: String,
    #[serde(default)]
    suffix: String,
    #[serde(default)]
    field_specs: Vec<FieldSpec>,
}

/// `LabelTransformer` and `AnnotationsTransformer`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Pairs {
    #[serde(default, alias = "annotations")]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    field_specs: Vec<FieldSpec>,
}

/// `NamespaceTransformer`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Namespace {
    #[serde(default)]
    field_specs: Vec<FieldSpec>,
}

/// `ImageTagTransformer`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ImageTag {
    image_tag: Image,
    #[serde(default)]
    field_specs: Vec<FieldSpec>,
}

/// `PatchStrategicMergeTransformer`.
#[derive(Deserialize)]
struct StrategicMerge {
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    patches: Option<String>,
}

/// `PatchJson6902Transformer`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Json6902 {
    target: Target,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    json_op: Option<String>,
}

/// `ReplacementTransformer`.
#[derive(Deserialize)]
struct Replacements {
    #[serde(default)]
    replacements: Vec<Value>,
}

/// `ReplicaCountTransformer`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReplicaCount {
    replica: Replica,
    #[serde(default)]
    field_specs: Vec<FieldSpec>,
}

/// The kind of a builtin config, refusing external plugins and unknown builtins as kustomize
/// does.
fn builtin_kind(config: &Value) -> Result<&str, RenderError> {
    let kind = str_at(config, &["kind"]);
    if str_at(config, &["apiVersion"]) != "builtin" {
        return Err(RenderError::Invalid(format!(
            "external plugins disabled; unable to load external plugin '{kind}'"
        )));
    }
    Ok(kind)
}

fn unknown_builtin(kind: &str) -> RenderError {
    RenderError::Invalid(format!("unable to load builtin {kind}.builtin.[noGrp]"))
}

/// The config's own fields (without `apiVersion`, `kind` and `metadata`), as `T`.
fn body<T: DeserializeOwned>(site: &Site, config: &Value) -> Result<T, RenderError> {
    let mut map = config.as_object().cloned().unwrap_or_default();
    for key in ["apiVersion", "kind", "metadata"] {
        map.remove(key);
    }
    serde_json::from_value(Value::Object(map)).map_err(|e| {
        RenderError::Invalid(format!(
            "{}: builtin {} config '{}': {e}",
            site.file,
            str_at(config, &["kind"]),
            str_at(config, &["metadata", "name"])
        ))
    })
}

/// Runs the builtin transformer `configs` against `acc`, in order.
pub fn transform(site: &Site, configs: &[Value], acc: &mut Vec<Res>) -> Result<(), RenderError> {
    for config in configs {
        let (tree, dir, file) = (site.tree, site.dir, site.file);
        match builtin_kind(config)? {
            "PrefixSuffixTransformer" => {
                let c: PrefixSuffix = body(site, config)?;
                transform::prefix_suffix(acc, &c.prefix, &c.suffix, &c.field_specs);
            }
            "LabelTransformer" | "AnnotationsTransformer" => {
                let c: Pairs = body(site, config)?;
                transform::set_pairs(acc, &c.labels, &c.field_specs);
            }
            "NamespaceTransformer" => {
                let c: Namespace = body(site, config)?;
                let ns = str_at(config, &["metadata", "namespace"]);
                if !ns.is_empty() {
                    transform::namespace(acc, ns, &c.field_specs);
                }
            }
            "ImageTagTransformer" => {
                let c: ImageTag = body(site, config)?;
                let only = Config {
                    images: c.field_specs,
                    ..Config::default()
                };
                transform::images(std::slice::from_ref(&c.image_tag), acc, &only);
            }
            "PatchTransformer" => {
                let c: Patch = body(site, config)?;
                patches::patches(tree, dir, file, std::slice::from_ref(&c), acc)?;
            }
            "PatchStrategicMergeTransformer" => {
                let c: StrategicMerge = body(site, config)?;
                let mut entries = c.paths;
                entries.extend(c.patches);
                patches::strategic_merge_files(tree, dir, file, &entries, acc)?;
            }
            "PatchJson6902Transformer" => {
                let c: Json6902 = body(site, config)?;
                let patch = Patch {
                    path: c.path,
                    patch: c.json_op,
                    target: Some(c.target),
                    options: BTreeMap::new(),
                };
                patches::json6902(tree, dir, file, std::slice::from_ref(&patch), acc)?;
            }
            "ReplacementTransformer" => {
                let c: Replacements = body(site, config)?;
                replacements::run(tree, dir, file, &c.replacements, acc)?;
            }
            "ReplicaCountTransformer" => {
                let c: ReplicaCount = body(site, config)?;
                transform::replica_count(&c.replica, acc, file, &c.field_specs)?;
            }
            kind => return Err(unknown_builtin(kind)),
        }
    }
    Ok(())
}

/// Runs the validator `configs` (transformer configs, refused as in [`transform`]) on a copy
/// of `acc`: as in kustomize, a validator that changes the objects is an error.
pub fn validate(site: &Site, configs: &[Value], acc: &[Res]) -> Result<(), RenderError> {
    for config in configs {
        let mut copy = acc.to_vec();
        transform(site, std::slice::from_ref(config), &mut copy)?;
        let changed = copy.len() != acc.len() || copy.iter().zip(acc).any(|(a, b)| a.obj != b.obj);
        if changed {
            return Err(RenderError::Invalid(format!(
                "validator shouldn't modify the resource map: {} '{}' changed the objects",
                str_at(config, &["kind"]),
                str_at(config, &["metadata", "name"])
            )));
        }
    }
    Ok(())
}

/// Runs the builtin generator `configs` (`ConfigMapGenerator`, `SecretGenerator`), adding
/// what they make to `acc`. The name and namespace default to the config's metadata.
pub fn generate(site: &Site, configs: &[Value], acc: &mut Vec<Res>) -> Result<(), RenderError> {
    for config in configs {
        let kind = match builtin_kind(config)? {
            "ConfigMapGenerator" => "ConfigMap",
            "SecretGenerator" => "Secret",
            other => return Err(unknown_builtin(other)),
        };
        let mut generator: Generator = body(site, config)?;
        if generator.name.is_empty() {
            generator.name = str_at(config, &["metadata", "name"]).to_string();
        }
        if generator.namespace.as_deref().is_none_or(str::is_empty) {
            let ns = str_at(config, &["metadata", "namespace"]);
            generator.namespace = (!ns.is_empty()).then(|| ns.to_string());
        }
        generators::run_one(
            site.tree,
            site.dir,
            site.file,
            &generator,
            kind,
            &GeneratorOptions::default(),
            acc,
        )?;
    }
    Ok(())
}
