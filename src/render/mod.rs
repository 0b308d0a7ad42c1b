//! Rendering: a directory of a source snapshot → the ordered Kubernetes objects it declares,
//! with kustomize v5 semantics and byte-identical output (`kubectl kustomize`, kustomize
//! v5.5.0), computed in-process without the kustomize binary.
//!
//! Flow: [`loader`] reads kustomizations through an input-recording [`tree::Tree`], builds
//! each one (resources, components, generators, transformers), then the top level adds
//! generator hashes, fixes name references, sorts, and [`emit`] prints go-yaml v2 YAML.

pub mod block_yaml;
mod checks;
mod config;
mod crds;
mod emit;
mod files;
mod generators;
mod inputs;
mod kustomization;
mod labels;
mod loader;
mod nameref;
mod packed;
mod parse;
mod patches;
mod plugins;
mod replacements;
mod resource;
mod scalar;
mod selector;
mod sort;
mod split;
mod transform;
pub mod tree;
mod vars;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde_json::Value;
use sha2::{Digest, Sha256};

pub use inputs::InputsFingerprint;
pub use packed::{PackedObjects, PackedRender, UnpackError};
pub use parse::{empty_values, library_documents};
pub use transform::{pin_images, split_image};
pub use tree::{DirTree, Tree, TreeError};

/// The result of rendering a directory.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The objects, in output order.
    pub objects: Vec<Value>,
    /// The canonical YAML output (what `kubectl kustomize` prints).
    pub yaml: String,
    /// sha256 (hex) of `yaml`.
    pub digest: String,
    /// Everything the result depends on: each file read (`path` → sha256 of its bytes), each
    /// directory listing (`dir/` → sha256 of the sorted listing) and each existence probe
    /// (`path?` → sha256 of `file`, `dir` or `none`). A cache keyed on these is invalidated by
    /// any change, including an added file.
    pub inputs: BTreeMap<String, String>,
}

/// Why a directory could not be rendered. Messages name the file chain that led to the
/// failure, outermost first.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The tree refused or failed a read.
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// A file is not valid YAML (or over a parsing budget).
    #[error("{file}: {message}")]
    Yaml {
        /// The file.
        file: String,
        /// The parser's complaint.
        message: String,
    },
    /// A kustomization file is malformed.
    #[error("{file}: invalid Kustomization: {message}")]
    Kustomization {
        /// The kustomization file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// Anything else that makes the input unrenderable.
    #[error("{0}")]
    Invalid(String),
    /// An error inside a nested step, with the step that led there.
    #[error("{context}: {cause}")]
    Context {
        /// What was being done (e.g. `accumulating resources from 'base' in overlay/kustomization.yaml`).
        context: String,
        /// The underlying error (part of this error's message, hence not a `source`).
        cause: Box<RenderError>,
    },
}

impl RenderError {
    /// Wraps `self` with a step of the file chain.
    pub fn context(self, context: impl Into<String>) -> Self {
        RenderError::Context {
            context: context.into(),
            cause: Box::new(self),
        }
    }

    /// Whether a file changed on disk after the snapshot being rendered was taken
    /// ([`TreeError::Changed`]): the source is not at fault, and a fresh snapshot renders.
    pub fn source_changed(&self) -> bool {
        match self {
            RenderError::Tree(TreeError::Changed { .. }) => true,
            RenderError::Context { cause, .. } => cause.source_changed(),
            _ => false,
        }
    }
}

/// sha256 (hex) of rendered YAML.
fn yaml_digest(yaml: &str) -> String {
    hex::encode(Sha256::digest(yaml.as_bytes()))
}

/// The digest [`render`] reports for `objects` (sha256 of their canonical YAML): what a
/// render that produced them, e.g. after [`pin_images`], would be known by.
pub fn objects_digest(objects: &[Value]) -> String {
    yaml_digest(&emit::documents_to_yaml(objects))
}

/// Renders the directory `dir` (a tree path, `""` for the root) of `tree`.
pub fn render(tree: &dyn Tree, dir: &str) -> Result<Rendered, RenderError> {
    let recorder = inputs::Recorder::new(tree);
    let dir = tree::normalize("", dir)?;
    let objects = loader::build_top(&recorder, &dir)?;
    let yaml = emit::documents_to_yaml(&objects);
    let digest = yaml_digest(&yaml);
    Ok(Rendered {
        objects,
        yaml,
        digest,
        inputs: recorder.into_inputs(),
    })
}

/// Renders a local directory for `wardn render` to `out`: YAML, or with `json` a JSON array.
///
/// The tree is rooted at the enclosing Git work tree (the nearest ancestor holding `.git`),
/// so overlays may reach bases elsewhere in the repository but never outside it; without a
/// Git work tree it is rooted at `/`, like kustomize (the per-kustomization load restrictor
/// still applies). Nothing is written when rendering fails.
pub fn render_path(path: &Path, json: bool, out: &mut dyn Write) -> Result<(), RenderError> {
    let abs = path.canonicalize().map_err(|e| TreeError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let root = abs
        .ancestors()
        .find(|a| a.join(".git").exists())
        .unwrap_or(Path::new("/"))
        .to_path_buf();
    let rel = abs
        .strip_prefix(&root)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tree = DirTree::new(&root)?;
    // No inputs recorded and no digest: nothing keeps this render for later.
    let objects = loader::build_top(&tree, &tree::normalize("", &rel)?)?;
    let written = if json {
        serde_json::to_writer_pretty(&mut *out, &objects)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
    } else {
        emit::write_documents(&objects, out)
    };
    written.map_err(|e| RenderError::Invalid(format!("writing the output: {e}")))
}
