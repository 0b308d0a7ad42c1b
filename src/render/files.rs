//! Reading the files a kustomization names: remote entries refused, kustomize's default load
//! restrictor applied, and tree directories worded for messages. Shared by the loader and the
//! generators, patches and replacements that read files of their own.

use super::RenderError;
use super::parse;
use super::tree::{Tree, normalize};

/// kustomize's default load restrictor: a file must be in or below the kustomization root.
pub fn restrict(dir: &str, path: &str) -> Result<(), RenderError> {
    if dir.is_empty() || path.starts_with(&format!("{dir}/")) {
        Ok(())
    } else {
        Err(RenderError::Invalid(format!(
            "security; file '{path}' is not in or below '{}'",
            display_dir(dir)
        )))
    }
}

/// Reads a file referenced by a kustomization in `dir` (load restrictor applied).
pub fn read_local(tree: &dyn Tree, dir: &str, entry: &str) -> Result<Vec<u8>, RenderError> {
    refuse_remote(entry)?;
    let path = normalize(dir, entry)?;
    restrict(dir, &path)?;
    Ok(tree.read_file(&path, parse::MAX_FILE_BYTES)?)
}

/// Refuses a remote entry (a URL or a hosted repository): wardn reads only the snapshot.
pub fn refuse_remote(entry: &str) -> Result<(), RenderError> {
    let remote = entry.contains("://")
        || entry.starts_with("git@")
        || entry.starts_with("github.com/")
        || entry.starts_with("gitlab.com/")
        || entry.starts_with("bitbucket.org/");
    if remote {
        Err(RenderError::Invalid(format!(
            "remote resource '{entry}' refused: wardn renders only files inside the source snapshot"
        )))
    } else {
        Ok(())
    }
}

/// A tree directory for messages (`.` for the root).
pub fn display_dir(dir: &str) -> &str {
    if dir.is_empty() { "." } else { dir }
}
