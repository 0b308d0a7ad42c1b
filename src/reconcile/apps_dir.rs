//! `--apps DIR`: App resources read from YAML files (for standalone runs without a management
//! cluster). Every `*.yaml` / `*.yml` file may hold several documents; each must be a valid
//! `cd.wardn.space/v1alpha1` App, and errors name the file and the field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kube::Resource;
use serde_json::Value;

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

/// Checks one App document beyond its structure: kind and version, name, source and windows.
pub fn validate(doc: &Value) -> Result<App, String> {
    let api_version = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    let want = App::api_version(&());
    if api_version != want || kind != "App" {
        return Err(format!(
            "apiVersion/kind: expected {want} App, found {api_version:?} {kind:?}"
        ));
    }
    let app: App = serde_json::from_value(doc.clone()).map_err(|e| e.to_string())?;
    if app.metadata.name.as_deref().unwrap_or("").is_empty() {
        return Err("metadata.name: required".into());
    }
    if app.spec.destination.namespace.is_empty() {
        return Err("spec.destination.namespace: required".into());
    }
    app.spec.source.validate().map_err(|e| e.to_string())?;
    parse_all(&app.spec.sync_policy.sync_windows).map_err(|e| e.to_string())?;
    Ok(app)
}

/// Loads every App in `dir` (not recursive), in file name order. Apps without a namespace are
/// put in `default`.
pub fn load_dir(dir: &Path) -> Result<Vec<App>, AppsDirError> {
    Ok(load_dir_with_files(dir)?
        .into_iter()
        .map(|(_, app)| app)
        .collect())
}

/// [`load_dir`], with the file each App was read from (for reports naming the file).
pub fn load_dir_with_files(dir: &Path) -> Result<Vec<(PathBuf, App)>, AppsDirError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| AppsDirError::Io { path, source }
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .map(|e| e.map(|e| e.path()).map_err(io(dir)))
        .collect::<Result<_, _>>()?;
    files.retain(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml"));
    files.sort();
    let mut seen: BTreeMap<(String, String), PathBuf> = BTreeMap::new();
    let mut apps = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(io(&path))?;
        let invalid = |document, reason| AppsDirError::Invalid {
            path: path.clone(),
            document,
            reason,
        };
        let docs: Vec<Value> =
            serde_saphyr::from_multiple(&text).map_err(|e| invalid(1, e.to_string()))?;
        for (i, doc) in docs.into_iter().enumerate().filter(|(_, d)| !d.is_null()) {
            let mut app = validate(&doc).map_err(|r| invalid(i + 1, r))?;
            let namespace = app
                .metadata
                .namespace
                .get_or_insert_with(|| "default".to_string())
                .clone();
            let name = app.metadata.name.clone().unwrap_or_default();
            if let Some(first) = seen.insert((namespace.clone(), name.clone()), path.clone()) {
                return Err(AppsDirError::Duplicate {
                    namespace,
                    name,
                    first,
                    second: path,
                });
            }
            apps.push((path.clone(), app));
        }
    }
    Ok(apps)
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
}
