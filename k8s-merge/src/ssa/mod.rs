//! Server-side apply (structured-merge-diff v4 semantics) over `serde_json::Value`, guided by
//! the schema: field ownership per manager in `metadata.managedFields`, the merge of applied
//! configurations, removal of fields a manager stops applying, and conflicts.

mod fieldset;
mod typed;

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

pub use fieldset::{FieldSet, PathElement, path_string};

use crate::schema::TypeRef;
use crate::value::remove_key;

/// The `operation` of Apply entries.
const APPLY: &str = "Apply";
/// The `operation` of Update entries (create, update, patch).
const UPDATE: &str = "Update";

/// A field another manager owns with a different value than the applied configuration's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The other manager's name.
    pub manager: String,
    /// The field, written as the API server writes it, e.g. `.spec.replicas` or
    /// `.spec.template.spec.containers[name="app"].image`.
    pub field: String,
    /// The other manager's operation (`Apply` or `Update`).
    pub operation: String,
    /// The API version the other manager wrote with.
    pub api_version: String,
    /// When the other manager last wrote, if recorded.
    pub time: Option<String>,
    /// The subresource the other manager wrote through, if any.
    pub subresource: Option<String>,
}

impl Conflict {
    /// The manager as the API server prints it in conflict messages and Status causes
    /// (`"kubectl"`, or `"kubectl-create" using v1` for Update entries). The time of the
    /// entry is never part of it: the API server's manager identifiers leave it out.
    pub fn manager_description(&self) -> String {
        let mut text = format!("{:?}", self.manager);
        if let Some(subresource) = &self.subresource {
            text.push_str(&format!(" with subresource {subresource:?}"));
        }
        if self.operation == UPDATE {
            text.push_str(&format!(" using {}", self.api_version));
        }
        text
    }

    /// The message of this conflict's Status cause (`conflict with "kubectl"`); the cause's
    /// `field` is [`Conflict::field`] and its type `FieldManagerConflict`.
    pub fn cause_message(&self) -> String {
        format!("conflict with {}", self.manager_description())
    }
}

/// Why an apply was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// Fields owned by other managers would change (HTTP 409 unless forced).
    #[error("{}", conflict_message(.0))]
    Conflicts(Vec<Conflict>),
    /// The applied configuration is not an object or sets managed fields (HTTP 400).
    #[error("invalid apply configuration: {0}")]
    Invalid(String),
}

/// The API server's conflict message (`Apply failed with 1 conflict: conflict with ...`).
fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [only] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            only.manager_description(),
            only.field
        );
    }
    let mut managers: Vec<String> = conflicts
        .iter()
        .map(Conflict::manager_description)
        .collect();
    managers.sort();
    managers.dedup();
    let mut lines = Vec::new();
    for manager in managers {
        lines.push(format!("conflicts with {manager}:"));
        for conflict in conflicts
            .iter()
            .filter(|c| c.manager_description() == manager)
        {
            lines.push(format!("- {}", conflict.field));
        }
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

/// One `managedFields` entry with its parsed field set.
#[derive(Debug, Clone)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: Option<String>,
    subresource: Option<String>,
    set: FieldSet,
}

impl Entry {
    /// True when this entry belongs to `manager` writing with `operation` through `subresource`.
    fn is(&self, manager: &str, operation: &str, subresource: Option<&str>) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource.as_deref() == subresource
    }

    /// Parses an entry; entries that are not FieldsV1 or are malformed are skipped (the API
    /// server drops unparsable managed fields rather than failing the request).
    fn parse(value: &Value) -> Option<Entry> {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        if value
            .get("fieldsType")
            .and_then(Value::as_str)
            .is_some_and(|t| t != "FieldsV1")
        {
            return None;
        }
        let set = match value.get("fieldsV1") {
            Some(fields) => FieldSet::from_fields_v1(fields).ok()?,
            None => FieldSet::new(),
        };
        Some(Entry {
            manager: text("manager")?,
            operation: text("operation")?,
            api_version: text("apiVersion").unwrap_or_default(),
            time: text("time"),
            subresource: text("subresource").filter(|s| !s.is_empty()),
            set,
        })
    }

    /// The entry as the API server writes it.
    fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("manager".into(), json!(self.manager));
        map.insert("operation".into(), json!(self.operation));
        map.insert("apiVersion".into(), json!(self.api_version));
        if let Some(time) = &self.time {
            map.insert("time".into(), json!(time));
        }
        map.insert("fieldsType".into(), json!("FieldsV1"));
        map.insert("fieldsV1".into(), self.set.to_fields_v1());
        if let Some(subresource) = &self.subresource {
            map.insert("subresource".into(), json!(subresource));
        }
        Value::Object(map)
    }
}

/// The fields the API server owns and never records for a manager.
fn server_owned() -> &'static FieldSet {
    static SET: OnceLock<FieldSet> = OnceLock::new();
    SET.get_or_init(server_owned_set)
}

/// Builds [`server_owned`].
fn server_owned_set() -> FieldSet {
    let mut set = FieldSet::new();
    let field = |name: &str| PathElement::Field(name.to_owned());
    set.insert(&[field("apiVersion")]);
    set.insert(&[field("kind")]);
    set.insert(&[field("metadata")]);
    for name in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "selfLink",
        "managedFields",
    ] {
        set.insert(&[field("metadata"), field(name)]);
    }
    set
}

/// The managed fields entries of an object.
fn entries_of(object: &Value) -> Vec<Entry> {
    let list = object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array);
    list.into_iter()
        .flatten()
        .filter_map(Entry::parse)
        .collect()
}

/// The managed fields a create or update request sets, as the API server reads them: a list
/// holding one empty entry resets them (`Some` of nothing); a list of valid entries replaces
/// them; anything else (absent, empty, unparsable) keeps the stored ones (`None`).
fn requested_entries(new: &Value) -> Option<Vec<Entry>> {
    let list = new.pointer("/metadata/managedFields")?.as_array()?;
    if let [Value::Object(only)] = list.as_slice()
        && only.is_empty()
    {
        return Some(Vec::new());
    }
    let entries = entries_of(new);
    (!entries.is_empty()).then_some(entries)
}

/// `object` without `metadata.managedFields`.
fn without_managed_fields(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(Value::Object(metadata)) = object.get_mut("metadata") {
        remove_key(metadata, "managedFields");
    }
    object
}

/// Writes `entries` (dropping empty ones, sorted as the API server sorts them: by operation,
/// time, manager, API version) into `object.metadata.managedFields`.
fn write_entries(object: &mut Value, mut entries: Vec<Entry>) {
    entries.retain(|entry| !entry.set.is_empty());
    entries.sort_by(|a, b| {
        (&a.operation, &a.time, &a.manager, &a.api_version).cmp(&(
            &b.operation,
            &b.time,
            &b.manager,
            &b.api_version,
        ))
    });
    let Value::Object(root) = object else {
        return;
    };
    let metadata = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(metadata) = metadata else {
        return;
    };
    if entries.is_empty() {
        remove_key(metadata, "managedFields");
    } else {
        metadata.insert(
            "managedFields".into(),
            Value::Array(entries.iter().map(Entry::to_json).collect()),
        );
    }
}

/// The `apiVersion` of an object.
fn api_version_of(object: &Value) -> String {
    object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Server-side apply by `manager` (operation Apply): merges `applied` into `live` (or creates
/// the object when `live` is `None`) and returns the new object with `metadata.managedFields`
/// updated. Fields this manager applied before and no longer applies are removed unless
/// another manager owns them; fields owned by other managers whose values would change are
/// conflicts unless `force`, which takes their ownership. The manager's Apply entry holds
/// exactly the applied configuration's field set.
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    ty: Option<TypeRef>,
    now_rfc3339: &str,
) -> Result<Value, ApplyError> {
    apply_subresource(live, applied, manager, None, force, ty, now_rfc3339)
}

/// [`apply`] through a subresource (e.g. `status`), recorded in the entry's `subresource`.
pub fn apply_subresource(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    subresource: Option<&str>,
    force: bool,
    ty: Option<TypeRef>,
    now_rfc3339: &str,
) -> Result<Value, ApplyError> {
    if !applied.is_object() {
        return Err(ApplyError::Invalid(
            "the applied configuration must be a JSON object".to_owned(),
        ));
    }
    if applied
        .pointer("/metadata/managedFields")
        .is_some_and(|v| !v.is_null())
    {
        return Err(ApplyError::Invalid(
            "metadata.managedFields must be nil".to_owned(),
        ));
    }
    let entries = live.map(entries_of).unwrap_or_default();
    let live = live.map_or_else(|| json!({}), without_managed_fields);
    let config = applied;
    let applied_set = typed::field_set(config, ty).difference(server_owned());
    let (mine, others): (Vec<Entry>, Vec<Entry>) = entries
        .into_iter()
        .partition(|e| e.is(manager, APPLY, subresource));
    let last_set = mine.first().map(|e| e.set.clone()).unwrap_or_default();

    let mut merged = typed::merge(Some(live.clone()), config, ty).unwrap_or_else(|| json!({}));
    let mut owned_elsewhere = applied_set.clone();
    for other in &others {
        owned_elsewhere.union_with(&other.set);
    }
    for path in last_set.difference(&owned_elsewhere).paths() {
        if !owned_elsewhere.owns_at_or_below(&path) {
            typed::remove_path(&mut merged, &path, ty);
        }
    }

    let comparison = typed::compare(&live, &merged, ty);
    // Fields the configuration sets to null are removed: a change like any other.
    let nulled = typed::null_fields(config, ty).intersection(&comparison.removed);
    let changed = comparison.added.union(&comparison.modified).union(&nulled);
    let mut conflicts = Vec::new();
    for other in &others {
        for path in other.set.intersection(&changed).paths() {
            conflicts.push(Conflict {
                manager: other.manager.clone(),
                field: path_string(&path),
                operation: other.operation.clone(),
                api_version: other.api_version.clone(),
                time: other.time.clone(),
                subresource: other.subresource.clone(),
            });
        }
    }
    if !force && !conflicts.is_empty() {
        return Err(ApplyError::Conflicts(conflicts));
    }
    let mut entries: Vec<Entry> = others
        .into_iter()
        .map(|mut e| {
            e.set = e.set.difference(&changed).difference(&comparison.removed);
            e
        })
        .collect();
    let api_version = Some(api_version_of(config))
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| api_version_of(&live));
    // As the API server: a no-op apply keeps the entry's previous time.
    let time = match mine.first().and_then(|e| e.time.clone()) {
        Some(time) if comparison.is_empty() => time,
        _ => now_rfc3339.to_owned(),
    };
    entries.push(Entry {
        manager: manager.to_owned(),
        operation: APPLY.to_owned(),
        api_version,
        time: Some(time),
        subresource: subresource.map(str::to_owned),
        set: applied_set,
    });
    write_entries(&mut merged, entries);
    Ok(merged)
}

/// Records a create, update or patch by `manager` (operation Update): returns `new` with
/// `metadata.managedFields` updated so that the manager's Update entry gains the fields whose
/// values changed from `old` (every field on create) and other managers lose them. Managed
/// fields are taken from `new` when it carries valid entries (a client may set them; a list of
/// one empty entry, `[{}]`, resets them), else from `old`.
pub fn record_update(
    old: Option<&Value>,
    new: &Value,
    manager: &str,
    ty: Option<TypeRef>,
    now_rfc3339: &str,
) -> Value {
    record_update_subresource(old, new, manager, None, ty, now_rfc3339)
}

/// [`record_update`] through a subresource (e.g. `status`), recorded in the entry's
/// `subresource`.
pub fn record_update_subresource(
    old: Option<&Value>,
    new: &Value,
    manager: &str,
    subresource: Option<&str>,
    ty: Option<TypeRef>,
    now_rfc3339: &str,
) -> Value {
    let mut entries =
        requested_entries(new).unwrap_or_else(|| old.map(entries_of).unwrap_or_default());
    let old = old.map_or_else(|| json!({}), without_managed_fields);
    let mut result = without_managed_fields(new);
    let comparison = typed::compare(&old, &result, ty);
    let changed = comparison
        .added
        .union(&comparison.modified)
        .difference(server_owned());
    for entry in &mut entries {
        if !entry.is(manager, UPDATE, subresource) {
            entry.set = entry
                .set
                .difference(&changed)
                .difference(&comparison.removed);
        }
    }
    let position = entries
        .iter()
        .position(|e| e.is(manager, UPDATE, subresource));
    let previous = position.map(|i| entries.remove(i));
    let set = previous
        .as_ref()
        .map_or_else(FieldSet::new, |e| e.set.difference(&comparison.removed))
        .union(&changed);
    // As the API server: the time moves only when this write changed fields.
    let time = match &previous {
        Some(previous) if changed.is_empty() => previous.time.clone(),
        _ => Some(now_rfc3339.to_owned()),
    };
    entries.push(Entry {
        manager: manager.to_owned(),
        operation: UPDATE.to_owned(),
        api_version: api_version_of(&result),
        time,
        subresource: subresource.map(str::to_owned),
        set,
    });
    write_entries(&mut result, entries);
    result
}

#[cfg(test)]
mod tests;
