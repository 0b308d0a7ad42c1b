//! Watch streams: from a resourceVersion (410 Gone as an ERROR event when it is older than the
//! history), initial events, bookmarks, selectors, timeouts, and dropped streams on demand;
//! newline-delimited JSON events, or length-prefixed protobuf WatchEvents when the client's
//! `Accept` lists protobuf first.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{StreamBody, combinators::UnsyncBoxBody};
use hyper::Response;
use hyper::body::Frame;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::reply::Body;
use crate::resources::ResourceInfo;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::store::Event;

use super::Req;
use super::read::{matches, present, selectors};

/// How often a watch that allows bookmarks gets one.
const BOOKMARK_EVERY: Duration = Duration::from_secs(1);

/// How a watch stream frames its events.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Framing {
    /// One JSON event per line.
    Json,
    /// kube-apiserver's protobuf stream: length-prefixed WatchEvents.
    Protobuf,
}

impl Framing {
    fn content_type(self) -> &'static str {
        match self {
            Framing::Json => "application/json",
            Framing::Protobuf => "application/vnd.kubernetes.protobuf;stream=watch",
        }
    }

    /// One event. An object with no protobuf form (which a served built-in kind always has)
    /// becomes an ERROR event naming it, as the stream cannot switch to JSON.
    fn event(self, event_type: &str, object: &Value) -> Bytes {
        match self {
            Framing::Json => {
                let mut bytes = serde_json::to_vec(&json!({"type": event_type, "object": object}))
                    .unwrap_or_default();
                bytes.push(b'\n');
                Bytes::from(bytes)
            }
            Framing::Protobuf => match crate::protobuf::watch_event(event_type, object) {
                Ok(frame) => Bytes::from(frame),
                Err(e) => {
                    let status = ApiError::internal(e.to_string()).to_status();
                    Bytes::from(crate::protobuf::watch_event("ERROR", &status).unwrap_or_default())
                }
            },
        }
    }

    fn bookmark(self, info: &ResourceInfo, rv: u64, initial_end: bool) -> Bytes {
        let mut obj = json!({
            "kind": info.kind,
            "apiVersion": info.api_version(),
            "metadata": {"resourceVersion": rv.to_string()},
        });
        if initial_end {
            obj["metadata"]["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        self.event("BOOKMARK", &obj)
    }
}

/// What a watch filters on, and how it shows objects.
struct Filter {
    info: Arc<ResourceInfo>,
    /// `Some(includeObject)` when the watch asked for Table rows.
    table: Option<Option<String>>,
    framing: Framing,
    namespace: Option<String>,
    name: Option<String>,
    labels: LabelSelector,
    fields: Option<FieldSelector>,
}

impl Filter {
    fn selects(&self, obj: &Value) -> bool {
        self.name.as_ref().is_none_or(|n| {
            obj.pointer("/metadata/name").and_then(Value::as_str) == Some(n.as_str())
        }) && matches(&self.labels, self.fields.as_ref(), obj)
    }

    /// The event type this watch sees for a change, if any: a modification that moves an
    /// object into the selection is ADDED, out of it DELETED.
    fn event_type(&self, ev: &Event) -> Option<&'static str> {
        if ev.key != self.info.store_key()
            || self
                .namespace
                .as_ref()
                .is_some_and(|ns| *ns != ev.namespace)
        {
            return None;
        }
        let now = self.selects(&ev.object);
        match (&ev.previous, now) {
            (Some(prev), true) if !self.selects(prev) => Some("ADDED"),
            (Some(prev), false) if self.selects(prev) => Some("DELETED"),
            (_, true) => Some(ev.event_type.as_str()),
            (_, false) => None,
        }
    }

    /// An object as this watch shows it: at its version, as a one-row Table when asked for
    /// (custom resources).
    fn show(&self, obj: &Value) -> Value {
        let shown = present(&self.info, obj);
        match &self.table {
            Some(include) => {
                crate::table::of(&self.info, &shown, include.as_deref()).unwrap_or(shown)
            }
            None => shown,
        }
    }

    /// The watch line for a change, if this watch sees it.
    fn line(&self, ev: &Event) -> Option<Bytes> {
        self.event_type(ev)
            .map(|t| self.framing.event(t, &self.show(&ev.object)))
    }
}

/// GET with `watch=true` or under `/watch/`: a stream of JSON watch events.
pub fn watch(req: &Req<'_>) -> Result<Response<Body>, ApiError> {
    let (labels, fields) = selectors(req)?;
    let info = req.target.info.clone();
    let filter = Filter {
        info: info.clone(),
        table: (req.as_table && req.target.subresource.is_none())
            .then(|| req.query.get("includeObject").map(String::from)),
        framing: if req.protobuf && !req.as_table {
            Framing::Protobuf
        } else {
            Framing::Json
        },
        namespace: req.target.namespace.clone(),
        name: req.target.name.clone(),
        labels,
        fields,
    };
    let framing = filter.framing;
    let bookmarks = req.query.flag("allowWatchBookmarks");
    let send_initial = req.query.flag("sendInitialEvents");
    let timeout = match req.query.get("timeoutSeconds") {
        Some(t) => Some(Duration::from_secs(t.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!(
                "timeoutSeconds: Invalid value: {t:?}: must be a non-negative integer"
            ))
        })?)),
        None => None,
    };
    let rv = match req
        .query
        .get("resourceVersion")
        .filter(|s| !s.is_empty() && *s != "0")
    {
        Some(s) => Some(s.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!(
                "resourceVersion: Invalid value: {s:?}: must be a decimal integer"
            ))
        })?),
        None => None,
    };
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let mut drop_rx = req.state.drop_watches.subscribe();
    let dropped = req.state.faults().drop_watches;
    let state = req.state.clone();
    let start = {
        let store = state.store();
        let current = store.current_rv();
        match rv {
            Some(rv) if !send_initial => match store.watch_from(rv) {
                Ok((past, sub)) => Ok((Vec::new(), past, sub, rv)),
                Err(too_old) => Err(ApiError::gone(rv, too_old.oldest)),
            },
            _ => {
                let initial: Vec<Value> = store
                    .list(&info.store_key(), filter.namespace.as_deref())
                    .filter(|o| {
                        matches(&filter.labels, filter.fields.as_ref(), o)
                            && filter.name.as_ref().is_none_or(|n| {
                                o.pointer("/metadata/name").and_then(Value::as_str)
                                    == Some(n.as_str())
                            })
                    })
                    .map(|o| filter.show(o))
                    .collect();
                Ok((initial, Vec::new(), store.subscribe(), current))
            }
        }
    };
    tokio::spawn(async move {
        if dropped {
            return;
        }
        let (initial, past, mut sub, mut last_rv) = match start {
            Ok(s) => s,
            Err(gone) => {
                let _ = tx.send(framing.event("ERROR", &gone.to_status())).await;
                return;
            }
        };
        for obj in &initial {
            if tx.send(framing.event("ADDED", obj)).await.is_err() {
                return;
            }
        }
        if send_initial
            && bookmarks
            && tx
                .send(framing.bookmark(&info, last_rv, true))
                .await
                .is_err()
        {
            return;
        }
        for ev in past {
            last_rv = ev.rv;
            if let Some(l) = filter.line(&ev)
                && tx.send(l).await.is_err()
            {
                return;
            }
        }
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let mut tick = tokio::time::interval(BOOKMARK_EVERY);
        tick.tick().await;
        loop {
            let sleep = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                ev = sub.recv() => match ev {
                    Ok(ev) => {
                        if ev.rv <= last_rv {
                            continue;
                        }
                        last_rv = ev.rv;
                        if let Some(l) = filter.line(&ev)
                            && tx.send(l).await.is_err()
                        {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let gone = ApiError::gone(last_rv, last_rv + 1);
                        let _ = tx.send(framing.event("ERROR", &gone.to_status())).await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = tick.tick(), if bookmarks => {
                    if tx.send(framing.bookmark(&info, last_rv, false)).await.is_err() {
                        return;
                    }
                }
                _ = drop_rx.changed() => return,
                _ = sleep => return,
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::convert::Infallible>(Frame::data(b)), rx))
    });
    let mut resp = Response::new(UnsyncBoxBody::new(StreamBody::new(stream)));
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static(framing.content_type()),
    );
    Ok(resp)
}
