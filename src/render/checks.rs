//! Kustomization fields wardn checks as kustomize does but has nothing to run for: `openapi`
//! (kustomize's built-in schema is the only one accepted) and `helmCharts` (refused as
//! `kubectl kustomize` refuses them without `--enable-helm`).

use super::files::read_local;
use super::kustomization::{HelmConfig, Kustomization};
use super::tree::Tree;
use super::{RenderError, emit};

/// The OpenAPI version kustomize v5.5 has built in.
const BUILTIN_OPENAPI: &str = "v1.21.2";

/// Checks the `openapi` field of the kustomization `file` in `dir`: a `version` must be the
/// built-in one (kustomize's message otherwise); a custom schema (`path`) is read (so a
/// missing or outside file is reported as kustomize reports it) and then refused, since
/// wardn's strategic merge keys come from Kubernetes' own schema only.
pub fn openapi(
    tree: &dyn Tree,
    dir: &str,
    file: &str,
    kust: &Kustomization,
) -> Result<(), RenderError> {
    let version = kust.openapi.get("version");
    if let Some(path) = kust.openapi.get("path") {
        read_local(tree, dir, path)?;
        if version.is_some() {
            return Err(RenderError::Invalid(
                "builtin version and custom schema provided, cannot use both".into(),
            ));
        }
        return Err(RenderError::Kustomization {
            file: file.to_string(),
            message: format!(
                "openapi: the custom schema '{path}' is not supported by wardn (merge keys come from the Kubernetes schema built into wardn)"
            ),
        });
    }
    match version {
        Some(v) if !v.is_empty() && v != BUILTIN_OPENAPI => Err(RenderError::Invalid(
            "the specified OpenAPI version is not built in".into(),
        )),
        _ => Ok(()),
    }
}

/// Refuses `helmCharts` entries with kustomize's message (the chart's configuration, as
/// kustomize serialises it, then `must specify --enable-helm`); no entries is fine.
pub fn helm(kust: &Kustomization) -> Result<(), RenderError> {
    let Some(chart) = kust.helm_charts.first() else {
        return Ok(());
    };
    let config = HelmConfig {
        globals: &kust.helm_globals,
        chart,
    };
    let yaml = serde_json::to_value(&config)
        .map(|v| emit::to_yaml(&v))
        .map_err(|e| RenderError::Invalid(format!("helmCharts: {e}")))?;
    Err(RenderError::Invalid(format!(
        "trouble configuring builtin HelmChartInflationGenerator with config: `\n{yaml}`: must specify --enable-helm"
    )))
}
