//! Routing an App to its cluster: `spec.destination.cluster` is a registered cluster's name,
//! empty for the management cluster, or a template ([`super::template`]) evaluated against the
//! App's own `apiVersion`, `kind`, `metadata` and `spec` (never its status or live data), so
//! one App definition reaches staging or production by its labels.
//!
//! [`resolve`] runs wherever an App enters wardn (App files, App resources), before anything
//! uses the destination: the template is kept in [`Destination::cluster_template`] and
//! `cluster` holds the name it resolved to. A name that is not registered fails the App at
//! pass time like any unregistered static name, before any request reaches a cluster.

use serde_json::{Value, json};

use super::template::{Template, TemplateError};
use super::{App, Destination};

/// Why an App's destination cannot be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoutingError {
    /// The template does not parse or evaluate.
    #[error("{field}: {source}")]
    Template {
        /// The field holding the template (`spec.destination.cluster`,
        /// `spec.targets.NAME.cluster`).
        field: String,
        /// The reason.
        source: TemplateError,
    },
    /// The template resolved to something that cannot be a cluster's name.
    #[error(
        "{field}: template resolved to {resolved:?}, which is not a cluster name (a DNS label, or empty for the management cluster)"
    )]
    NotAClusterName {
        /// The field holding the template.
        field: String,
        /// What the template printed.
        resolved: String,
    },
}

/// The field a destination's template is read from.
pub const DESTINATION_FIELD: &str = "spec.destination.cluster";

/// Resolves a templated `spec.destination.cluster` of `app` in place (a static name is left
/// as it is). Resolving twice is harmless: the second time evaluates the kept template again.
pub fn resolve(app: &mut App) -> Result<(), RoutingError> {
    let Some(template) = template_of(&app.spec.destination) else {
        return Ok(());
    };
    let resolved = evaluate(&template, &routing_view(app), DESTINATION_FIELD)?;
    app.spec.destination.cluster = resolved;
    app.spec.destination.cluster_template = Some(template);
    Ok(())
}

/// The destination's template: the kept one, or `cluster` when it holds an action.
fn template_of(destination: &Destination) -> Option<String> {
    destination.cluster_template.clone().or_else(|| {
        super::template::is_template(&destination.cluster).then(|| destination.cluster.clone())
    })
}

/// What a template sees of `app` as `.`: its identity, metadata and spec.
pub(super) fn routing_view(app: &App) -> Value {
    let mut spec = serde_json::to_value(&app.spec).unwrap_or(Value::Null);
    if let Some(cluster) = spec.pointer_mut("/destination/cluster")
        && let Some(template) = &app.spec.destination.cluster_template
    {
        *cluster = Value::String(template.clone());
    }
    json!({
        "apiVersion": "cd.wardn.space/v1alpha1",
        "kind": "App",
        "metadata": serde_json::to_value(&app.metadata).unwrap_or(Value::Null),
        "spec": spec,
    })
}

/// Evaluates `template` (read from `field`) against `view` and checks the result names a
/// cluster.
pub(super) fn evaluate(template: &str, view: &Value, field: &str) -> Result<String, RoutingError> {
    let template_error = |source| RoutingError::Template {
        field: field.to_string(),
        source,
    };
    let printed = Template::parse(template)
        .map_err(template_error)?
        .render(view)
        .map_err(template_error)?;
    let resolved = printed.trim();
    if resolved.is_empty() || crate::object::is_dns_label(resolved) {
        Ok(resolved.to_string())
    } else {
        Err(RoutingError::NotAClusterName {
            field: field.to_string(),
            resolved: printed.chars().take(100).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(labels: &str, cluster: &str) -> App {
        let yaml = format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: web\n  namespace: team\n  labels: {labels}\n\
             spec:\n  source:\n    type: Directory\n    directory:\n      path: /srv\n\
             \x20 destination:\n    cluster: '{cluster}'\n    namespace: shop\n"
        );
        serde_saphyr::from_str(&yaml).unwrap()
    }

    const BY_ENV: &str = r#"{{ if eq .metadata.labels.env "prod" }}prod{{ else }}staging{{ end }}"#;

    #[test]
    fn a_template_resolves_by_the_apps_labels_and_is_kept() {
        let mut prod = app("{env: prod}", BY_ENV);
        resolve(&mut prod).unwrap();
        assert_eq!(prod.spec.destination.cluster, "prod");
        assert_eq!(
            prod.spec.destination.cluster_template.as_deref(),
            Some(BY_ENV)
        );
        // Resolving again (the App seen a second time) evaluates the kept template.
        resolve(&mut prod).unwrap();
        assert_eq!(prod.spec.destination.cluster, "prod");
        let mut other = app("{env: dev}", BY_ENV);
        resolve(&mut other).unwrap();
        assert_eq!(other.spec.destination.cluster, "staging");
    }

    #[test]
    fn static_names_and_empty_results_stay_as_they_are() {
        let mut fixed = app("{}", "staging");
        resolve(&mut fixed).unwrap();
        assert_eq!(fixed.spec.destination.cluster, "staging");
        assert_eq!(fixed.spec.destination.cluster_template, None);
        let mut local = app("{}", "{{ .metadata.labels.cluster }}");
        resolve(&mut local).unwrap();
        assert_eq!(
            local.spec.destination.cluster, "",
            "empty: the management cluster"
        );
    }

    #[test]
    fn bad_templates_and_results_name_the_field() {
        let mut unknown = app("{}", "{{ lookup .x }}");
        let error = resolve(&mut unknown).unwrap_err().to_string();
        assert!(
            error.starts_with("spec.destination.cluster: template column 1: function \"lookup\""),
            "{error}"
        );
        let mut spaced = app("{team: Web Shop}", "{{ .metadata.labels.team }}");
        let error = resolve(&mut spaced).unwrap_err().to_string();
        assert!(
            error.contains("\"Web Shop\", which is not a cluster name"),
            "{error}"
        );
    }
}
