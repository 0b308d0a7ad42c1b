//! Git and local-directory sources: where an App's manifests come from.
//!
//! A [`spec::SourceSpec`] is validated into a [`spec::Source`]. Git repositories are fetched
//! into one bare mirror per [`url::SourceKey`] (shared by every App using the repository) and
//! read straight from the object database; local directories are read in place.

pub mod credentials;
pub mod directory;
pub mod git;
pub mod poller;
pub mod render_cache;
pub mod snapshot;
pub mod spec;
pub mod status;
pub mod url;
pub mod webhook;
