//! Transformer configurations (`configurations:` files, kustomize's `TransformerConfig`, as in
//! kubebuilder's `kustomizeconfig.yaml`): field specs added to the built-in ones for name
//! references, namespaces, labels, annotations, name prefixes and suffixes, images, replicas
//! and var references. A kustomization's configurations apply to its own transformers and,
//! merged upward like kustomize's accumulator, to those of every kustomization including it
//! and to the name-reference and var fix-ups at the top.

use serde::Deserialize;

use super::files::read_local;
use super::labels::FieldSpec;
use super::tree::Tree;
use super::{RenderError, parse};

/// The field specs configured on top of the built-in ones.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Config {
    /// Fields naming other objects, per referred kind.
    #[serde(default)]
    pub name_reference: Vec<NameReference>,
    /// Namespace fields.
    #[serde(default)]
    pub namespace: Vec<FieldSpec>,
    /// `commonLabels` (and `labels` with `includeSelectors`) fields.
    #[serde(default)]
    pub common_labels: Vec<FieldSpec>,
    /// `labels` with `includeTemplates` fields.
    #[serde(default)]
    pub template_labels: Vec<FieldSpec>,
    /// `commonAnnotations` fields.
    #[serde(default)]
    pub common_annotations: Vec<FieldSpec>,
    /// Name fields given `namePrefix`.
    #[serde(default)]
    pub name_prefix: Vec<FieldSpec>,
    /// Name fields given `nameSuffix`.
    #[serde(default)]
    pub name_suffix: Vec<FieldSpec>,
    /// Image fields (the image string itself).
    #[serde(default)]
    pub images: Vec<FieldSpec>,
    /// Replica count fields.
    #[serde(default)]
    pub replicas: Vec<FieldSpec>,
    /// Fields where `$(VAR)` is substituted.
    #[serde(default)]
    pub var_reference: Vec<FieldSpec>,
}

/// One `nameReference` entry: fields that name an object of the given kind.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NameReference {
    /// The referred kind.
    pub kind: String,
    /// The referred group (`None`: any).
    #[serde(default)]
    pub group: Option<String>,
    /// The referring fields.
    #[serde(default)]
    pub field_specs: Vec<FieldSpec>,
}

impl Config {
    /// Reads the `configurations:` files of the kustomization in `dir` (load restrictor
    /// applied), merged in order.
    pub fn load(
        tree: &dyn Tree,
        dir: &str,
        file: &str,
        paths: &[String],
    ) -> Result<Self, RenderError> {
        let mut config = Config::default();
        for path in paths {
            let bytes = read_local(tree, dir, path)
                .map_err(|e| e.context(format!("loading configurations '{path}' of {file}")))?;
            let doc = parse::document(path, &bytes)?;
            if doc.is_null() {
                continue;
            }
            let one: Config =
                serde_json::from_value(doc).map_err(|e| RenderError::Kustomization {
                    file: path.clone(),
                    message: format!("invalid transformer configuration: {e}"),
                })?;
            config.merge(one);
        }
        Ok(config)
    }

    /// Adds `other`'s specs to these, skipping exact duplicates (kustomize merges the same
    /// configuration reached through several bases once).
    pub fn merge(&mut self, other: Config) {
        fn add<T: PartialEq>(into: &mut Vec<T>, from: Vec<T>) {
            for item in from {
                if !into.contains(&item) {
                    into.push(item);
                }
            }
        }
        for reference in other.name_reference {
            match self
                .name_reference
                .iter_mut()
                .find(|r| r.kind == reference.kind && r.group == reference.group)
            {
                Some(existing) => add(&mut existing.field_specs, reference.field_specs),
                None => self.name_reference.push(reference),
            }
        }
        add(&mut self.namespace, other.namespace);
        add(&mut self.common_labels, other.common_labels);
        add(&mut self.template_labels, other.template_labels);
        add(&mut self.common_annotations, other.common_annotations);
        add(&mut self.name_prefix, other.name_prefix);
        add(&mut self.name_suffix, other.name_suffix);
        add(&mut self.images, other.images);
        add(&mut self.replicas, other.replicas);
        add(&mut self.var_reference, other.var_reference);
    }
}
