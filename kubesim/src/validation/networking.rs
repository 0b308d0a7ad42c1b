//! The networking group's rules (`pkg/apis/networking/validation`): Ingress rules need a
//! `pathType` and absolute paths, backends name a Service and a port, hosts are DNS names.

use serde_json::Value;

use super::field::{Errors, invalid, invalid_str, not_supported, required};
use super::{arr, int, s};
use crate::names;

fn backend(b: &Value, path: &str, errs: &mut Errors) {
    let service = b.get("service").filter(|v| !v.is_null());
    let resource = b.get("resource").filter(|v| !v.is_null());
    match (service, resource) {
        (Some(_), Some(_)) => {
            errs.push(invalid_str(
                path,
                "",
                "cannot set both resource and service backends",
            ));
        }
        (None, Some(_)) => {}
        (None, None) => {
            errs.push(invalid_str(
                path,
                "",
                "resource or service backend is required",
            ));
        }
        (Some(svc), None) => {
            let name = s(svc, "name");
            if name.is_empty() {
                errs.push(required(&format!("{path}.service.name"), ""));
            } else {
                for m in names::dns1035_label(name) {
                    errs.push(invalid_str(&format!("{path}.service.name"), name, &m));
                }
            }
            let empty = Value::Null;
            let port = svc.get("port").unwrap_or(&empty);
            let (port_name, number) = (s(port, "name"), int(port, "number").unwrap_or(0));
            if !port_name.is_empty() && number != 0 {
                errs.push(invalid_str(
                    path,
                    "",
                    "cannot set both port name & port number",
                ));
            } else if !port_name.is_empty() {
                for m in names::port_name(port_name) {
                    errs.push(invalid_str(
                        &format!("{path}.service.port.name"),
                        port_name,
                        &m,
                    ));
                }
            } else if number != 0 {
                for m in names::port_number(number) {
                    errs.push(invalid(
                        &format!("{path}.service.port.number"),
                        number.to_string(),
                        &m,
                    ));
                }
            } else {
                errs.push(required(path, "port name or number is required"));
            }
        }
    }
}

fn http_path(p: &Value, path: &str, errs: &mut Errors) {
    let Some(path_type) = p.get("pathType").and_then(Value::as_str) else {
        errs.push(required(
            &format!("{path}.pathType"),
            "pathType must be specified",
        ));
        return;
    };
    let value = s(p, "path");
    let field = format!("{path}.path");
    match path_type {
        "Exact" | "Prefix" => {
            if !value.starts_with('/') {
                errs.push(invalid_str(&field, value, "must be an absolute path"));
            }
            if !value.is_empty() {
                for seq in ["//", "/./", "/../", "%2f", "%2F"] {
                    if value.contains(seq) {
                        errs.push(invalid_str(
                            &field,
                            value,
                            &format!("must not contain '{seq}'"),
                        ));
                    }
                }
                for suffix in ["/..", "/."] {
                    if value.ends_with(suffix) {
                        errs.push(invalid_str(
                            &field,
                            value,
                            &format!("cannot end with '{suffix}'"),
                        ));
                    }
                }
            }
        }
        "ImplementationSpecific" => {
            if !value.is_empty() && !value.starts_with('/') {
                errs.push(invalid_str(&field, value, "must be an absolute path"));
            }
        }
        other => errs.push(not_supported(
            &format!("{path}.pathType"),
            other,
            &["Exact", "ImplementationSpecific", "Prefix"],
        )),
    }
    let empty = Value::Null;
    backend(
        p.get("backend").unwrap_or(&empty),
        &format!("{path}.backend"),
        errs,
    );
}

/// An Ingress (`ValidateIngressSpec`): rules or a default backend, hosts, paths, backends.
pub fn ingress(obj: &Value, errs: &mut Errors) {
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    let rules = arr(spec, "rules");
    let default_backend = spec.get("defaultBackend").filter(|v| !v.is_null());
    if let Some(b) = default_backend {
        backend(b, "spec.defaultBackend", errs);
    }
    if rules.is_empty() && default_backend.is_none() {
        errs.push(invalid(
            "spec.rules",
            "[]networking.IngressRule(nil)",
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    for (i, rule) in rules.iter().enumerate() {
        let p = format!("spec.rules[{i}]");
        let host = s(rule, "host");
        if !host.is_empty() {
            if host.parse::<std::net::IpAddr>().is_ok() {
                errs.push(invalid_str(
                    &format!("{p}.host"),
                    host,
                    "must be a DNS name, not an IP address",
                ));
            }
            if host.contains('*') {
                if !names::is_wildcard_subdomain(host) {
                    errs.push(invalid_str(
                        &format!("{p}.host"),
                        host,
                        "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                    ));
                }
            } else {
                for m in names::dns1123_subdomain(host) {
                    errs.push(invalid_str(&format!("{p}.host"), host, &m));
                }
            }
        }
        if let Some(http) = rule.get("http").filter(|v| !v.is_null()) {
            let paths = arr(http, "paths");
            if paths.is_empty() {
                errs.push(required(&format!("{p}.http.paths"), ""));
            }
            for (j, hp) in paths.iter().enumerate() {
                http_path(hp, &format!("{p}.http.paths[{j}]"), errs);
            }
        }
    }
}
