//! Apps seen from the cluster side, for the offline commands (`clusters validate|check`,
//! `generate rbac`, `clusters bootstrap --apps`): each App of an `--apps` directory with its
//! file, rendered once (Git sources fetched into a throw-away mirror directory) and placed in
//! its destination namespace with the reconciler's own placement rules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::app::App;
use crate::app::files::{AppsDirError, load_dir_with_files};
use crate::app::key::app_key;
use crate::clusters::allowlist;
use crate::clusters::rbac::{self, Grant};
use crate::object::ObjectRef;
use crate::object::scope;
use crate::render;
use crate::sources::credentials::Credentials;
use crate::sources::directory::snapshot_directory;
use crate::sources::git::{GitSettings, Mirror};
use crate::sources::spec::Source;

/// One App of the directory, rendered.
#[derive(Debug, Clone)]
pub struct RenderedApp {
    /// The file the App was read from.
    pub file: PathBuf,
    /// The App.
    pub app: App,
    /// The rendered objects placed in the destination namespace, or why rendering or
    /// placement failed.
    pub placed: Result<Vec<(ObjectRef, Value)>, String>,
    /// The rendered CRDs refused offline (in a built-in group, or without a valid scope), one
    /// message naming each.
    pub refused_crds: Vec<String>,
    /// The rendered objects as they came out of the renderer (empty when rendering failed),
    /// kept to place them again once a cluster's discovery is known.
    pub rendered: Vec<Value>,
}

/// A kind a cluster's discovery serves: its resource plural and scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedKind {
    /// The resource plural, e.g. `widgets`.
    pub resource: String,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
}

/// Kinds unknown offline that a cluster serves, by `(apiVersion, kind)`.
pub type ServedKinds = BTreeMap<(String, String), ServedKind>;

impl RenderedApp {
    /// `namespace/name` of the App (`namespace/name:target` for a target).
    pub fn key(&self) -> String {
        app_key(&self.app)
    }

    /// The destination cluster's name (empty: the management cluster).
    pub fn cluster(&self) -> &str {
        &self.app.spec.destination.cluster
    }

    /// The `(apiVersion, kind)` of rendered objects in groups outside Kubernetes' own that no
    /// CRD among the rendered objects defines: the cluster must already serve them.
    pub fn external_kinds(&self) -> BTreeSet<(String, String)> {
        let crds = scope::rendered_crds(&self.rendered);
        self.rendered
            .iter()
            .filter_map(|object| {
                let api_version = object.get("apiVersion")?.as_str()?;
                let kind = object.get("kind")?.as_str()?;
                let group = crate::object::group_of(api_version);
                let external = !group.is_empty()
                    && !scope::is_builtin_group(group)
                    && scope::crd_scope(api_version, kind, &crds).is_none();
                external.then(|| (api_version.to_string(), kind.to_string()))
            })
            .collect()
    }

    /// The App placed again, the scope of kinds unknown offline taken from `served` (a
    /// cluster's discovery). Unchanged when rendering failed.
    pub fn placed_with(&self, served: &ServedKinds) -> RenderedApp {
        let mut again = self.clone();
        if self.placed.is_err() && !self.rendered.is_empty() {
            again.placed = place_with(&self.rendered, &self.app.spec.destination.namespace, served);
        }
        again
    }
}

/// Renders the Apps' source (blocking: Git sources are fetched with `git`, into its data
/// directory).
pub fn render_app(app: &App, git: &GitSettings) -> Result<Vec<Value>, String> {
    let source = app.spec.source.validate().map_err(|e| e.to_string())?;
    let rendered = match source {
        Source::Directory(path) => {
            let snapshot = snapshot_directory(&path).map_err(|e| e.to_string())?;
            render::render(snapshot.tree.as_ref(), "")
        }
        Source::Git(source) => {
            let mirror = Mirror::open(git, source.url.clone(), Credentials::Anonymous)
                .map_err(|e| e.to_string())?;
            mirror.fetch().map_err(|e| e.to_string())?;
            let commit = mirror
                .resolve(&source.reference)
                .map_err(|e| e.to_string())?;
            let snapshot = mirror.snapshot(commit).map_err(|e| e.to_string())?;
            render::render(snapshot.tree.as_ref(), &source.path)
        }
    };
    rendered
        .map(|r| r.objects)
        .map_err(|e| format!("render failed: {e}"))
}

/// Places `objects` in `namespace` like the reconciler does, with the built-in kinds of
/// Kubernetes 1.32 standing in for the cluster's discovery: kinds whose scope is unknown offline
/// (kinds of built-in groups missing from the table, custom kinds without a rendered CRD) are an
/// error naming them, and a rendered CRD never decides the scope of a built-in group's kind.
pub fn place(objects: &[Value], namespace: &str) -> Result<Vec<(ObjectRef, Value)>, String> {
    place_with(objects, namespace, &ServedKinds::new())
}

/// [`place`], with `served` deciding the scope of the kinds unknown offline.
pub fn place_with(
    objects: &[Value],
    namespace: &str,
    served: &ServedKinds,
) -> Result<Vec<(ObjectRef, Value)>, String> {
    let crds = scope::rendered_crds(objects);
    allowlist::place(objects, namespace, |av, kind| {
        scope::offline_scope(av, kind, &crds).or_else(|| {
            served
                .get(&(av.to_string(), kind.to_string()))
                .map(|s| s.namespaced)
        })
    })
    .map_err(|e| e.to_string())
}

/// The rendered CRDs of `objects` the reconciler would refuse whatever the cluster serves (in a
/// built-in group, or without a valid scope), one message naming each.
pub fn refused_crds(objects: &[Value]) -> Vec<String> {
    scope::offline_crd_refusals(&scope::rendered_crds(objects))
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Loads every App of `dir` (one per target of an App with `spec.targets`) and renders each
/// (blocking; an App's targets share one render). Git sources are fetched with `git`.
pub fn load_and_render(dir: &Path, git: &GitSettings) -> Result<Vec<RenderedApp>, AppsDirError> {
    let mut renders: BTreeMap<String, Result<Vec<Value>, String>> = BTreeMap::new();
    Ok(load_dir_with_files(dir)?
        .into_iter()
        .map(|(file, app)| {
            let base = crate::app::key::base_key(&app_key(&app)).to_string();
            let rendered = renders
                .entry(base)
                .or_insert_with(|| render_app(&app, git))
                .clone();
            let refused_crds = rendered.as_deref().map(refused_crds).unwrap_or_default();
            let placed = rendered
                .as_deref()
                .map_err(Clone::clone)
                .and_then(|objects| place(objects, &app.spec.destination.namespace));
            RenderedApp {
                file,
                app,
                placed,
                refused_crds,
                rendered: rendered.unwrap_or_default(),
            }
        })
        .collect())
}

/// What the Apps routed to one cluster need there.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterNeeds {
    /// The resources their objects are made of.
    pub grants: Vec<Grant>,
    /// Every namespace their namespaced objects land in (destination namespaces included).
    pub namespaces: Vec<String>,
    /// Which namespaced resources land in which namespace.
    pub by_namespace: BTreeMap<String, Vec<Grant>>,
    /// Problems that kept an App out of the result (`App ns/name: reason`).
    pub errors: Vec<String>,
}

/// What RBAC files must grant, per cluster: the needs of the Apps statically routed there,
/// plus those of every template-routed App on every cluster (`clusters`: the clusters the
/// Apps route to and `also` names). A template resolves from the App's own fields, so a
/// change to the App in Git can move it; the files must not have to follow. The second value
/// names the template-routed Apps.
pub fn rbac_needs(
    apps: &[RenderedApp],
    also: &[String],
) -> (BTreeMap<String, ClusterNeeds>, Vec<String>) {
    let (templated, fixed): (Vec<&RenderedApp>, Vec<&RenderedApp>) = apps
        .iter()
        .partition(|app| app.app.spec.destination.cluster_template.is_some());
    let clusters: BTreeSet<String> = apps
        .iter()
        .map(|app| app.cluster().to_string())
        .chain(also.iter().cloned())
        .collect();
    let needs = clusters
        .into_iter()
        .map(|cluster| {
            let routed = fixed
                .iter()
                .filter(|app| app.cluster() == cluster)
                .chain(templated.iter())
                .copied();
            let needs = needs_of(routed, &ServedKinds::new());
            (cluster, needs)
        })
        .collect();
    (needs, templated.iter().map(|app| app.key()).collect())
}

/// What `apps`, all routed to one cluster, need there; `served` (the cluster's discovery)
/// resolves kinds unknown offline.
pub fn needs_of<'a>(
    apps: impl IntoIterator<Item = &'a RenderedApp>,
    served: &ServedKinds,
) -> ClusterNeeds {
    let mut needs = ClusterNeeds::default();
    let mut grants: BTreeSet<Grant> = BTreeSet::new();
    let mut by_namespace: BTreeMap<String, BTreeSet<Grant>> = BTreeMap::new();
    for app in apps {
        by_namespace
            .entry(app.app.spec.destination.namespace.clone())
            .or_default();
        let placed = match (&app.placed, app.refused_crds.is_empty()) {
            (Ok(placed), true) => placed,
            (Ok(_), false) => {
                for reason in &app.refused_crds {
                    needs.errors.push(format!("App {}: {reason}", app.key()));
                }
                continue;
            }
            (Err(reason), _) => {
                needs.errors.push(format!("App {}: {reason}", app.key()));
                continue;
            }
        };
        let objects: Vec<Value> = placed.iter().map(|(_, o)| o.clone()).collect();
        for (id, _) in placed {
            let discovered = || {
                served
                    .get(&(id.api_version.clone(), id.kind.clone()))
                    .map(|s| Grant {
                        group: crate::object::group_of(&id.api_version).to_string(),
                        resource: s.resource.clone(),
                        namespaced: s.namespaced,
                    })
            };
            let Some(grant) =
                rbac::offline_grant(&id.api_version, &id.kind, &objects).or_else(discovered)
            else {
                needs.errors.push(format!(
                    "App {}: {id}: unknown kind (no CRD among the rendered objects defines {} in {})",
                    app.key(),
                    id.kind,
                    id.api_version
                ));
                continue;
            };
            if let Some(ns) = &id.namespace {
                by_namespace
                    .entry(ns.clone())
                    .or_default()
                    .insert(grant.clone());
            }
            grants.insert(grant);
        }
    }
    needs.grants = grants.into_iter().collect();
    needs.namespaces = by_namespace.keys().cloned().collect();
    needs.by_namespace = by_namespace
        .into_iter()
        .map(|(ns, g)| (ns, g.into_iter().collect()))
        .collect();
    needs
}
