//! Push webhooks in a sharded fleet (`--shards auto`): the replica a forge's delivery reaches
//! polls only the repositories of the Apps it owns, so a push for Apps of other replicas would
//! otherwise be ignored (`202`) and wait for their next poll. [`Pushes`] is the webhook's
//! [`PushTargets`]: a repository any App of the fleet uses is accepted; this replica polls it
//! now if it polls it, and hands the push to each other replica owning an App that uses it
//! (one [`Operation::Poll`] per replica, through the store, as other operations are handed
//! over). Without sharding every App is this process's and only the local poll happens.
//!
//! A burst of pushes (a busy monorepo, a forge redelivering) costs each owner at most two
//! hand-overs in flight per repository, not one per push: a push that arrives while one is
//! in flight marks it to be handed over once more when it ends, so the owner still polls
//! after the last push.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use parking_lot::Mutex;

use super::{Operation, Runner};
use crate::sources::url::SourceKey;
use crate::sources::webhook::{PushError, PushTargets};

/// The webhook's targets: this runner's poller and its fleet's other replicas.
pub struct Pushes {
    runner: Arc<Runner>,
    /// The hand-overs in flight, by owning replica and repository; `true` when another push
    /// arrived since it started (it is handed over again when it ends).
    in_flight: Arc<Mutex<HashMap<(String, SourceKey), bool>>>,
}

impl Pushes {
    /// Targets over `runner`.
    pub fn new(runner: Arc<Runner>) -> Self {
        Self {
            runner,
            in_flight: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Hands a push of `key` to `owner` through its App `app`, unless one is in flight (which
    /// is then repeated once it ends).
    fn hand_over(&self, owner: String, app: String, key: &SourceKey) {
        let slot = (owner, key.clone());
        {
            let mut in_flight = self.in_flight.lock();
            if let Some(again) = in_flight.get_mut(&slot) {
                *again = true;
                return;
            }
            in_flight.insert(slot.clone(), false);
        }
        let runner = Arc::clone(&self.runner);
        let in_flight = Arc::clone(&self.in_flight);
        tokio::spawn(async move {
            loop {
                match runner.operate(&app, Operation::Poll).await {
                    Ok(_) => tracing::debug!(owner = %slot.0, %app, "webhook: push handed over"),
                    Err(error) => {
                        tracing::warn!(owner = %slot.0, %app, %error, "webhook: push not handed over")
                    }
                }
                let mut in_flight = in_flight.lock();
                match in_flight.get_mut(&slot) {
                    Some(again) if *again => *again = false,
                    _ => {
                        in_flight.remove(&slot);
                        return;
                    }
                }
            }
        });
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
    fn uses(&self, key: &SourceKey) -> bool {
        self.runner
            .apps
            .lock()
            .values()
            .any(|record| record.source_key == *key)
    }

    fn trigger<'a>(
        &'a self,
        key: &'a SourceKey,
        _covered: &'a [SourceKey],
    ) -> BoxFuture<'a, Result<bool, PushError>> {
        let here = self.runner.poller.trigger(key);
        let elsewhere = self.owners_elsewhere(key);
        let reached = here || !elsewhere.is_empty();
        for (owner, app) in elsewhere {
            self.hand_over(owner, app, key);
        }
        Box::pin(std::future::ready(Ok(reached)))
    }
}
