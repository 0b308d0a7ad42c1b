//! `GET /api/v1/openapi.json`: the OpenAPI 3.0 document of the API, generated on each request
//! from [`super::route_table`] (paths, methods, access) and [`route_docs`] (summaries, bodies,
//! answers), with the JSON Schemas of the request body types (derived with `schemars`) as
//! components. It describes the API and reveals nothing of the server (no configuration, no
//! credentials, no data), so it is served without authentication.

use axum::Json;
use axum::http::Method;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value, json};

use super::apps::{AppAt, DecisionBody, ListQuery, SyncBody};
use super::{Access, ErrorShape, RouteSpec, route_table};

/// The route of the document.
pub const ROUTE: &str = "/api/v1/openapi.json";

/// The OpenAPI version the document follows (what `openapiv3` and most tools read).
pub const OPENAPI_VERSION: &str = "3.0.3";

/// A function adding a type's schema to a generator and returning its schema (a `$ref` for
/// named types): how [`RouteDoc`] refers to a Rust type without being generic.
type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// The JSON Schema of `T` in `generator` (a `$ref` to a component for structs).
fn schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// A route's request body.
enum RequestBody {
    /// JSON of a Rust type; `required: false` when an empty body is accepted too.
    Json { schema: SchemaFn, required: bool },
    /// Bytes the handler passes on or checks as they are (webhooks, the shell's proxy).
    Raw(&'static str),
}

/// A route's successful answer.
enum Answer {
    /// JSON of a Rust type.
    Typed(SchemaFn),
    /// A JSON object the handler builds (an untyped `Json<Value>`), described in words.
    Object,
    /// No body (204).
    Empty,
    /// Bytes of another media type (the metrics' text, the cluster's answers).
    Other(&'static str),
}

/// What the document says about one route beyond [`RouteSpec`]: kept in one table,
/// [`route_docs`], which `tests/openapi.rs` holds to [`route_table`] both ways (no route
/// without documentation, no documentation without a route).
pub struct RouteDoc {
    /// HTTP method.
    pub method: Method,
    /// Path pattern, as in [`route_table`].
    pub path: &'static str,
    /// One line saying what the route does.
    pub summary: &'static str,
    body: Option<RequestBody>,
    query: Option<SchemaFn>,
    status: u16,
    answer: Answer,
    answer_description: &'static str,
}

/// `method path` answering 200 with a JSON object described by `answer`.
fn doc(
    method: Method,
    path: &'static str,
    summary: &'static str,
    answer: &'static str,
) -> RouteDoc {
    RouteDoc {
        method,
        path,
        summary,
        body: None,
        query: None,
        status: 200,
        answer: Answer::Object,
        answer_description: answer,
    }
}

impl RouteDoc {
    /// The route takes a JSON body of type `T`.
    fn body<T: JsonSchema>(self) -> RouteDoc {
        RouteDoc {
            body: Some(RequestBody::Json {
                schema: schema_of::<T>,
                required: true,
            }),
            ..self
        }
    }

    /// The route takes an optional JSON body of type `T` (empty means the defaults).
    fn optional_body<T: JsonSchema>(self) -> RouteDoc {
        RouteDoc {
            body: Some(RequestBody::Json {
                schema: schema_of::<T>,
                required: false,
            }),
            ..self
        }
    }

    /// The route takes a body it does not decode itself, described by `what`.
    fn raw_body(self, what: &'static str) -> RouteDoc {
        RouteDoc {
            body: Some(RequestBody::Raw(what)),
            ..self
        }
    }

    /// The route reads the query parameters of `T`.
    fn query<T: JsonSchema>(self) -> RouteDoc {
        RouteDoc {
            query: Some(schema_of::<T>),
            ..self
        }
    }

    /// The route answers `T` as JSON.
    fn answers<T: JsonSchema>(self) -> RouteDoc {
        RouteDoc {
            answer: Answer::Typed(schema_of::<T>),
            ..self
        }
    }

    /// The route answers `status` instead of 200.
    fn status(self, status: u16) -> RouteDoc {
        RouteDoc { status, ..self }
    }

    /// The route answers 204 without a body.
    fn empty(self) -> RouteDoc {
        RouteDoc {
            status: 204,
            answer: Answer::Empty,
            ..self
        }
    }

    /// The route answers bytes of `media_type`.
    fn other(self, media_type: &'static str) -> RouteDoc {
        RouteDoc {
            answer: Answer::Other(media_type),
            ..self
        }
    }
}

/// The documentation of every route of [`route_table`], in its order.
pub fn route_docs() -> Vec<RouteDoc> {
    use super::account::PasswordChange;
    use super::audit::VerifyQuery;
    use super::auth::LoginRequest;
    use super::promotions::{PromoteQuery, RollbackQuery};
    use super::recorded_pushes::PushesQuery;
    use super::shell::{CommandOutput, CommandRequest, OpenedSession};
    use super::tokens::TokenRequest;
    use super::users::{CreateUser, UpdateUser};
    use crate::clusters::access::CheckRequest;
    use crate::clusters::registry::{ClusterView, RegisterRequest, TestRequest, UpdateRequest};
    use crate::clusters::status::Status;
    use crate::sources::repositories::{
        AddRequest, RepositoryView, UpdateRequest as RepositoryUpdate,
    };
    use crate::store::audit::PageQuery;
    use crate::store::users::User;
    use Method as M;
    const PROXY: &str = super::SHELL_PROXY_PATH;
    const APP: &str = "/api/v1/apps/{cluster}/{name}";
    let proxied = |method: Method, summary: &'static str| {
        doc(
            method,
            PROXY,
            summary,
            "The cluster's answer, as the cluster gave it.",
        )
        .raw_body("A Kubernetes API request body (JSON, YAML or a patch), forwarded as is.")
        .other("application/json")
    };
    vec![
        doc(M::GET, "/api/v1/health", "Whether the process runs", "`{\"status\": \"ok\"}`."),
        doc(M::GET, "/metrics", "Prometheus metrics of the Apps and the audit head", "The metrics in the Prometheus text format.")
            .other("text/plain"),
        doc(M::POST, "/api/v1/auth/login", "Log in: checks the password and sets the session cookie", "`{\"username\"}`; the `Set-Cookie` header carries the session. 429 with `Retry-After` when rate limited.")
            .body::<LoginRequest>(),
        doc(M::POST, "/api/v1/auth/logout", "End the caller's session and clear the cookie", "Nothing.").empty(),
        doc(M::GET, "/api/v1/auth/me", "Who the caller is", "`{\"username\", \"role\", \"clusters\", \"via\"}`."),
        doc(M::POST, "/api/v1/auth/password", "Change the caller's password (ends the user's other sessions)", "`{\"sessions_ended\"}`: how many other sessions were ended.")
            .body::<PasswordChange>(),
        doc(M::GET, "/api/v1/tokens", "The caller's API tokens (never their secrets)", "`{\"tokens\": [{\"id\", \"name\", \"created_at\", \"last_used_at\", \"expires_at\", \"expired\", \"role\"}]}`."),
        doc(M::POST, "/api/v1/tokens", "Create an API token (its secret is shown once)", "The token's view and `token`, its secret.")
            .body::<TokenRequest>()
            .status(201),
        doc(M::DELETE, "/api/v1/tokens/{id}", "Revoke one of the caller's API tokens", "Nothing.").empty(),
        doc(M::GET, "/api/v1/clusters", "Every registered cluster with its cached status", "`{\"clusters\": [...]}`, with `declarationErrors` when the `--clusters` file could not be applied."),
        doc(M::POST, "/api/v1/clusters", "Register a cluster (kubeconfig sealed at rest) and probe it", "The cluster's view (never its kubeconfig).")
            .body::<RegisterRequest>()
            .answers::<ClusterView>()
            .status(201),
        doc(M::POST, "/api/v1/clusters/test", "Test a connection with a kubeconfig, storing nothing", "`{\"status\", \"version\", \"node_count\", \"error\"}`: the connection's status and its named cause.")
            .body::<TestRequest>()
            .answers::<Status>(),
        doc(M::POST, "/api/v1/clusters/reseal", "Reseal every kubeconfig under the current key and re-chain the audit log", "`{\"resealed\", \"audit_rechained\"}`."),
        doc(M::GET, "/api/v1/clusters/{name}", "One cluster with its cached status", "The cluster's view (never its kubeconfig).")
            .answers::<ClusterView>(),
        doc(M::PUT, "/api/v1/clusters/{name}", "Update a cluster's fields given (rotate the kubeconfig, change namespaces)", "The cluster's view.")
            .body::<UpdateRequest>()
            .answers::<ClusterView>(),
        doc(M::DELETE, "/api/v1/clusters/{name}", "Remove a cluster", "Nothing.").empty(),
        doc(M::POST, "/api/v1/clusters/{name}/check", "Review access with the stored credentials", "The access report: each review with its verdict.")
            .body::<CheckRequest>(),
        doc(M::POST, "/api/v1/clusters/{name}/shell", "Open an audited shell session on a cluster", "The session and its proxy path.")
            .answers::<OpenedSession>()
            .status(201),
        doc(M::DELETE, "/api/v1/clusters/{name}/shell/{session}", "End a shell session", "Nothing.").empty(),
        doc(M::POST, "/api/v1/clusters/{name}/shell/commands", "Run one read command (get, describe, logs) on a cluster", "What kubectl would print, and the rows of a `get`.")
            .body::<CommandRequest>()
            .answers::<CommandOutput>(),
        proxied(M::GET, "Read through the cluster shell's proxy (namespaces outside the allowlist refused)"),
        proxied(M::POST, "Create through the cluster shell's proxy (audited)"),
        proxied(M::PUT, "Replace through the cluster shell's proxy (audited)"),
        proxied(M::PATCH, "Patch through the cluster shell's proxy (audited)"),
        proxied(M::DELETE, "Delete through the cluster shell's proxy (audited)"),
        doc(M::GET, "/api/v1/shards", "The replicas sharing the fleet, their clusters and Lease expiry; on a `--role server` process, the operators reporting to it and their Leases", "`{\"sharded\": bool, \"replica\": ID | null, \"replicas\": [{\"replica\", \"lease_expires_at\", \"clusters\", \"apps\"}], \"operators\": [{\"operator\", \"reported_at\", \"lease_expires_at\", \"clusters\", \"apps\"}], \"lease_error\"?: string}` (`operators` empty unless `--role server`, whose `replicas` are its sharded operators' live Leases and their claimed clusters, read from the management cluster; `lease_error` when they cannot be read)."),
        doc(M::GET, "/api/v1/audit", "One page of the audit log, filtered", "`{\"entries\": [...], \"next_before\": SEQ | null, \"head\": {\"seq\", \"hash\"} | null}`.")
            .query::<PageQuery>(),
        doc(M::GET, "/api/v1/audit/verify", "Verify the audit log's MAC chain", "`{\"intact\": true, \"entries\", \"head\", \"key\"}` or `{\"intact\": false, \"error\", \"first_bad_seq\"}`.")
            .query::<VerifyQuery>(),
        doc(M::GET, "/api/v1/repositories", "Every registered Git repository (never its secrets)", "`{\"repositories\": [...]}`."),
        doc(M::POST, "/api/v1/repositories", "Register Git credentials and/or a webhook secret (sealed at rest)", "The repository's view (which secrets are set, never their values).")
            .body::<AddRequest>()
            .answers::<RepositoryView>()
            .status(201),
        doc(M::POST, "/api/v1/repositories/reseal", "Reseal every repository secret under the current key", "`{\"resealed\"}`."),
        doc(M::GET, "/api/v1/repositories/{id}", "One repository", "The repository's view.")
            .answers::<RepositoryView>(),
        doc(M::PUT, "/api/v1/repositories/{id}", "Rotate a repository's credentials or webhook secret", "The repository's view.")
            .body::<RepositoryUpdate>()
            .answers::<RepositoryView>(),
        doc(M::DELETE, "/api/v1/repositories/{id}", "Remove a repository", "Nothing.").empty(),
        doc(M::GET, "/api/v1/users", "Every user", "`{\"users\": [{\"username\", \"role\", \"clusters\", \"email\", \"created_at\"}]}`."),
        doc(M::POST, "/api/v1/users", "Create a user", "The user (never the password).")
            .body::<CreateUser>()
            .answers::<User>()
            .status(201),
        doc(M::GET, "/api/v1/users/{name}", "One user", "The user.")
            .answers::<User>(),
        doc(M::PATCH, "/api/v1/users/{name}", "Change a user's role, approver clusters or email", "The user.")
            .body::<UpdateUser>()
            .answers::<User>(),
        doc(M::DELETE, "/api/v1/users/{name}", "Delete a user, its sessions and API tokens", "Nothing.").empty(),
        doc(M::GET, "/api/v1/apps", "Every App (one entry per target of an App with targets) with its phase and status", "`{\"apps\": [...], \"errors\": [...], \"reconciles_apps\"}`: the Apps, the problems of the `--apps` directory, and whether this process reconciles Apps (false on `--role server`: the Apps listed are those its operators report, each with its `operator`).")
            .query::<ListQuery>(),
        doc(M::GET, APP, "One App (or one target, `{name}` being `NAME:TARGET`) with its status", "The App: name, target, namespaces, cluster, phase and status.")
            .query::<AppAt>(),
        doc(M::GET, "/api/v1/apps/{cluster}/{name}/diff", "A fresh plan of the App (nothing decided or applied)", "`{\"plan\", \"text\"}`: the plan and its diff, Secrets masked.")
            .query::<AppAt>(),
        doc(M::GET, "/api/v1/apps/{cluster}/{name}/events", "The App's newest audit entries", "`{\"events\": [...]}`.")
            .query::<AppAt>(),
        doc(M::GET, "/api/v1/apps/{cluster}/{name}/resources", "The App's objects with their health", "`{\"resources\": [{\"object\", \"health\", ...}]}`.")
            .query::<AppAt>(),
        doc(M::POST, "/api/v1/apps/{cluster}/{name}/approve", "Approve the Held plan (bound to its hash when given)", "`{\"status\"}` or `{\"plan\", \"text\"}`: the pass's outcome.")
            .query::<AppAt>()
            .optional_body::<DecisionBody>(),
        doc(M::POST, "/api/v1/apps/{cluster}/{name}/reject", "Reject the Held plan (bound to its hash when given)", "`{\"status\"}`: the App's status after the decision.")
            .query::<AppAt>()
            .optional_body::<DecisionBody>(),
        doc(M::POST, "/api/v1/apps/{cluster}/{name}/sync", "Sync the App now", "`{\"status\"}` or `{\"plan\", \"text\"}`: the pass's outcome.")
            .query::<AppAt>()
            .optional_body::<SyncBody>(),
        doc(M::POST, "/api/v1/apps/{cluster}/{name}/refresh", "Hard refresh: fetch the source and plan again", "`{\"status\"}` or `{\"plan\", \"text\"}`: the pass's outcome.")
            .query::<AppAt>(),
        doc(M::POST, "/api/v1/apps/{cluster}/{name}/promote", "Promote the App's images to another App", "The promotion record and the target's status.")
            .query::<PromoteQuery>(),
        doc(M::GET, "/api/v1/apps/{cluster}/{name}/promotions", "The App's promotions and rollbacks", "`{\"promotions\": [...]}`.")
            .query::<AppAt>(),
        doc(M::POST, "/api/v1/apps/{cluster}/{name}/rollback", "Pin the images of an earlier promotion again", "The rollback record and the App's status.")
            .query::<RollbackQuery>(),
        doc(M::POST, "/api/v1/apps/{cluster}/{name}/unpin", "Remove the pins of the last promotion", "The App's status.")
            .query::<AppAt>(),
        doc(M::POST, crate::sources::webhook::ROUTE, "A forge's push event: polls the repositories it names", "`{\"status\": \"triggered\", \"repository\"}`, or 202 `{\"status\": \"ignored\", \"reason\"}` when no App uses the repository.")
            .raw_body("The forge's push event as it sent it (JSON), signed with the repository's webhook secret."),
        doc(M::GET, "/internal/clusters/{name}/kubeconfig", "The unsealed kubeconfig and allowlist of a cluster, for the operator", "`{\"name\", \"kubeconfig\", \"namespaces\", ...}`."),
        doc(M::GET, crate::sources::server_credentials::ROUTE, "The registered credentials of a repository in the clear, for the operator", "`{\"url\", \"auth\", \"username\", \"secret\"}`; 404 when the repository is not registered."),
        doc(M::GET, crate::sources::server_pushes::ROUTE, "The pushes recorded by the webhook of a `--role server` process, for the operators", "`{\"pushes\": [{\"repository\", \"id\", \"pushed_ms\"}]}`: each repository pushed to since `since_ms`, with its latest push, oldest first (at most 1,000).")
            .query::<PushesQuery>(),
        doc(M::PUT, crate::daemon::runner::APPS_ROUTE, "The Apps an operator reconciles now, reported by the operator", "Empty; the Apps it no longer reports stop being listed.")
            .raw_body("`{\"apps\": [{\"app\": App, \"cluster_template\", \"target\", \"primary\"}, ...]}`: every App (targets expanded) the operator reconciles, with what its expansion set.")
            .empty(),
        doc(M::PUT, crate::daemon::runner::HEARTBEAT_ROUTE, "An operator is alive and still reconciles the Apps of its last report", "Empty; 409 when the server holds another report of the operator, or none: it sends its Apps again.")
            .raw_body("`{\"digest\"}`: the SHA-256 (hex) of the body of the operator's last report of its Apps.")
            .empty(),
        doc(M::PUT, crate::daemon::runner::STATUS_ROUTE, "An operator's App has a new status", "Empty.")
            .raw_body("`{\"key\", \"cluster\", \"name\", \"status\"}`.")
            .empty(),
        doc(M::DELETE, crate::daemon::runner::STATUS_ROUTE, "An operator no longer manages an App: its status goes", "Empty.")
            .raw_body("`{\"key\"}`.")
            .empty(),
        doc(M::GET, crate::daemon::runner::STATUS_ROUTE, "A page of the stored App statuses, for an operator taking clusters over or restarting; with `key`, one App's (a sharded operator reading a promotion's source)", "`{\"statuses\": [{\"key\", \"status\"}], \"next\"}`: in key order, `next` the key to read the following page after (null on the last).")
            .query::<crate::daemon::runner::StatusesQuery>(),
        doc(M::GET, crate::daemon::runner::REPORTED_APP_ROUTE, "An App as the operator that reconciles it reported it, for another operator promoting from it", "`{\"app\": App, \"cluster_template\", \"target\", \"primary\"}`; 404 when no operator reports it, 409 when `name` finds several Apps.")
            .query::<crate::daemon::runner::ReportedAppQuery>(),
        doc(M::POST, crate::daemon::runner::PROMOTIONS_ROUTE, "Record an automatic promotion an operator performs (pending)", "`{\"id\"}`: the record's id, which the operator puts in the target's `promotedFrom`.")
            .raw_body("A promotion record (`{\"id\", \"target_key\", \"target\", \"source\", \"revision\", \"images\", \"actor\": \"wardn/autoPromote\", \"created_at\", \"plan_hash\", \"outcome\": \"pending\"}`)."),
        doc(M::PUT, crate::daemon::runner::PROMOTION_ROUTE, "Finish an operator's automatic promotion with its outcome and audit it", "Empty; 409 when the record is not that App's pending automatic promotion.")
            .raw_body("`{\"record\", \"audit\"}`: the record as the pass left it, and the audit entry's outcome text.")
            .empty(),
        doc(M::GET, crate::daemon::runner::server_requests::ROUTE, "The operations handed to the operators that no operator claimed yet", "`{\"requests\": [{\"id\", \"app_key\", \"operation\", \"plan_hash\"}]}`, oldest first."),
        doc(M::POST, crate::daemon::runner::server_requests::CLAIM_ROUTE, "Claim a handed-over operation for an operator (one claim wins)", "`{\"claimed\": bool}`; 404 for no such request.")
            .raw_body("`{\"replica\"}`: the claiming operator."),
        doc(M::PUT, crate::daemon::runner::server_requests::OUTCOME_ROUTE, "The outcome of a claimed operation", "Empty; 409 when the request is not claimed or already answered.")
            .raw_body("`{\"outcome\"}`: the outcome as JSON text.")
            .empty(),
        doc(M::GET, ROUTE, "This OpenAPI document", "The OpenAPI 3.0 document of the API."),
    ]
}

/// The OpenAPI form of an axum path: `{*rest}` becomes `{rest}` (OpenAPI has no catch-all;
/// the parameter's description says it spans segments).
pub fn openapi_path(path: &str) -> String {
    path.replace("{*", "{")
}

/// The parameters of an axum path pattern: `(name, catch_all)`.
fn path_parameters(path: &str) -> Vec<(&str, bool)> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| match name.strip_prefix('*') {
            Some(rest) => (rest, true),
            None => (name, false),
        })
        .collect()
}

fn path_parameter_description(name: &str, catch_all: bool) -> &'static str {
    match (name, catch_all) {
        (_, true) => {
            "The Kubernetes API path to forward, slashes included (e.g. `api/v1/namespaces/default/pods`)."
        }
        ("cluster", _) => "The App's cluster segment (`local`: the management cluster).",
        ("session", _) => "The shell session's id.",
        ("id", _) => "The object's id.",
        _ => "The name of the object the path names.",
    }
}

/// The query parameters of `schema` (the properties of a query struct's schema).
fn query_parameters(schema: SchemaFn) -> Vec<Value> {
    let mut generator = SchemaSettings::openapi3()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let schema = schema(&mut generator);
    let required: Vec<&Value> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let mut property = property.clone();
            // A query parameter is absent, never null: `["string", "null"]` is `"string"`.
            if let Some(types) = property.get("type").and_then(Value::as_array) {
                let single = types.iter().find(|t| *t != "null").cloned();
                if let (Some(single), Some(object)) = (single, property.as_object_mut()) {
                    object.insert("type".into(), single);
                }
            }
            let description = property
                .as_object_mut()
                .and_then(|p| p.remove("description"))
                .and_then(|d| d.as_str().map(plain))
                .unwrap_or_default();
            json!({
                "name": name,
                "in": "query",
                "required": required.contains(&&Value::String(name.clone())),
                "description": description,
                "schema": property,
            })
        })
        .collect()
}

/// `text` with its rustdoc links (`` [`Name`] ``) as code (`` `Name` ``).
fn plain(text: &str) -> String {
    text.replace("[`", "`").replace("`]", "`")
}

/// Rustdoc links in `description`s (`` [`Name`] ``) read as code (`` `Name` ``): the
/// descriptions come from the types' doc comments.
fn plain_descriptions(value: &mut Value) {
    match value {
        Value::Object(object) => {
            for (key, value) in object.iter_mut() {
                match value {
                    Value::String(text) if key == "description" => *text = plain(text),
                    other => plain_descriptions(other),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(plain_descriptions),
        _ => {}
    }
}

/// The security requirements and the access sentence of `access`.
fn security(access: Access) -> (Value, String) {
    match access {
        Access::Public => (json!([]), "No authentication.".to_string()),
        Access::Role(role) => (
            json!([{ "bearerToken": [] }, { "sessionCookie": [] }]),
            format!("Least role: `{role}` (an API token or a session; roles below answer 403)."),
        ),
        Access::Internal => (
            json!([{ "internalToken": [] }]),
            "The internal token (`WARDN_INTERNAL_TOKEN`) only.".to_string(),
        ),
        Access::Operators => (
            json!([{ "internalToken": [] }]),
            "The internal token (`WARDN_INTERNAL_TOKEN`) only, on a `--role server` process (409 on one that reconciles Apps itself).".to_string(),
        ),
        Access::Webhook => (
            json!([{ "webhookSignature": [] }]),
            "No session: the body must be signed with the repository's webhook secret.".to_string(),
        ),
    }
}

/// `x-wardn-access`: the access level as one word.
fn access_word(access: Access) -> String {
    match access {
        Access::Public => "public".to_string(),
        Access::Role(role) => role.to_string(),
        Access::Internal | Access::Operators => "internal".to_string(),
        Access::Webhook => "webhook".to_string(),
    }
}

fn error_answer(shape: ErrorShape) -> Value {
    match shape {
        ErrorShape::Json => json!({
            "description": "An error: `{\"error\": MESSAGE}` naming the field or object and the reason.",
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } },
        }),
        ErrorShape::KubernetesStatus => json!({
            "description": "An error as a Kubernetes `Status` (for kubectl).",
            "content": { "application/json": { "schema": { "type": "object" } } },
        }),
    }
}

/// The operation object of `spec`, documented by `doc` (`None`: undocumented, which the
/// tests refuse).
fn operation(spec: &RouteSpec, doc: Option<&RouteDoc>, generator: &mut SchemaGenerator) -> Value {
    let (security, access) = security(spec.access);
    let mut operation = Map::new();
    let id: String = format!("{} {}", spec.method, spec.path)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    operation.insert("operationId".into(), Value::String(id));
    if let Some(doc) = doc {
        operation.insert("summary".into(), doc.summary.into());
    }
    operation.insert("description".into(), access.into());
    let tag = spec
        .path
        .trim_start_matches("/api/v1/")
        .trim_start_matches('/')
        .split(['/', '.'])
        .next()
        .unwrap_or_default();
    operation.insert("tags".into(), json!([tag]));
    let mut parameters: Vec<Value> = path_parameters(spec.path)
        .into_iter()
        .map(|(name, catch_all)| {
            json!({
                "name": name,
                "in": "path",
                "required": true,
                "description": path_parameter_description(name, catch_all),
                "schema": { "type": "string" },
            })
        })
        .collect();
    if let Some(query) = doc.and_then(|d| d.query) {
        parameters.extend(query_parameters(query));
    }
    if !parameters.is_empty() {
        operation.insert("parameters".into(), Value::Array(parameters));
    }
    operation.insert("security".into(), security);
    match doc.and_then(|d| d.body.as_ref()) {
        Some(RequestBody::Json { schema, required }) => {
            let schema = schema(generator);
            operation.insert(
                "requestBody".into(),
                json!({
                    "required": required,
                    "content": { "application/json": { "schema": schema } },
                }),
            );
        }
        Some(RequestBody::Raw(what)) => {
            operation.insert(
                "requestBody".into(),
                json!({
                    "description": what,
                    "content": { "*/*": { "schema": { "type": "string", "format": "binary" } } },
                }),
            );
        }
        None => {}
    }
    let mut responses = Map::new();
    if let Some(doc) = doc {
        let mut answer = Map::new();
        answer.insert("description".into(), doc.answer_description.into());
        let content = match &doc.answer {
            Answer::Typed(schema) => {
                Some(json!({ "application/json": { "schema": schema(generator) } }))
            }
            Answer::Object => {
                Some(json!({ "application/json": { "schema": { "type": "object" } } }))
            }
            Answer::Other(media_type) => {
                Some(json!({ *media_type: { "schema": { "type": "string" } } }))
            }
            Answer::Empty => None,
        };
        if let Some(content) = content {
            answer.insert("content".into(), content);
        }
        responses.insert(doc.status.to_string(), Value::Object(answer));
    }
    responses.insert("default".into(), error_answer(spec.errors));
    operation.insert("responses".into(), Value::Object(responses));
    operation.insert("x-wardn-access".into(), access_word(spec.access).into());
    Value::Object(operation)
}

/// The OpenAPI document of every route of [`route_table`].
pub fn document() -> Value {
    let docs = route_docs();
    let mut generator = SchemaSettings::openapi3().into_generator();
    let mut paths = Map::new();
    for spec in route_table() {
        let doc = docs
            .iter()
            .find(|d| d.method == spec.method && d.path == spec.path);
        let operation = operation(&spec, doc, &mut generator);
        let item = paths
            .entry(openapi_path(spec.path))
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(item) = item {
            item.insert(spec.method.as_str().to_ascii_lowercase(), operation);
        }
    }
    let mut schemas = generator.take_definitions(true);
    for schema in schemas.values_mut() {
        plain_descriptions(schema);
    }
    schemas.insert(
        "Error".into(),
        json!({
            "type": "object",
            "required": ["error"],
            "properties": { "error": { "type": "string", "description": "What went wrong, naming the field or object." } },
        }),
    );
    json!({
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "wardn API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The HTTP API of `wardn serve`. Every route's least role is in its description and in `x-wardn-access`.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearerToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An API token (`wardn_…`) from `POST /api/v1/tokens`.",
                },
                "sessionCookie": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": super::auth::SESSION_COOKIE,
                    "description": "The session set by `POST /api/v1/auth/login`. Writes with the cookie must send `Content-Type: application/json` (CSRF protection).",
                },
                "internalToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The internal token (`WARDN_INTERNAL_TOKEN`), for the operator role.",
                },
                "webhookSignature": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "X-Hub-Signature-256",
                    "description": "`sha256=<hex HMAC-SHA256(secret, body)>` (GitHub); `X-Gitlab-Token` or `X-Wardn-Signature` are accepted too.",
                },
            },
        },
    })
}

/// `GET /api/v1/openapi.json`: the document, without authentication.
pub async fn serve() -> Json<Value> {
    Json(document())
}
