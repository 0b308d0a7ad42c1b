//! Request routing: non-resource paths (version, discovery, openapi) and resource paths
//! (`/api/v1/...`, `/apis/{group}/{version}/...`) dispatched per verb.

mod apply;
mod body;
mod delete;
mod logs;
mod patch;
mod read;
mod review;
mod token;
mod watch;
mod write;

pub use delete::remove_now;
pub use read::present;

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use hyper::http::request::Parts;
use hyper::{Method, Response};
use serde_json::Value;

use crate::auth::{Identity, check};
use crate::discovery;
use crate::rbac::{Request as AuthzRequest, ResourceAttributes};
use crate::reply::{Body, full, json_reply};
use crate::resources::{Registry, ResourceInfo};
use crate::state::State;
use crate::status::ApiError;

/// Decoded query parameters.
#[derive(Debug, Default, Clone)]
pub struct Query(HashMap<String, String>);

fn hex_val(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => match (
                bytes.get(i + 1).copied().and_then(hex_val),
                bytes.get(i + 2).copied().and_then(hex_val),
            ) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Query {
    /// Parses a raw query string.
    pub fn parse(raw: Option<&str>) -> Query {
        Query(
            raw.unwrap_or_default()
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|p| match p.split_once('=') {
                    Some((k, v)) => (percent_decode(k), percent_decode(v)),
                    None => (percent_decode(p), String::new()),
                })
                .collect(),
        )
    }

    /// One parameter.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// A boolean parameter (`true` or `1`).
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1"))
    }

    /// Whether `dryRun=All` was asked.
    pub fn dry_run(&self) -> bool {
        self.get("dryRun") == Some("All")
    }
}

/// A parsed resource path.
#[derive(Debug, Clone)]
pub struct Target {
    /// The resource addressed.
    pub info: Arc<ResourceInfo>,
    /// The namespace of the path, if any.
    pub namespace: Option<String>,
    /// The object name, if any.
    pub name: Option<String>,
    /// `status`, `scale` or `finalize`, if any.
    pub subresource: Option<String>,
    /// Whether the path used the legacy `/watch/` prefix.
    pub watch_path: bool,
}

/// Everything a verb handler needs about a request.
pub struct Req<'a> {
    /// The cluster.
    pub state: &'a Arc<State>,
    /// The addressed resource.
    pub target: Target,
    /// Query parameters.
    pub query: Query,
    /// The request's Content-Type (parameters stripped, lower case).
    pub content_type: String,
    /// The request body.
    pub body: Bytes,
    /// The caller.
    pub identity: Identity,
    /// The default field manager (the User-Agent's program name).
    pub user_agent: String,
    /// Whether the `Accept` header asks for a Table (server-side printing).
    pub as_table: bool,
    /// Whether the `Accept` header lists protobuf first (watch streams are framed for it;
    /// whole replies are re-encoded by [`crate::reply::negotiate`]).
    pub protobuf: bool,
    /// Warnings for the response's `Warning` headers (e.g. unknown fields dropped).
    pub warnings: parking_lot::Mutex<Vec<String>>,
}

impl Req<'_> {
    /// `object` as this request receives it: a Table when one was asked for and the kind has
    /// a printer (custom resources, common built-ins; see [`crate::table`]), else the object.
    pub fn printed(&self, object: Value) -> Value {
        if !self.as_table || self.target.subresource.is_some() {
            return object;
        }
        crate::table::of(&self.target.info, &object, self.query.get("includeObject"))
            .unwrap_or(object)
    }
}

impl Req<'_> {
    /// The namespace as stored ("" for cluster-scoped).
    pub fn ns(&self) -> &str {
        self.target.namespace.as_deref().unwrap_or_default()
    }

    /// The object name of the path ("" for collections).
    pub fn name(&self) -> &str {
        self.target.name.as_deref().unwrap_or_default()
    }

    /// The field manager: `?fieldManager=` or the User-Agent's program name.
    pub fn field_manager(&self) -> String {
        match self.query.get("fieldManager") {
            Some(m) if !m.is_empty() => m.to_string(),
            _ => self.user_agent.clone(),
        }
    }
}

fn parse_target(
    state: &State,
    group: &str,
    version: &str,
    rest: &[&str],
) -> Result<Target, ApiError> {
    let (watch_path, rest) = match rest.split_first() {
        Some((&"watch", tail)) => (true, tail),
        _ => (false, rest),
    };
    let (namespace, rest) = if rest.len() >= 3
        && rest[0] == "namespaces"
        && !matches!(rest[2], "status" | "finalize")
    {
        (Some(rest[1].to_string()), &rest[2..])
    } else {
        (None, rest)
    };
    let (plural, name, subresource) = match rest {
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some(name.to_string()), None),
        [plural, name, sub] => (*plural, Some(name.to_string()), Some(sub.to_string())),
        _ => return Err(ApiError::path_not_found()),
    };
    let info = state
        .registry()
        .by_plural(group, version, plural)
        .ok_or_else(ApiError::path_not_found)?;
    let misplaced = if info.namespaced {
        namespace.is_none() && name.is_some()
    } else {
        namespace.is_some()
    };
    if misplaced {
        return Err(ApiError::path_not_found());
    }
    let sub_ok = match subresource.as_deref() {
        None => true,
        Some("status") => info.status,
        Some("scale") => info.scale.is_some(),
        Some("finalize") => info.plural == "namespaces" && info.group.is_empty(),
        Some("token") => info.plural == "serviceaccounts" && info.group.is_empty(),
        Some("log") => info.plural == "pods" && info.group.is_empty(),
        Some(_) => false,
    };
    if !sub_ok {
        return Err(ApiError::path_not_found());
    }
    Ok(Target {
        info,
        namespace,
        name,
        subresource,
        watch_path,
    })
}

fn verb(method: &Method, target: &Target, query: &Query) -> Option<&'static str> {
    let named = target.name.is_some();
    Some(match *method {
        Method::GET | Method::HEAD if target.watch_path || query.flag("watch") => "watch",
        Method::GET | Method::HEAD if named => "get",
        Method::GET | Method::HEAD => "list",
        Method::POST if !named || target.subresource.as_deref() == Some("token") => "create",
        Method::PUT if named => "update",
        Method::PATCH if named => "patch",
        Method::DELETE if named => "delete",
        Method::DELETE => "deletecollection",
        _ => return None,
    })
}

fn text(code: u16, body: &'static str) -> Response<Body> {
    let mut resp = Response::new(full(body));
    *resp.status_mut() = hyper::StatusCode::from_u16(code).unwrap_or(hyper::StatusCode::OK);
    resp
}

/// Routes one request (`identity` is None only for unauthenticated requests to public paths).
pub async fn route(
    state: &Arc<State>,
    identity: Option<Identity>,
    parts: Parts,
    body: Bytes,
) -> Result<Response<Body>, ApiError> {
    let path = parts.uri.path().to_string();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let registry = state.registry();
    let not_found = ApiError::path_not_found;
    match segments.as_slice() {
        ["version"] => return Ok(json_reply(200, &discovery::version())),
        ["healthz" | "livez" | "readyz"] => return Ok(text(200, "ok")),
        _ => {}
    }
    let identity = identity.ok_or_else(ApiError::unauthorized)?;
    let resource_path = matches!(
        segments.as_slice(),
        ["api", "v1", _, ..] | ["apis", _, _, _, ..]
    );
    if !resource_path {
        let request = AuthzRequest::NonResource {
            verb: parts.method.as_str().to_ascii_lowercase(),
            path: path.clone(),
        };
        check(state, &identity, &request)?;
    }
    let accept = parts
        .headers
        .get(hyper::header::ACCEPT)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if discovery::wants_aggregated(accept) && matches!(segments.as_slice(), ["api"] | ["apis"]) {
        let doc = discovery::aggregated(&registry, segments.len() == 1 && segments[0] == "api");
        let mut resp = json_reply(200, &doc);
        resp.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static(discovery::AGGREGATED),
        );
        resp.headers_mut().insert(
            hyper::header::VARY,
            hyper::header::HeaderValue::from_static("Accept"),
        );
        return Ok(resp);
    }
    let (group, version, rest) = match segments.as_slice() {
        ["api"] => {
            let host = parts
                .headers
                .get(hyper::header::HOST)
                .and_then(|h| h.to_str().ok())
                .or_else(|| parts.uri.authority().map(|a| a.as_str()))
                .unwrap_or("127.0.0.1");
            return Ok(json_reply(200, &discovery::api_versions(host)));
        }
        ["apis"] => return Ok(json_reply(200, &discovery::group_list(&registry))),
        ["api", "v1"] => {
            let doc = discovery::resource_list(&registry, "", "v1").ok_or_else(not_found)?;
            return Ok(json_reply(200, &doc));
        }
        ["apis", group] => {
            let doc = discovery::group(&registry, group).ok_or_else(not_found)?;
            return Ok(json_reply(200, &doc));
        }
        ["apis", group, version] => {
            let doc = discovery::resource_list(&registry, group, version).ok_or_else(not_found)?;
            return Ok(json_reply(200, &doc));
        }
        ["openapi", "v2"] => return openapi_v2(&registry, accept),
        ["openapi", "v3"] => return Ok(json_reply(200, &crate::openapi::index(&registry))),
        ["openapi", "v3", "api", "v1"] => {
            let doc = crate::openapi::document(&registry, "", "v1").ok_or_else(not_found)?;
            return Ok(json_reply(200, &doc));
        }
        ["openapi", "v3", "apis", group, version] => {
            let doc = crate::openapi::document(&registry, group, version).ok_or_else(not_found)?;
            return Ok(json_reply(200, &doc));
        }
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return Err(not_found()),
    };
    let target = parse_target(state, group, version, rest)?;
    let query = Query::parse(parts.uri.query());
    let verb = verb(&parts.method, &target, &query).ok_or_else(ApiError::method_not_allowed)?;
    // TokenRequest is the create-only subresource of ServiceAccounts.
    if target.subresource.as_deref() == Some("token") && verb != "create" {
        return Err(ApiError::method_not_allowed());
    }
    // A Pod's log is read-only.
    if target.subresource.as_deref() == Some("log") && verb != "get" {
        return Err(ApiError::method_not_allowed());
    }
    if target.info.create_only != (verb == "create") && target.info.create_only {
        return Err(ApiError::method_not_allowed());
    }
    let info = &target.info;
    let is_namespace = info.group.is_empty() && info.plural == "namespaces";
    let attrs = ResourceAttributes {
        verb: verb.to_string(),
        api_group: info.group.clone(),
        api_version: info.version.clone(),
        resource: info.plural.clone(),
        subresource: target.subresource.clone().unwrap_or_default(),
        namespace: match (&target.namespace, &target.name) {
            (Some(ns), _) => ns.clone(),
            (None, Some(name)) if is_namespace => name.clone(),
            _ => String::new(),
        },
        name: target.name.clone().unwrap_or_default(),
    };
    check(state, &identity, &AuthzRequest::Resource(attrs))?;
    let header = |h: hyper::header::HeaderName| {
        parts
            .headers
            .get(h)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let content_type = header(hyper::header::CONTENT_TYPE)
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let as_table = crate::table::wanted(&header(hyper::header::ACCEPT));
    let protobuf = crate::protobuf::preferred(&header(hyper::header::ACCEPT));
    let user_agent = header(hyper::header::USER_AGENT)
        .split('/')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or("unknown")
        .to_string();
    let req = Req {
        state,
        target,
        query,
        content_type,
        body,
        identity,
        user_agent,
        as_table,
        protobuf,
        warnings: parking_lot::Mutex::new(Vec::new()),
    };
    let reply = |(code, v): (u16, Value)| json_reply(code, &v);
    // `kubectl get` asks for a Table: custom resources and the printed built-ins answer one.
    let printed = |(code, v): (u16, Value)| json_reply(code, &req.printed(v));
    let response = match verb {
        "get" if req.target.subresource.as_deref() == Some("log") => logs::get(&req),
        "get" => read::get(&req).map(printed),
        "list" => read::list(&req).map(printed),
        "watch" => watch::watch(&req),
        "create" if req.target.subresource.as_deref() == Some("token") => {
            token::create(&req).map(reply)
        }
        "create" => write::create(&req).map(reply),
        "update" => write::update(&req).map(reply),
        "patch" => patch::patch(&req).map(reply),
        "delete" => delete::delete(&req).map(reply),
        "deletecollection" => delete::delete_collection(&req).map(reply),
        _ => Err(ApiError::method_not_allowed()),
    };
    if let Ok(resp) = &response
        && resp.status().is_success()
        && matches!(
            verb,
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
        && !req.query.dry_run()
    {
        let info = &req.target.info;
        let resource = match info.group.as_str() {
            "" => info.plural.clone(),
            group => format!("{}.{group}", info.plural),
        };
        state.write_log.push(crate::write_log::WriteRecord {
            seq: 0,
            verb: verb.to_string(),
            resource,
            namespace: req.ns().to_string(),
            name: req.name().to_string(),
            subresource: req.target.subresource.clone(),
            user_agent: header(hyper::header::USER_AGENT),
        });
    }
    let warnings = std::mem::take(&mut *req.warnings.lock());
    response.map(|mut resp| {
        crate::reply::add_warnings(&mut resp, &warnings);
        resp
    })
}

/// `/openapi/v2`, in the form the first `Accept` clause that names one asks for (kube-openapi's
/// negotiation): JSON for `application/json` and wildcards, protobuf for gnostic's types;
/// 406 when no clause names either.
fn openapi_v2(registry: &Arc<Registry>, accept: &str) -> Result<Response<Body>, ApiError> {
    let accept = if accept.trim().is_empty() {
        "*/*"
    } else {
        accept
    };
    let wanted = accept.split(',').find_map(|clause| {
        let media = clause.split(';').next().unwrap_or_default().trim();
        crate::openapi_v2::form(media)
    });
    let Some(form) = wanted else {
        return Err(ApiError::not_acceptable(
            accept,
            &["application/json", crate::openapi_v2::MEDIA_TYPE],
        ));
    };
    let doc = crate::openapi_v2::rendered(registry);
    let (bytes, content_type) = match form {
        crate::openapi_v2::Form::Json => (doc.json.clone(), "application/json"),
        crate::openapi_v2::Form::Protobuf => (doc.protobuf.clone(), crate::openapi_v2::MEDIA_TYPE),
    };
    let mut resp = Response::new(full(bytes));
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    resp.headers_mut().insert(
        hyper::header::VARY,
        hyper::header::HeaderValue::from_static("Accept"),
    );
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_decodes_percent_and_plus() {
        let q = Query::parse(Some(
            "labelSelector=app%3Dweb%2Ctier+in+(a)&watch=1&dryRun=All",
        ));
        assert_eq!(q.get("labelSelector"), Some("app=web,tier in (a)"));
        assert!(q.flag("watch") && q.dry_run());
        assert_eq!(Query::parse(Some("x=%zz%")).get("x"), Some("%zz%"));
        assert_eq!(Query::parse(Some("x=%C3%A9%")).get("x"), Some("é%"));
    }
}
