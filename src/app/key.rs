//! The key of an App: `namespace/name`, as stamped on the objects it applies (the owner
//! annotation), and as the store and the daemon index Apps.

use super::App;

/// The key of an App: `namespace/name` (`default` when the App names no namespace).
pub fn app_key(app: &App) -> String {
    format!(
        "{}/{}",
        app.metadata.namespace.as_deref().unwrap_or("default"),
        app.metadata.name.as_deref().unwrap_or_default()
    )
}
