//! The kustomization file format (kustomize v5, `kustomize.config.k8s.io/v1beta1`).
//! Unknown fields are refused, as kustomize does.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::labels::FieldSpec;
use super::vars::Var;

/// A key present with a null value (`resources:` left empty by a scaffold) reads as empty,
/// as in kustomize (Go's YAML decoder leaves the field at its zero value).
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

/// A parsed `kustomization.yaml` (or a `Component`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Kustomization {
    /// `apiVersion` (informational, not checked).
    #[serde(default, rename = "apiVersion")]
    pub _api_version: Option<Value>,
    /// `Kustomization` or `Component`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Informational metadata (ignored).
    #[serde(default, rename = "metadata")]
    pub _metadata: Option<Value>,
    /// Files and directories to include.
    #[serde(default, deserialize_with = "null_as_default")]
    pub resources: Vec<String>,
    /// Deprecated spelling of `resources` (directories).
    #[serde(default, deserialize_with = "null_as_default")]
    pub bases: Vec<String>,
    /// Component directories applied to the accumulated resources.
    #[serde(default, deserialize_with = "null_as_default")]
    pub components: Vec<String>,
    /// Namespace set on every namespaced object.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Prefix for every name.
    #[serde(default)]
    pub name_prefix: Option<String>,
    /// Suffix for every name.
    #[serde(default)]
    pub name_suffix: Option<String>,
    /// Labels added to metadata and selectors (deprecated form).
    #[serde(default, deserialize_with = "null_as_default")]
    pub common_labels: BTreeMap<String, String>,
    /// Labels with explicit selector/template behaviour.
    #[serde(default, deserialize_with = "null_as_default")]
    pub labels: Vec<Label>,
    /// Annotations added to every object.
    #[serde(default, deserialize_with = "null_as_default")]
    pub common_annotations: BTreeMap<String, String>,
    /// Image overrides.
    #[serde(default, deserialize_with = "null_as_default")]
    pub images: Vec<Image>,
    /// Replica overrides.
    #[serde(default, deserialize_with = "null_as_default")]
    pub replicas: Vec<Replica>,
    /// Patches (strategic merge or JSON 6902).
    #[serde(default, deserialize_with = "null_as_default")]
    pub patches: Vec<Patch>,
    /// Deprecated strategic-merge patches (file paths or inline documents).
    #[serde(default, deserialize_with = "null_as_default")]
    pub patches_strategic_merge: Vec<String>,
    /// Deprecated JSON 6902 patches.
    #[serde(default, deserialize_with = "null_as_default")]
    pub patches_json6902: Vec<Patch>,
    /// ConfigMap generators.
    #[serde(default, deserialize_with = "null_as_default")]
    pub config_map_generator: Vec<Generator>,
    /// Secret generators.
    #[serde(default, deserialize_with = "null_as_default")]
    pub secret_generator: Vec<Generator>,
    /// Options for every generator of this kustomization.
    #[serde(default)]
    pub generator_options: Option<GeneratorOptions>,
    /// Field replacements.
    #[serde(default, deserialize_with = "null_as_default")]
    pub replacements: Vec<Value>,
    /// Output ordering.
    #[serde(default)]
    pub sort_options: Option<SortOptions>,
    /// Build metadata annotations to add (`originAnnotations`, `transformerAnnotations`,
    /// `managedByLabel`).
    #[serde(default, deserialize_with = "null_as_default")]
    pub build_metadata: Vec<String>,
    /// Vars substituted as `$(NAME)` in var-reference fields.
    #[serde(default, deserialize_with = "null_as_default")]
    pub vars: Vec<Var>,
    /// Not supported by wardn.
    #[serde(default)]
    pub crds: Option<Value>,
    /// Not supported by wardn.
    #[serde(default, rename = "openapi")]
    pub openapi: Option<Value>,
    /// Transformer configuration files (extra field specs).
    #[serde(default, deserialize_with = "null_as_default")]
    pub configurations: Vec<String>,
    /// Generator plugin configs (inline documents or paths); only builtins run.
    #[serde(default, deserialize_with = "null_as_default")]
    pub generators: Vec<String>,
    /// Transformer plugin configs (inline documents or paths); only builtins run.
    #[serde(default, deserialize_with = "null_as_default")]
    pub transformers: Vec<String>,
    /// Not supported by wardn (plugins).
    #[serde(default)]
    pub validators: Option<Value>,
    /// Not supported by wardn (Helm).
    #[serde(default)]
    pub helm_charts: Option<Value>,
    /// Not supported by wardn (Helm).
    #[serde(default)]
    pub helm_globals: Option<Value>,
}

impl Kustomization {
    /// The first field wardn refuses to handle, if any.
    pub fn unsupported_field(&self) -> Option<&'static str> {
        [
            ("crds", &self.crds),
            ("openapi", &self.openapi),
            ("validators", &self.validators),
            ("helmCharts", &self.helm_charts),
            ("helmGlobals", &self.helm_globals),
        ]
        .into_iter()
        .find(|(_, v)| v.as_ref().is_some_and(|v| !v.is_null()))
        .map(|(name, _)| name)
    }
}

/// One `labels` entry.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Label {
    /// The labels.
    #[serde(default, deserialize_with = "null_as_default")]
    pub pairs: BTreeMap<String, String>,
    /// Also add to selectors (and templates).
    #[serde(default, deserialize_with = "null_as_default")]
    pub include_selectors: bool,
    /// Also add to pod templates.
    #[serde(default, deserialize_with = "null_as_default")]
    pub include_templates: bool,
    /// Extra field specs the labels are set at.
    #[serde(default, deserialize_with = "null_as_default")]
    pub fields: Vec<FieldSpec>,
}

/// One `images` entry.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Image {
    /// The image name to match.
    #[serde(default)]
    pub name: String,
    /// Replacement name.
    #[serde(default)]
    pub new_name: String,
    /// Replacement tag.
    #[serde(default)]
    pub new_tag: String,
    /// Replacement digest.
    #[serde(default)]
    pub digest: String,
    /// Appended to the tag (when neither `newTag` nor `digest` is given; drops a digest).
    #[serde(default)]
    pub tag_suffix: String,
}

/// One `replicas` entry.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Replica {
    /// The workload name.
    pub name: String,
    /// The replica count.
    pub count: i64,
}

/// One `patches` / `patchesJson6902` entry.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Patch {
    /// A file holding the patch.
    #[serde(default)]
    pub path: Option<String>,
    /// The inline patch.
    #[serde(default)]
    pub patch: Option<String>,
    /// Which objects to patch.
    #[serde(default)]
    pub target: Option<Target>,
    /// `allowNameChange` / `allowKindChange`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub options: BTreeMap<String, bool>,
}

/// A patch or replacement target selector.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Target {
    /// Group (regex).
    #[serde(default)]
    pub group: Option<String>,
    /// Version (regex).
    #[serde(default)]
    pub version: Option<String>,
    /// Kind (regex).
    #[serde(default)]
    pub kind: Option<String>,
    /// Name (regex).
    #[serde(default)]
    pub name: Option<String>,
    /// Namespace (regex).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Label selector.
    #[serde(default)]
    pub label_selector: Option<String>,
    /// Annotation selector.
    #[serde(default)]
    pub annotation_selector: Option<String>,
}

/// A `configMapGenerator` / `secretGenerator` entry.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Generator {
    /// Object name.
    #[serde(default)]
    pub name: String,
    /// Object namespace.
    #[serde(default)]
    pub namespace: Option<String>,
    /// `create` (default), `merge` or `replace`.
    #[serde(default)]
    pub behavior: Option<String>,
    /// `KEY=VALUE` entries.
    #[serde(default, deserialize_with = "null_as_default")]
    pub literals: Vec<String>,
    /// `[key=]path` entries.
    #[serde(default, deserialize_with = "null_as_default")]
    pub files: Vec<String>,
    /// Env files.
    #[serde(default, deserialize_with = "null_as_default")]
    pub envs: Vec<String>,
    /// Deprecated single env file.
    #[serde(default)]
    pub env: Option<String>,
    /// Secret type.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// Per-generator options.
    #[serde(default)]
    pub options: Option<GeneratorOptions>,
}

/// `generatorOptions` or a generator's `options`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GeneratorOptions {
    /// Labels on the generated object.
    #[serde(default, deserialize_with = "null_as_default")]
    pub labels: BTreeMap<String, String>,
    /// Annotations on the generated object.
    #[serde(default, deserialize_with = "null_as_default")]
    pub annotations: BTreeMap<String, String>,
    /// Skip the content-hash name suffix.
    #[serde(default)]
    pub disable_name_suffix_hash: Option<bool>,
    /// Mark the object immutable.
    #[serde(default)]
    pub immutable: Option<bool>,
}

/// `sortOptions`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SortOptions {
    /// `legacy` or `fifo`.
    #[serde(default)]
    pub order: Option<String>,
    /// Custom orderFirst/orderLast lists for legacy sorting.
    #[serde(default)]
    pub legacy_sort_options: Option<LegacySortOptions>,
}

/// `sortOptions.legacySortOptions`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LegacySortOptions {
    /// Kinds output first, in this order.
    #[serde(default, deserialize_with = "null_as_default")]
    pub order_first: Vec<String>,
    /// Kinds output last, in this order.
    #[serde(default, deserialize_with = "null_as_default")]
    pub order_last: Vec<String>,
}
