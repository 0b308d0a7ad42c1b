//! `GET /api/v1/namespaces/NS/pods/NAME/log` (`kubectl logs`): the simulated lines a
//! container prints once it runs — that it starts its image, listens on each declared port
//! and is ready — with the kubelet's answers when the container is not running or not
//! named, and `timestamps`, `tailLines` and `limitBytes` honoured.

use hyper::Response;
use serde_json::Value;

use super::Req;
use crate::reply::{Body, full};
use crate::status::ApiError;

/// The container the request names, or the Pod's only one.
fn container<'a>(req: &Req<'_>, pod: &'a Value, name: &str) -> Result<&'a Value, ApiError> {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .flat_map(|k| pod.pointer(&format!("/spec/{k}")).and_then(Value::as_array))
        .flatten()
        .collect();
    let name_of = |c: &Value| {
        c.get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    match req.query.get("container").filter(|c| !c.is_empty()) {
        Some(wanted) => containers
            .into_iter()
            .find(|c| name_of(c) == wanted)
            .ok_or_else(|| {
                ApiError::bad_request(format!("container {wanted} is not valid for pod {name}"))
            }),
        None => {
            let main: Vec<&Value> = pod
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .map(|c| c.iter().collect())
                .unwrap_or_default();
            match main.as_slice() {
                [only] => Ok(only),
                _ => {
                    let names: Vec<String> = main.iter().map(|c| name_of(c)).collect();
                    Err(ApiError::bad_request(format!(
                        "a container name must be specified for pod {name}, choose one of: [{}]",
                        names.join(" ")
                    )))
                }
            }
        }
    }
}

/// The simulated output of a running container: (timestamp, line) pairs.
fn lines(container: &Value, started: &str) -> Vec<(String, String)> {
    let image = container
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut out = vec![format!("kubesim: starting {image}")];
    for port in container
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let number = port
            .get("containerPort")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let protocol = port
            .get("protocol")
            .and_then(Value::as_str)
            .unwrap_or("TCP");
        out.push(format!("kubesim: listening on {number}/{protocol}"));
    }
    out.push("kubesim: ready".to_string());
    let stamp = started.trim_end_matches('Z');
    out.into_iter()
        .map(|l| (format!("{stamp}.000000000Z"), l))
        .collect()
}

/// GET of a Pod's log: `text/plain` lines, or the kubelet's 400 when it has none to give.
pub fn get(req: &Req<'_>) -> Result<Response<Body>, ApiError> {
    let name = req.name();
    let pod = req
        .state
        .store()
        .get("/pods", req.ns(), name)
        .ok_or_else(|| ApiError::not_found("", "pods", name))?;
    let container = container(req, &pod, name)?;
    let cname = container
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let status = ["initContainerStatuses", "containerStatuses"]
        .iter()
        .flat_map(|k| {
            pod.pointer(&format!("/status/{k}"))
                .and_then(Value::as_array)
        })
        .flatten()
        .find(|s| s.get("name").and_then(Value::as_str) == Some(cname));
    let state = status.and_then(|s| s.get("state"));
    let started = state
        .and_then(|s| {
            s.pointer("/running/startedAt")
                .or_else(|| s.pointer("/terminated/startedAt"))
        })
        .and_then(Value::as_str);
    let Some(started) = started else {
        let reason = state
            .and_then(|s| s.pointer("/waiting/reason"))
            .and_then(Value::as_str)
            .unwrap_or("ContainerCreating");
        return Err(ApiError::bad_request(format!(
            "container \"{cname}\" in pod \"{name}\" is waiting to start: {reason}"
        )));
    };
    if req.query.flag("previous") {
        return Err(ApiError::bad_request(format!(
            "previous terminated container \"{cname}\" in pod \"{name}\" not found"
        )));
    }
    let mut all = lines(container, started);
    if let Some(tail) = req
        .query
        .get("tailLines")
        .and_then(|t| t.parse::<usize>().ok())
    {
        let skip = all.len().saturating_sub(tail);
        all.drain(..skip);
    }
    let timestamps = req.query.flag("timestamps");
    let mut text: String = all
        .into_iter()
        .map(|(t, l)| {
            if timestamps {
                format!("{t} {l}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    if let Some(limit) = req
        .query
        .get("limitBytes")
        .and_then(|b| b.parse::<usize>().ok())
    {
        let mut cut = limit.min(text.len());
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    let mut resp = Response::new(full(text));
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain"),
    );
    Ok(resp)
}
