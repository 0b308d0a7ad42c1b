//! Request bodies: JSON or YAML objects, with errors that name the problem.

use serde_json::Value;

use super::Req;
use crate::resources::ResourceInfo;
use crate::status::ApiError;

/// Parses YAML text into JSON values.
pub fn parse_yaml(bytes: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("body is not UTF-8: {e}"))?;
    serde_saphyr::from_str::<Value>(text).map_err(|e| e.to_string())
}

/// Parses a JSON body into a value.
pub fn parse_json(bytes: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(bytes).map_err(|e| e.to_string())
}

/// The object in a create or update body (JSON or YAML); 415 for other content types,
/// 400 for malformed bodies or bodies that are not objects.
pub fn parse_object(req: &Req<'_>) -> Result<Value, ApiError> {
    let value = match req.content_type.as_str() {
        "" | "application/json" | "*/*" => parse_json(&req.body).map_err(|e| {
            ApiError::bad_request(format!("the request body is not valid JSON: {e}"))
        })?,
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            parse_yaml(&req.body).map_err(|e| {
                ApiError::bad_request(format!("the request body is not valid YAML: {e}"))
            })?
        }
        crate::protobuf::MEDIA_TYPE => match crate::protobuf::decode(&req.body) {
            Ok(v) => v,
            Err(crate::protobuf::DecodeError::Malformed(e)) => {
                return Err(ApiError::bad_request(format!(
                    "the protobuf request body is not valid: {e}"
                )));
            }
            Err(crate::protobuf::DecodeError::Unsupported(kind)) => {
                return Err(ApiError::unsupported_media_type(
                    &format!("{} for {kind}", crate::protobuf::MEDIA_TYPE),
                    &["application/json", "application/yaml"],
                ));
            }
        },
        other => {
            return Err(ApiError::unsupported_media_type(
                other,
                &["application/json", "application/yaml"],
            ));
        }
    };
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object (a Kubernetes resource)",
        ));
    }
    Ok(value)
}

/// Checks (or fills in) apiVersion and kind against the addressed resource, then decodes
/// the object's fields ([`crate::validation::decode`]) under the request's
/// `fieldValidation`: `Strict` refuses unknown fields, `Warn` (the default) drops them with
/// a `Warning` header each, `Ignore` drops them silently.
pub fn check_type(req: &Req<'_>, obj: &mut Value) -> Result<(), ApiError> {
    let info = &*req.target.info;
    let expected = info.api_version();
    match obj.get("apiVersion").and_then(Value::as_str) {
        Some(v) if v != expected => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({expected})"
            )));
        }
        _ => {}
    }
    match obj.get("kind").and_then(Value::as_str) {
        Some(k) if k != info.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                info.kind
            )));
        }
        _ => {}
    }
    if let Some(m) = obj.get("metadata")
        && !m.is_object()
        && !m.is_null()
    {
        return Err(ApiError::bad_request("metadata: must be an object"));
    }
    if let Some(m) = obj.get("metadata") {
        for field in ["labels", "annotations"] {
            if let Some(map) = m.get(field).filter(|v| !v.is_null()) {
                let ok = map
                    .as_object()
                    .is_some_and(|o| o.values().all(Value::is_string));
                if !ok {
                    return Err(ApiError::bad_request(format!(
                        "metadata.{field}: must be a map of string keys to string values"
                    )));
                }
            }
        }
        if let Some(f) = m.get("finalizers").filter(|v| !v.is_null())
            && !f.as_array().is_some_and(|a| a.iter().all(Value::is_string))
        {
            return Err(ApiError::bad_request(
                "metadata.finalizers: must be a list of strings",
            ));
        }
        for field in ["name", "namespace", "generateName", "resourceVersion"] {
            if m.get(field).is_some_and(|v| !v.is_string() && !v.is_null()) {
                return Err(ApiError::bad_request(format!(
                    "metadata.{field}: must be a string"
                )));
            }
        }
    }
    let unknown = crate::validation::decode(info, obj)?;
    field_validation(req, info, &unknown)?;
    obj["apiVersion"] = Value::String(expected);
    obj["kind"] = Value::String(info.kind.clone());
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = Value::Object(Default::default());
    }
    Ok(())
}

/// Applies `fieldValidation` to the unknown fields decoding found (and dropped).
fn field_validation(
    req: &Req<'_>,
    info: &ResourceInfo,
    unknown: &[String],
) -> Result<(), ApiError> {
    let directive = req.query.get("fieldValidation").unwrap_or("Warn");
    match directive {
        "Strict" | "Warn" | "Ignore" => {}
        other => {
            return Err(ApiError::bad_request(format!(
                "fieldValidation parameter unsupported: {other}"
            )));
        }
    }
    if unknown.is_empty() || directive == "Ignore" {
        return Ok(());
    }
    let each: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field \"{f}\""))
        .collect();
    if directive == "Strict" {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
            each.join(", "),
            kind = info.kind,
            version = info.version,
        )));
    }
    req.warnings.lock().extend(each);
    Ok(())
}

/// Places the object in the request's namespace (400 if it names another one), or removes
/// the namespace of cluster-scoped objects.
pub fn check_namespace(req: &Req<'_>, obj: &mut Value) -> Result<(), ApiError> {
    let meta = &mut obj["metadata"];
    if req.target.info.namespaced {
        match meta.get("namespace").and_then(Value::as_str) {
            Some(ns) if !ns.is_empty() && ns != req.ns() => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => meta["namespace"] = Value::String(req.ns().to_string()),
        }
    } else if let Some(m) = meta.as_object_mut() {
        m.remove("namespace");
    }
    Ok(())
}
