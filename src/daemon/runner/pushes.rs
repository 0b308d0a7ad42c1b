//! Push webhooks in a sharded fleet (`--shards auto`): the replica a forge's delivery reaches
//! polls only the repositories of the Apps it owns, so a push for Apps of other replicas would
//! otherwise be ignored (`202`) and wait for their next poll. [`Pushes`] is the webhook's
//! [`PushTargets`]: a repository any App of the fleet uses is accepted; this replica polls it
//! now if it polls it, and hands the push to each other replica owning an App that uses it
//! (one [`Operation::Poll`] per replica, through the store, as other operations are handed
//! over). Without sharding every App is this process's and only the local poll happens.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Operation, Runner};
use crate::sources::url::{SourceKey, parse_repo_url};
use crate::sources::webhook::PushTargets;

/// The webhook's targets: this runner's poller and its fleet's other replicas.
pub struct Pushes {
    runner: Arc<Runner>,
}

impl Pushes {
    /// Targets over `runner`.
    pub fn new(runner: Arc<Runner>) -> Self {
        Self { runner }
    }

    /// One App using `key` per replica that owns such an App, keyed by replica.
    fn owners_elsewhere(&self, key: &SourceKey) -> BTreeMap<String, String> {
        let using: Vec<String> = self
            .runner
            .apps
            .lock()
            .iter()
            .filter(|(_, record)| record.source_key == *key)
            .map(|(app, _)| app.clone())
            .collect();
        let mut owners = BTreeMap::new();
        for app in using {
            if let Some(owner) = self.runner.elsewhere(&app) {
                owners.entry(owner).or_insert(app);
            }
        }
        owners
    }
}

impl PushTargets for Pushes {
    fn find_repository(&self, urls: &[String]) -> Option<SourceKey> {
        let keys: Vec<SourceKey> = urls
            .iter()
            .filter_map(|url| parse_repo_url(url).ok())
            .map(|url| url.key)
            .collect();
        let apps = self.runner.apps.lock();
        keys.into_iter()
            .find(|key| apps.values().any(|record| record.source_key == *key))
    }

    fn trigger(&self, key: &SourceKey) -> bool {
        let here = self.runner.poller.trigger(key);
        let elsewhere = self.owners_elsewhere(key);
        for (owner, app) in &elsewhere {
            let runner = Arc::clone(&self.runner);
            let (owner, app) = (owner.clone(), app.clone());
            tokio::spawn(async move {
                match runner.operate(&app, Operation::Poll).await {
                    Ok(_) => tracing::debug!(%owner, %app, "webhook: push handed over"),
                    Err(error) => {
                        tracing::warn!(%owner, %app, %error, "webhook: push not handed over")
                    }
                }
            });
        }
        here || !elsewhere.is_empty()
    }
}
