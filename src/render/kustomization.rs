//! The kustomization file format (kustomize v5, `kustomize.config.k8s.io/v1beta1`).
//! Unknown fields are refused, as kustomize does.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
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
    /// CRD schema files (OpenAPI definitions) whose `x-kubernetes-*` extensions add field
    /// specs (name references, labels, annotations, name prefixes), as kustomize's `crds`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub crds: Vec<String>,
    /// The OpenAPI schema: kustomize's built-in `version` (only `v1.21.2` is built in), or a
    /// custom schema `path` (refused: wardn's merge keys are Kubernetes' own).
    #[serde(default, rename = "openapi", deserialize_with = "null_as_default")]
    pub openapi: BTreeMap<String, String>,
    /// Transformer configuration files (extra field specs).
    #[serde(default, deserialize_with = "null_as_default")]
    pub configurations: Vec<String>,
    /// Generator plugin configs (inline documents or paths); only builtins run.
    #[serde(default, deserialize_with = "null_as_default")]
    pub generators: Vec<String>,
    /// Transformer plugin configs (inline documents or paths); only builtins run.
    #[serde(default, deserialize_with = "null_as_default")]
    pub transformers: Vec<String>,
    /// Validator plugin configs: run like transformers, and refused when they change the
    /// objects (kustomize's check); external ones are refused as kustomize refuses them.
    #[serde(default, deserialize_with = "null_as_default")]
    pub validators: Vec<String>,
    /// Helm charts to inflate: refused with kustomize's message (helm is not enabled, as
    /// `kubectl kustomize` without `--enable-helm`); an empty list is accepted.
    #[serde(default, deserialize_with = "null_as_default")]
    pub helm_charts: Vec<HelmChart>,
    /// Settings shared by the Helm charts (only used with `helmCharts`).
    #[serde(default, deserialize_with = "null_as_default")]
    pub helm_globals: HelmGlobals,
}

/// `helmGlobals`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HelmGlobals {
    /// Where charts are kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub chart_home: String,
    /// Helm's configuration directory.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub config_home: String,
}

/// One `helmCharts` entry, with kustomize's fields (so a misspelt one is refused as kustomize
/// refuses it) and its serialisation (zero values left out), which kustomize's refusal quotes.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HelmChart {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    repo: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    release_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    namespace: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    additional_values_files: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    values_file: String,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    values_inline: serde_json::Map<String, Value>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    values_merge: String,
    #[serde(default, rename = "includeCRDs", skip_serializing_if = "is_false")]
    include_crds: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    skip_hooks: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    api_versions: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    kube_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    name_template: String,
    #[serde(default, skip_serializing_if = "is_false")]
    skip_tests: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    debug: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A `helmCharts` entry with the `helmGlobals` kustomize configures its generator with.
#[derive(Serialize)]
pub struct HelmConfig<'a> {
    /// The globals.
    #[serde(flatten)]
    pub globals: &'a HelmGlobals,
    /// The chart.
    #[serde(flatten)]
    pub chart: &'a HelmChart,
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
