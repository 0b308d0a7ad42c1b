//! App custom resources in the management cluster: a kube runtime watcher over
//! `apps.cd.wardn.space` (all namespaces, or each of `--namespaces`) feeding the runner. An
//! added or modified resource is upserted, a deleted one removed (its objects stay on the
//! cluster); after each (re)list, resources that disappeared meanwhile are removed too. When
//! the CRD is not installed, one warning is logged and discovery is retried periodically.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{StreamExt, stream};
use kube::api::{Api, ListParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};

use super::publish::Change;
use super::{Origin, Runner};
use crate::app::App;
use crate::app::key::{app_key, base_key};

/// How often the CRD's presence is checked again while it is missing.
const RETRY: Duration = Duration::from_secs(15);

/// Whether the management cluster serves App resources.
async fn crd_installed(client: &Client) -> Result<bool, kube::Error> {
    let api: Api<App> = Api::all(client.clone());
    match api.list_metadata(&ListParams::default().limit(1)).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(false),
        Err(e) => Err(e),
    }
}

impl Runner {
    /// Reconciles the App resources of the management cluster reached by `client`, in
    /// `namespaces` (all when empty), and writes their status subresource and Events from now
    /// on. Resources win over `--apps` files defining the same App.
    pub fn watch_resources(self: &Arc<Self>, client: Client, namespaces: Vec<String>) {
        self.publisher.send(Change::Resources(client.clone()));
        let task = tokio::spawn(follow(Arc::clone(self), client, namespaces));
        self.tasks.lock().push(task);
    }
}

/// Follows the App resources of `namespaces` (all when empty) until the task is aborted.
async fn follow(runner: Arc<Runner>, client: Client, namespaces: Vec<String>) {
    let mut warned = false;
    loop {
        match crd_installed(&client).await {
            Ok(true) => {
                tracing::info!("watching App resources in the management cluster");
                warned = false;
                watch(&runner, &client, &namespaces).await;
            }
            Ok(false) if !warned => {
                tracing::warn!(
                    "the App CRD (apps.cd.wardn.space) is not installed in the management \
                     cluster; only --apps files are reconciled (install it with `wardn crd | \
                     kubectl apply -f -`)"
                );
                warned = true;
            }
            Ok(false) => {}
            Err(error) if !warned => {
                tracing::warn!(%error, "cannot look up App resources in the management cluster");
                warned = true;
            }
            Err(_) => {}
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// Runs the watchers until their streams end (they retry with backoff on errors, so only the
/// CRD's removal makes them give up).
async fn watch(runner: &Arc<Runner>, client: &Client, namespaces: &[String]) {
    let scopes: Vec<Option<String>> = if namespaces.is_empty() {
        vec![None]
    } else {
        namespaces.iter().cloned().map(Some).collect()
    };
    let streams = scopes.into_iter().map(|scope| {
        let api: Api<App> = match &scope {
            Some(namespace) => Api::namespaced(client.clone(), namespace),
            None => Api::all(client.clone()),
        };
        watcher(api, watcher::Config::default())
            .default_backoff()
            .map(move |event| (scope.clone(), event))
            .boxed()
    });
    let mut events = stream::select_all(streams);
    let mut listing: Vec<(Option<String>, HashSet<String>)> = Vec::new();
    let mut failures = 0u32;
    while let Some((scope, event)) = events.next().await {
        let event = match event {
            Ok(event) => {
                failures = 0;
                event
            }
            Err(error) => {
                failures += 1;
                if failures == 1 {
                    tracing::warn!(%error, "App resource watch failed; retrying");
                }
                if failures >= 10 && !crd_installed(client).await.unwrap_or(true) {
                    tracing::warn!("the App CRD was removed; no longer watching App resources");
                    return;
                }
                continue;
            }
        };
        match event {
            watcher::Event::Init => {
                listing.retain(|(s, _)| *s != scope);
                listing.push((scope, HashSet::new()));
            }
            watcher::Event::InitApply(app) => {
                if let Some((_, seen)) = listing.iter_mut().find(|(s, _)| *s == scope) {
                    seen.insert(app_key(&app));
                }
                apply(runner, app).await;
            }
            watcher::Event::Apply(app) => apply(runner, app).await,
            watcher::Event::Delete(app) => {
                runner.remove(&app_key(&app), Origin::Resource);
            }
            watcher::Event::InitDone => {
                let Some(position) = listing.iter().position(|(s, _)| *s == scope) else {
                    continue;
                };
                let (scope, seen) = listing.swap_remove(position);
                let prefix = scope.map(|namespace| format!("{namespace}/"));
                for key in runner.keys() {
                    let in_scope = prefix.as_deref().is_none_or(|p| key.starts_with(p));
                    if in_scope
                        && !seen.contains(base_key(&key))
                        && runner.origin(&key) == Some(Origin::Resource)
                    {
                        runner.remove(&key, Origin::Resource);
                    }
                }
            }
        }
    }
}

/// Upserts one App resource; an invalid one is reported on the resource.
async fn apply(runner: &Arc<Runner>, app: App) {
    if app.metadata.deletion_timestamp.is_some() {
        runner.remove(&app_key(&app), Origin::Resource);
        return;
    }
    let name = app.name_any();
    if let Err(error) = runner.upsert(held(&app), Origin::Resource).await {
        tracing::warn!(app = %name, %error, "invalid App resource");
        runner.report_invalid(&app, &error.to_string());
    }
}

/// `kubectl apply`'s record of the last applied object: a second copy of the App's spec.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The App resource `app` as the runner holds it: without its status (the runner keeps each
/// App's status itself, as text), its managed fields (renewed by every status wardn writes)
/// and `kubectl apply`'s copy of it, which nothing here reads back; its uid and resource
/// version stay, for the Events recorded on it. In a fleet of App resources, each record held
/// the App's whole last status (its inventory among it) a second time.
fn held(app: &App) -> App {
    let mut held = app.clone();
    held.status = None;
    held.metadata.managed_fields = None;
    if let Some(annotations) = held.metadata.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
    }
    held
}
