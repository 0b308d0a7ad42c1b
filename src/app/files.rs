//! `--apps DIR`: App resources read from YAML files (for standalone runs without a management
//! cluster). Every `*.yaml` / `*.yml` file may hold several documents; each must be a valid
//! `cd.wardn.space/v1alpha1` App, and errors name the file and the field.
//!
//! [`load_dir`] reads a directory strictly (the first error fails); [`AppsDir::reload`] reads it
//! file by file for the daemon's watch: an invalid file is reported and the Apps it defined
//! before stay as they were, so one bad edit never stops the others.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use kube::Resource;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::window::parse_all;
use crate::app::App;

/// Why the App files could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum AppsDirError {
    /// The directory or a file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A document is not a valid App.
    #[error("{path} (document {document}): {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The document's position in the file (from 1).
        document: usize,
        /// What is wrong, naming the field.
        reason: String,
    },
    /// The directory cannot be watched for changes.
    #[error("{path}: cannot watch for changes: {source}")]
    Watch {
        /// The directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: notify::Error,
    },
    /// A file that defined Apps holds none now: an empty file is what a save in progress
    /// (truncated, not written yet) looks like, so its Apps are kept until it is deleted.
    #[error(
        "{path}: defines no App now (a save in progress?); its {apps} App(s) keep running until it defines them again or is deleted"
    )]
    Emptied {
        /// The file.
        path: PathBuf,
        /// How many Apps it defined before.
        apps: usize,
    },
    /// Two documents define the same App.
    #[error("App {namespace}/{name} is defined twice: in {first} and {second}")]
    Duplicate {
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
        /// The first file.
        first: PathBuf,
        /// The second file.
        second: PathBuf,
    },
}

/// Why one App document is not a valid App.
#[derive(Debug, thiserror::Error)]
pub enum InvalidApp {
    /// Not a `cd.wardn.space/v1alpha1` App.
    #[error("apiVersion/kind: expected {expected} App, found {api_version:?} {kind:?}")]
    Kind {
        /// The App's `apiVersion`.
        expected: String,
        /// The document's `apiVersion`.
        api_version: String,
        /// The document's `kind`.
        kind: String,
    },
    /// The document does not have the App's structure.
    #[error("{0}")]
    Structure(#[from] serde_json::Error),
    /// A required field is empty.
    #[error("{0}: required")]
    Required(&'static str),
    /// `spec.source` is invalid.
    #[error(transparent)]
    Source(#[from] crate::sources::spec::SpecError),
    /// A sync window is invalid.
    #[error(transparent)]
    Window(#[from] super::window::WindowError),
    /// `spec.destination.cluster` (or a target's `cluster`) is a template that does not
    /// resolve to a cluster name, or `spec.targets` is invalid.
    #[error(transparent)]
    Routing(#[from] super::targets::TargetError),
    /// `spec.promotion` is invalid.
    #[error(transparent)]
    Promotion(#[from] super::promotion::PolicyError),
    /// An entry of `spec.notify` is invalid.
    #[error("spec.notify: {0}")]
    Notify(String),
}

/// Checks one App document beyond its structure: kind and version, name, source, windows,
/// a templated destination (resolved, see [`super::routing`]) and its targets (checked; the
/// App is returned unexpanded, see [`super::targets::expand`]).
pub fn validate(doc: &Value) -> Result<App, InvalidApp> {
    let api_version = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    let expected = App::api_version(&());
    if api_version != expected || kind != "App" {
        return Err(InvalidApp::Kind {
            expected: expected.to_string(),
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        });
    }
    let mut app: App = serde_json::from_value(doc.clone())?;
    if app.metadata.name.as_deref().unwrap_or("").is_empty() {
        return Err(InvalidApp::Required("metadata.name"));
    }
    if app.spec.destination.namespace.is_empty() {
        return Err(InvalidApp::Required("spec.destination.namespace"));
    }
    app.spec.source.validate()?;
    parse_all(&app.spec.sync_policy.sync_windows)?;
    super::routing::resolve(&mut app).map_err(super::targets::TargetError::from)?;
    super::targets::expand(&app)?;
    if let Some(policy) = &app.spec.promotion {
        policy.validate()?;
    }
    for target in &app.spec.notify {
        target.validate().map_err(InvalidApp::Notify)?;
    }
    Ok(app)
}

/// The App files of `dir` (`*.yaml`, `*.yml`; not recursive), in name order.
fn app_files(dir: &Path) -> Result<Vec<PathBuf>, AppsDirError> {
    let io = |source| AppsDirError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .map(|e| e.map(|e| e.path()).map_err(io))
        .collect::<Result<_, _>>()?;
    files.retain(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml"));
    files.sort();
    Ok(files)
}

/// Loads the Apps of one file, in document order. Apps without a namespace are put in
/// `default`.
pub fn load_file(path: &Path) -> Result<Vec<App>, AppsDirError> {
    let text = std::fs::read_to_string(path).map_err(|source| AppsDirError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let invalid = |document, reason| AppsDirError::Invalid {
        path: path.to_path_buf(),
        document,
        reason,
    };
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(&text).map_err(|e| invalid(1, e.to_string()))?;
    let mut apps = Vec::new();
    for (i, doc) in docs.into_iter().enumerate().filter(|(_, d)| !d.is_null()) {
        let mut app = validate(&doc).map_err(|r| invalid(i + 1, r.to_string()))?;
        app.metadata
            .namespace
            .get_or_insert_with(|| "default".to_string());
        apps.push(app);
    }
    Ok(apps)
}

/// The `(namespace, name)` of an App read by [`load_file`].
fn identity(app: &App) -> (String, String) {
    (
        app.metadata.namespace.clone().unwrap_or_default(),
        app.metadata.name.clone().unwrap_or_default(),
    )
}

/// Loads every App in `dir` (not recursive), in file name order; fails on the first invalid
/// file or duplicate App.
pub fn load_dir(dir: &Path) -> Result<Vec<App>, AppsDirError> {
    Ok(load_dir_with_files(dir)?
        .into_iter()
        .map(|(_, app)| app)
        .collect())
}

/// [`load_dir`], with the file each App was read from (for reports naming the file), an App
/// with `spec.targets` expanded into one App per target ([`super::targets::expand`]), as the
/// offline commands route them.
pub fn load_dir_with_files(dir: &Path) -> Result<Vec<(PathBuf, App)>, AppsDirError> {
    let mut seen: BTreeMap<(String, String), PathBuf> = BTreeMap::new();
    let mut apps = Vec::new();
    for path in app_files(dir)? {
        for (i, app) in load_file(&path)?.into_iter().enumerate() {
            let (namespace, name) = identity(&app);
            if let Some(first) = seen.insert((namespace.clone(), name.clone()), path.clone()) {
                return Err(AppsDirError::Duplicate {
                    namespace,
                    name,
                    first,
                    second: path,
                });
            }
            let expanded = super::targets::expand(&app).map_err(|e| AppsDirError::Invalid {
                path: path.clone(),
                document: i + 1,
                reason: e.to_string(),
            })?;
            apps.extend(expanded.into_iter().map(|app| (path.clone(), app)));
        }
    }
    Ok(apps)
}

/// The Apps of a watched `--apps` directory as last loaded, file by file: not the Apps
/// themselves (the daemon holds each App once, and a fleet's specs are on every replica) but
/// what tells a changed definition from an unchanged one. Which definition is in effect is
/// worked out at each reload rather than kept (an index of it took as much memory again:
/// about 2 MiB at 10,000 Apps, on every replica).
#[derive(Debug, Default)]
pub struct AppsDir {
    files: BTreeMap<PathBuf, Vec<Defined>>,
    /// Apps the daemon could not start: the next reload reports them as upserts again.
    forgotten: BTreeSet<(String, String)>,
}

/// Where each App in effect is defined (the first file in name order that defines it, and its
/// place among the file's Apps), and every later definition of an App as `(id, first file,
/// this file)`.
type InEffect<'a> = (
    BTreeMap<&'a (String, String), (&'a PathBuf, usize)>,
    Vec<(&'a (String, String), &'a PathBuf, &'a PathBuf)>,
);

/// The definitions in effect among `files`; see [`InEffect`].
fn in_effect(files: &BTreeMap<PathBuf, Vec<Defined>>) -> InEffect<'_> {
    let mut apps: BTreeMap<&(String, String), (&PathBuf, usize)> = BTreeMap::new();
    let mut duplicates = Vec::new();
    for (path, defined) in files {
        for (index, app) in defined.iter().enumerate() {
            match apps.get(&app.id) {
                Some((first, _)) => duplicates.push((&app.id, *first, path)),
                None => {
                    apps.insert(&app.id, (path, index));
                }
            }
        }
    }
    (apps, duplicates)
}

/// One App as a file defined it at the last reload.
#[derive(Debug, Clone)]
struct Defined {
    id: (String, String),
    /// SHA-256 of its metadata and spec as JSON; `None` (never equal to another) if they
    /// could not be written as JSON.
    fingerprint: Option<[u8; 32]>,
}

impl Defined {
    fn of(app: &App) -> Defined {
        let mut hasher = Sha256::new();
        let written = serde_json::to_writer(&mut hasher, &(&app.metadata, &app.spec));
        Defined {
            id: identity(app),
            fingerprint: written.ok().map(|()| hasher.finalize().into()),
        }
    }

    /// Whether `other` is the same definition.
    fn same_as(&self, other: &Defined) -> bool {
        self.fingerprint.is_some() && self.fingerprint == other.fingerprint
    }
}

/// What changed in a directory since the previous [`AppsDir::reload`].
#[derive(Debug, Default)]
pub struct Reload {
    /// The valid files as read by this reload, in file name order, with their Apps in
    /// document order (an App defined twice appears under both files; [`Reload::errors`]
    /// names the clash).
    pub files: Vec<(PathBuf, Vec<App>)>,
    /// Where in `files` the Apps that are new or whose definition changed are.
    changed: Vec<(usize, usize)>,
    /// `(namespace, name)` of Apps no longer defined by any file.
    pub removals: Vec<(String, String)>,
    /// Invalid files (their previous Apps are kept) and duplicate definitions (the first file
    /// in name order wins).
    pub errors: Vec<AppsDirError>,
}

impl Reload {
    /// How many Apps are new or changed.
    pub fn upsert_count(&self) -> usize {
        self.changed.len()
    }

    /// The Apps that are new or whose definition changed, in `(namespace, name)` order.
    pub fn into_upserts(self) -> Vec<App> {
        let mut files: Vec<Vec<Option<App>>> = self
            .files
            .into_iter()
            .map(|(_, apps)| apps.into_iter().map(Some).collect())
            .collect();
        self.changed
            .iter()
            .filter_map(|&(file, index)| files.get_mut(file)?.get_mut(index)?.take())
            .collect()
    }
}

impl AppsDir {
    /// Re-reads `dir`: a valid file replaces its Apps, an invalid one keeps its previous Apps
    /// and is reported (as does one that defined Apps and is empty now: a save in progress),
    /// a deleted file's Apps are removed. Fails only when `dir` itself cannot be listed.
    pub fn reload(&mut self, dir: &Path) -> Result<Reload, AppsDirError> {
        let mut reload = Reload::default();
        let mut files: BTreeMap<PathBuf, Vec<Defined>> = BTreeMap::new();
        // Where each freshly read file is in `reload.files`.
        let mut fresh: BTreeMap<PathBuf, usize> = BTreeMap::new();
        for path in app_files(dir)? {
            let previous = self.files.get(&path).map_or(0, Vec::len);
            let loaded = load_file(&path).and_then(|apps| {
                if apps.is_empty() && previous > 0 {
                    return Err(AppsDirError::Emptied {
                        path: path.clone(),
                        apps: previous,
                    });
                }
                Ok(apps)
            });
            match loaded {
                Ok(apps) => {
                    files.insert(path.clone(), apps.iter().map(Defined::of).collect());
                    fresh.insert(path.clone(), reload.files.len());
                    reload.files.push((path, apps));
                }
                Err(e) => {
                    if let Some(previous) = self.files.get(&path) {
                        files.insert(path, previous.clone());
                    }
                    reload.errors.push(e);
                }
            }
        }
        let (apps, duplicates) = in_effect(&files);
        reload
            .errors
            .extend(
                duplicates
                    .into_iter()
                    .map(|(id, first, second)| AppsDirError::Duplicate {
                        namespace: id.0.clone(),
                        name: id.1.clone(),
                        first: first.clone(),
                        second: second.clone(),
                    }),
            );
        let (previous, _) = in_effect(&self.files);
        reload.removals = previous
            .keys()
            .filter(|id| !apps.contains_key(**id))
            .map(|id| (*id).clone())
            .collect();
        reload.changed = apps
            .iter()
            .filter_map(|(id, &(path, index))| {
                // A kept (invalid) file's Apps are unchanged by definition.
                let file = *fresh.get(path)?;
                let now = files.get(path)?.get(index)?;
                let old = previous
                    .get(id)
                    .filter(|_| !self.forgotten.contains(*id))
                    .and_then(|&(path, index)| self.files.get(path)?.get(index));
                let changed = old.is_none_or(|old| !old.same_as(now));
                changed.then_some((file, index))
            })
            .collect();
        self.files = files;
        self.forgotten.clear();
        Ok(reload)
    }

    /// Forgets App `namespace/name` as loaded, so the next [`AppsDir::reload`] reports it as
    /// an upsert again (after the daemon failed to start it).
    pub fn forget(&mut self, namespace: &str, name: &str) {
        self.forgotten
            .insert((namespace.to_string(), name.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAGING: &str = r#"
apiVersion: cd.wardn.space/v1alpha1
kind: App
metadata: {name: my-app-staging, namespace: org-my-org}
spec:
  source: {type: Git, git: {repoURL: https://github.com/myorg/my-app, branch: main, path: overlays/staging}}
  destination: {cluster: staging, namespace: staging}
  syncPolicy: {automated: true, prune: true}
"#;

    #[test]
    fn loads_documents_in_file_order() {
        let dir = tempfile::tempdir().unwrap();
        let prod = STAGING
            .replace("staging", "production")
            .replace("automated: true, prune: true", "requiresApproval: true");
        std::fs::write(dir.path().join("b.yaml"), format!("{prod}---\n")).unwrap();
        std::fs::write(dir.path().join("a.yml"), STAGING).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not an app").unwrap();
        let apps = load_dir(dir.path()).unwrap();
        let names: Vec<_> = apps
            .iter()
            .map(|a| a.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["my-app-staging", "my-app-production"]);
        assert!(apps[1].spec.sync_policy.requires_approval);
        assert_eq!(apps[0].spec.destination.cluster_segment(), "staging");
    }

    #[test]
    fn errors_name_the_file_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let bad = STAGING.replace("branch: main, ", "branch: main, tag: v1, ");
        std::fs::write(dir.path().join("x.yaml"), format!("{STAGING}---\n{bad}")).unwrap();
        let e = load_dir(dir.path()).unwrap_err().to_string();
        assert!(e.contains("x.yaml (document 2): spec.source.git"), "{e}");

        let windows = STAGING.replace(
            "prune: true}",
            "prune: true, syncWindows: [{kind: deny, schedule: nope, duration: 1h}]}",
        );
        std::fs::write(dir.path().join("x.yaml"), windows).unwrap();
        let e = load_dir(dir.path()).unwrap_err().to_string();
        assert!(e.contains("spec.syncPolicy.syncWindows[0].schedule"), "{e}");

        std::fs::write(
            dir.path().join("x.yaml"),
            STAGING.replace("kind: App", "kind: Application"),
        )
        .unwrap();
        assert!(
            load_dir(dir.path())
                .unwrap_err()
                .to_string()
                .contains("apiVersion/kind")
        );

        std::fs::write(dir.path().join("x.yaml"), STAGING).unwrap();
        std::fs::write(dir.path().join("y.yaml"), STAGING).unwrap();
        let e = load_dir(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("defined twice") && e.contains("x.yaml") && e.contains("y.yaml"),
            "{e}"
        );

        assert!(matches!(
            load_dir(&dir.path().join("missing")),
            Err(AppsDirError::Io { .. })
        ));
    }

    /// The directory keeps fingerprints, not Apps: any change of metadata or spec is still an
    /// upsert, and a thousand reloads of unchanged files upsert nothing.
    #[test]
    fn fingerprints_see_every_change_and_no_change() {
        let dir = tempfile::tempdir().unwrap();
        let mut watched = AppsDir::default();
        std::fs::write(dir.path().join("a.yaml"), STAGING).unwrap();
        assert_eq!(watched.reload(dir.path()).unwrap().upsert_count(), 1);
        for _ in 0..1_000 {
            assert_eq!(watched.reload(dir.path()).unwrap().upsert_count(), 0);
        }
        for edit in [
            STAGING.replace(
                "namespace: org-my-org}",
                "namespace: org-my-org, labels: {a: b}}",
            ),
            STAGING.replace("path: overlays/staging", "path: overlays/staging2"),
            STAGING.replace("prune: true", "prune: false"),
            STAGING.replace("namespace: staging}", "namespace: staging-2}"),
        ] {
            std::fs::write(dir.path().join("a.yaml"), &edit).unwrap();
            let reload = watched.reload(dir.path()).unwrap();
            assert_eq!(reload.upsert_count(), 1, "{edit}");
            assert_eq!(reload.into_upserts().len(), 1);
            std::fs::write(dir.path().join("a.yaml"), STAGING).unwrap();
            assert_eq!(watched.reload(dir.path()).unwrap().upsert_count(), 1);
        }
    }

    #[test]
    fn reload_reports_changes_and_keeps_the_previous_version_of_an_invalid_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut watched = AppsDir::default();
        std::fs::write(dir.path().join("a.yaml"), STAGING).unwrap();
        let first = watched.reload(dir.path()).unwrap();
        assert_eq!(first.upsert_count(), 1);
        assert!(first.removals.is_empty() && first.errors.is_empty());
        assert_eq!(watched.reload(dir.path()).unwrap().upsert_count(), 0);

        // A broken edit is reported; the App keeps its previous definition.
        std::fs::write(dir.path().join("a.yaml"), "kind: App\n").unwrap();
        let broken = watched.reload(dir.path()).unwrap();
        assert!(broken.upsert_count() == 0 && broken.removals.is_empty());
        assert!(
            broken.errors[0].to_string().contains("a.yaml (document 1)"),
            "{:?}",
            broken.errors
        );

        // A fixed, changed file is an upsert; a duplicate in a later file is reported.
        let changed = STAGING.replace("automated: true", "automated: false");
        std::fs::write(dir.path().join("a.yaml"), &changed).unwrap();
        std::fs::write(dir.path().join("b.yaml"), STAGING).unwrap();
        let fixed = watched.reload(dir.path()).unwrap();
        assert!(fixed.errors[0].to_string().contains("defined twice"));
        let upserts = fixed.into_upserts();
        assert_eq!(upserts.len(), 1);
        assert!(!upserts[0].spec.sync_policy.automated);

        // Deleting the defining file removes the App... unless another file defines it.
        std::fs::remove_file(dir.path().join("a.yaml")).unwrap();
        let moved = watched.reload(dir.path()).unwrap();
        assert!(moved.removals.is_empty());
        assert!(moved.into_upserts()[0].spec.sync_policy.automated);
        std::fs::remove_file(dir.path().join("b.yaml")).unwrap();
        let removed = watched.reload(dir.path()).unwrap();
        assert_eq!(
            removed.removals,
            [("org-my-org".to_string(), "my-app-staging".to_string())]
        );
        assert!(watched.reload(&dir.path().join("missing")).is_err());
    }

    /// A file that defined Apps and reads empty (or as comments only) is a save in progress:
    /// its Apps are kept and the file is reported until it defines them again or is deleted.
    /// A file that never defined an App may be empty.
    #[test]
    fn an_emptied_file_keeps_its_apps_until_it_is_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.yaml");
        let mut watched = AppsDir::default();
        std::fs::write(&file, STAGING).unwrap();
        std::fs::write(dir.path().join("empty.yaml"), "").unwrap();
        let first = watched.reload(dir.path()).unwrap();
        assert!(first.errors.is_empty(), "{:?}", first.errors);
        assert_eq!(first.upsert_count(), 1);

        // A thousand saves, each read while the file was empty and once written: the App is
        // never removed, and the same definition saved again is nothing to do.
        for round in 0..1_000 {
            let emptied = ["", "# saving\n", "---\n"][round % 3];
            std::fs::write(&file, emptied).unwrap();
            let reload = watched.reload(dir.path()).unwrap();
            assert!(
                reload.removals.is_empty(),
                "round {round}: {:?}",
                reload.removals
            );
            assert_eq!(reload.upsert_count(), 0, "round {round}");
            let errors: Vec<String> = reload.errors.iter().map(ToString::to_string).collect();
            assert_eq!(errors.len(), 1, "round {round}: {errors:?}");
            assert!(
                errors[0].contains("a.yaml") && errors[0].contains("its 1 App(s) keep running"),
                "round {round}: {errors:?}"
            );
            std::fs::write(&file, STAGING).unwrap();
            let saved = watched.reload(dir.path()).unwrap();
            assert!(
                saved.errors.is_empty() && saved.removals.is_empty(),
                "round {round}"
            );
            assert_eq!(saved.upsert_count(), 0, "round {round}");
        }

        // Deleting the file (emptied or not) removes them.
        std::fs::write(&file, "").unwrap();
        watched.reload(dir.path()).unwrap();
        std::fs::remove_file(&file).unwrap();
        let removed = watched.reload(dir.path()).unwrap();
        assert!(removed.errors.is_empty(), "{:?}", removed.errors);
        assert_eq!(
            removed.removals,
            [("org-my-org".to_string(), "my-app-staging".to_string())]
        );
    }

    /// An App the daemon could not start is forgotten: the next reload offers it again (once),
    /// and deleting its file then removes it (its previous version may still run; before,
    /// a forgotten App was never removed). Each of a thousand forget-and-reload rounds offers
    /// it exactly once.
    #[test]
    fn a_forgotten_app_is_offered_again_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut watched = AppsDir::default();
        std::fs::write(dir.path().join("a.yaml"), STAGING).unwrap();
        assert_eq!(watched.reload(dir.path()).unwrap().upsert_count(), 1);
        for round in 0..1_000 {
            watched.forget("org-my-org", "my-app-staging");
            let again = watched.reload(dir.path()).unwrap();
            assert_eq!(again.upsert_count(), 1, "round {round}");
            assert_eq!(watched.reload(dir.path()).unwrap().upsert_count(), 0);
        }
        // Forgetting an App nobody defines changes nothing.
        watched.forget("org-my-org", "nope");
        assert_eq!(watched.reload(dir.path()).unwrap().upsert_count(), 0);

        watched.forget("org-my-org", "my-app-staging");
        std::fs::remove_file(dir.path().join("a.yaml")).unwrap();
        let gone = watched.reload(dir.path()).unwrap();
        assert_eq!(gone.upsert_count(), 0);
        assert_eq!(
            gone.removals,
            [("org-my-org".to_string(), "my-app-staging".to_string())]
        );
    }
}
