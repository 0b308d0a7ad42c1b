//! Reading the files a kustomization names: remote entries refused, kustomize's default load
//! restrictor applied, and tree directories worded for messages. Shared by the loader and the
//! generators, patches and replacements that read files of their own.

use super::RenderError;
use super::parse;
use super::tree::{Tree, TreeError, normalize};

/// kustomize's default load restrictor: a file must be in or below the kustomization root
/// `dir`, both taken where they really are (every symlink along them followed, as kustomize
/// evaluates symlinks before comparing), so a symlink never brings in a file from outside.
/// A missing file passes (reading it reports it).
pub fn restrict(tree: &dyn Tree, dir: &str, path: &str) -> Result<(), RenderError> {
    if in_root(tree, dir, path)? {
        Ok(())
    } else {
        Err(RenderError::Invalid(format!(
            "security; file '{path}' is not in or below '{}'",
            display_dir(dir)
        )))
    }
}

/// Whether `path` really is in or below `dir` (see [`restrict`]; a missing path is, a
/// symlink leading out of the whole tree is not).
pub fn in_root(tree: &dyn Tree, dir: &str, path: &str) -> Result<bool, RenderError> {
    let real = match tree.real_path(path) {
        Ok(Some(real)) => real,
        Ok(None) => return Ok(true),
        Err(TreeError::Forbidden { .. }) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    let real_dir = tree.real_path(dir)?.unwrap_or_else(|| dir.to_string());
    Ok(within(&real_dir, &real))
}

/// Whether the tree path `path` is strictly below the tree directory `dir`.
fn within(dir: &str, path: &str) -> bool {
    dir.is_empty() && !path.is_empty()
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Reads the file at the tree path `path` for the kustomization in `dir`: the one place
/// every file a kustomization names is read, load restrictor applied.
pub fn read_restricted(tree: &dyn Tree, dir: &str, path: &str) -> Result<Vec<u8>, RenderError> {
    restrict(tree, dir, path)?;
    Ok(tree.read_file(path, parse::MAX_FILE_BYTES)?)
}

/// Reads a file entry of a kustomization in `dir` (remote entries refused, load restrictor
/// applied).
pub fn read_local(tree: &dyn Tree, dir: &str, entry: &str) -> Result<Vec<u8>, RenderError> {
    refuse_remote(entry)?;
    let path = normalize(dir, entry)?;
    read_restricted(tree, dir, &path)
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
