//! Git and local-directory sources: where an App's manifests come from.
//!
//! A [`spec::SourceSpec`] is validated into a [`spec::Source`]. Git repositories are fetched
//! into one bare mirror per [`url::SourceKey`] (shared by every App using the repository) and
//! read straight from the object database; local directories are read in place.
//!
//! How the pieces fit (the reconciler composes them):
//! - [`poller::Poller::new`] gives a scheduler handle and a channel of
//!   [`status::SourceUpdate`]s; [`poller::Poller::subscribe`] registers an App's Git source
//!   (with its [`credentials::Credentials`]), [`directory::watch`] a Directory source on the
//!   same channel.
//! - An update carries the App's [`status::SourceStatus`] and, when the revision moved, a
//!   [`snapshot::Snapshot`]; [`render_cache::RenderCache::render`] renders the App's path from
//!   it, reusing the previous result when the files it read are unchanged.
//! - [`repositories::Repositories`] keeps the credentials and webhook secrets registered
//!   through the API (sealed) and is the poller's [`credentials::CredentialsProvider`] and
//!   the webhook's [`webhook::WebhookSecretProvider`]; an operator-role process, which has no
//!   store, reads the same credentials from the server ([`server_credentials`]).
//! - [`webhook`] checks the signature of `POST /api/v1/webhooks/git` (served by the `server` module) and
//!   calls [`poller::Poller::trigger`] for an immediate poll.

pub mod capped_json;
pub mod credentials;
pub mod debounce;
pub mod directory;
pub mod git;
pub mod pinned_tree;
pub mod poller;
pub mod render_cache;
pub mod repositories;
pub mod server_credentials;
pub mod server_pushes;
pub mod snapshot;
pub mod spec;
pub mod status;
pub mod transport;
pub mod url;
pub mod webhook;
