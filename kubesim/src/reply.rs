//! HTTP response bodies and replies shared by the listener and the API handlers: the body
//! type, whole-document bodies, JSON replies, Status error replies, and their protobuf form
//! for clients whose `Accept` prefers it.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use hyper::body::Body as _;
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use hyper::{Response, StatusCode};
use serde_json::Value;

use crate::status::ApiError;

/// Response bodies: whole JSON documents or watch streams.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// A body of the given bytes.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    UnsyncBoxBody::new(Full::new(bytes.into()))
}

/// A JSON response with the given status.
pub fn json_reply(code: u16, value: &Value) -> Response<Body> {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    let mut resp = Response::new(full(bytes));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// Adds one `Warning: 299 - "text"` header per warning, as kube-apiserver sends them
/// (kubectl prints each as `Warning: text`).
pub fn add_warnings(resp: &mut Response<Body>, warnings: &[String]) {
    for w in warnings {
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            resp.headers_mut().append(hyper::header::WARNING, v);
        }
    }
}

/// The Status response for an error (with Retry-After when the error carries one).
pub fn error_reply(e: &ApiError) -> Response<Body> {
    let mut resp = json_reply(e.code, &e.to_status());
    if let Some(secs) = e.retry_after {
        resp.headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(secs));
    }
    resp
}

/// The reply in protobuf when the client's `Accept` prefers
/// `application/vnd.kubernetes.protobuf`, as kube-apiserver answers then: whole JSON
/// documents (objects, lists, Status errors) whose kind has a protobuf message are
/// re-encoded; streams (watches), text and documents without a message (discovery) are
/// answered as they are, which a client listing JSON after protobuf accepts.
pub async fn negotiate(resp: Response<Body>, accept: &str) -> Response<Body> {
    let is_json = resp.headers().get(CONTENT_TYPE).map(HeaderValue::as_bytes)
        == Some(b"application/json".as_slice());
    if !crate::protobuf::preferred(accept) || !is_json || resp.body().size_hint().exact().is_none()
    {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    let encoded = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|doc| crate::protobuf::encode(&doc).ok());
    match encoded {
        Some(protobuf) => {
            parts.headers.insert(
                CONTENT_TYPE,
                HeaderValue::from_static(crate::protobuf::MEDIA_TYPE),
            );
            parts.headers.remove(CONTENT_LENGTH);
            Response::from_parts(parts, full(protobuf))
        }
        None => Response::from_parts(parts, full(bytes)),
    }
}
