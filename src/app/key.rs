//! The key of an App: `namespace/name`, or `namespace/name:target` for one target of an App
//! with `spec.targets` (see [`super::targets`]), as stamped on the objects it applies (the
//! owner annotation), and as the store and the daemon index Apps. Kubernetes names never hold
//! `:`, so the target part cannot be confused with a name.

use super::App;

/// The key of an App: `namespace/name` (`default` when the App names no namespace), with
/// `:target` for one target of an App with targets.
pub fn app_key(app: &App) -> String {
    format!(
        "{}/{}",
        app.metadata.namespace.as_deref().unwrap_or("default"),
        app_name(app)
    )
}

/// The App's name as addressed (API paths, promotion `to`/`from`, the CLI): `name`, or
/// `name:target` for one target.
pub fn app_name(app: &App) -> String {
    let name = app.metadata.name.as_deref().unwrap_or_default();
    match &app.spec.destination.target {
        Some(target) => format!("{name}:{target}"),
        None => name.to_string(),
    }
}

/// The key of the App a key belongs to: `namespace/name` without its `:target`.
pub fn base_key(key: &str) -> &str {
    key.split_once(':').map_or(key, |(base, _)| base)
}

/// An addressed name split into the App's name and its target (`web:prod` → `web`,
/// `Some("prod")`).
pub fn split_name(name: &str) -> (&str, Option<&str>) {
    match name.split_once(':') {
        Some((name, target)) => (name, Some(target)),
        None => (name, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_keys_extend_the_apps_key() {
        let mut app: App = serde_json::from_value(serde_json::json!({
            "apiVersion": "cd.wardn.space/v1alpha1", "kind": "App",
            "metadata": {"name": "web", "namespace": "team"},
            "spec": {"source": {"type": "Directory", "directory": {"path": "/srv"}},
                     "destination": {"namespace": "shop"}}
        }))
        .unwrap();
        assert_eq!(app_key(&app), "team/web");
        app.spec.destination.target = Some("prod".into());
        assert_eq!(app_key(&app), "team/web:prod");
        assert_eq!(app_name(&app), "web:prod");
        assert_eq!(base_key("team/web:prod"), "team/web");
        assert_eq!(base_key("team/web"), "team/web");
        assert_eq!(split_name("web:prod"), ("web", Some("prod")));
        assert_eq!(split_name("web"), ("web", None));
    }
}
