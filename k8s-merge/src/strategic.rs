//! Strategic merge patch, as the API server (apimachinery `strategicpatch`) applies it, guided by
//! the schema's `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key`.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::error::PatchError;
use crate::merge_patch::json_merge_patch;
use crate::schema::TypeRef;
use crate::value::{display_path, join_field, join_index, json_equal, remove_key, type_name};

/// The directive key of maps and list items (`$patch: replace | delete`).
const PATCH: &str = "$patch";
/// The directive listing the keys a map keeps.
const RETAIN_KEYS: &str = "$retainKeys";
/// Prefix of the directive giving the final order of a merged list.
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
/// Prefix of the directive removing values from a merged list of scalars.
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";

/// How merged list items are ordered when no `$setElementOrder` directive says otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListOrder {
    /// The original's items keep their order and new items are appended in the patch's order
    /// (what kustomize produces).
    #[default]
    Appended,
    /// kube-apiserver's order: the patch's items in the patch's order, interleaved with the
    /// items only the original has (a patch adding one container puts it first).
    Server,
    /// kustomize's order (`kubectl kustomize` patches): the patch's items in the patch's order,
    /// then the items only the original has, in the original's order.
    Kustomize,
}

/// Applies a strategic merge patch to `original`.
///
/// Maps merge recursively and `null` deletes a key; lists whose patch strategy is `merge` merge
/// by their patch merge key (lists of scalars become unions); other lists are replaced. The
/// directives `$patch`, `$retainKeys`, `$deleteFromPrimitiveList/<field>` and
/// `$setElementOrder/<field>` are honoured. Without a type (custom resources) this is a JSON
/// merge patch. Merged lists keep the original's order with new items appended
/// ([`ListOrder::Appended`]); see [`strategic_merge_patch_with_order`] for the API server's.
pub fn strategic_merge_patch(
    original: &Value,
    patch: &Value,
    ty: Option<TypeRef>,
) -> Result<Value, PatchError> {
    strategic_merge_patch_with_order(original, patch, ty, ListOrder::Appended)
}

/// [`strategic_merge_patch`] with an explicit list order: kubesim's PATCH handler uses
/// [`ListOrder::Server`] to order lists as kube-apiserver does.
pub fn strategic_merge_patch_with_order(
    original: &Value,
    patch: &Value,
    ty: Option<TypeRef>,
    order: ListOrder,
) -> Result<Value, PatchError> {
    let Value::Object(patch_map) = patch else {
        return Err(PatchError::Invalid(format!(
            "a strategic merge patch must be a JSON object, not {}",
            type_name(patch)
        )));
    };
    let Some(ty) = ty else {
        return Ok(json_merge_patch(original, patch));
    };
    let Value::Object(original) = original else {
        return Err(strategic_error(
            "",
            "the original document is not a JSON object",
        ));
    };
    Merger { order }.merge_map(original.clone(), patch_map, Some(ty), "")
}

/// A strategic merge patch error at `path`.
fn strategic_error(path: &str, reason: impl Into<String>) -> PatchError {
    PatchError::Strategic {
        path: display_path(path).to_owned(),
        reason: reason.into(),
    }
}

/// The type of `key` inside an object of type `ty`.
fn field_type<'a>(ty: Option<TypeRef<'a>>, key: &str) -> Option<TypeRef<'a>> {
    ty?.member(key)
}

/// The recursive merge, carrying the list order.
struct Merger {
    order: ListOrder,
}

impl Merger {
    /// Merges `patch` into the map `original` (see upstream `mergeMap`).
    fn merge_map(
        &self,
        mut original: Map<String, Value>,
        patch: &Map<String, Value>,
        ty: Option<TypeRef>,
        path: &str,
    ) -> Result<Value, PatchError> {
        if let Some(directive) = patch.get(PATCH) {
            match directive.as_str() {
                Some("replace") => {
                    let mut replaced = patch.clone();
                    remove_key(&mut replaced, PATCH);
                    return Ok(Value::Object(replaced));
                }
                Some("delete") => return Ok(Value::Object(Map::new())),
                _ => {
                    return Err(strategic_error(
                        path,
                        format!("unknown $patch directive {directive}"),
                    ));
                }
            }
        }
        if let Some(retain) = patch.get(RETAIN_KEYS) {
            apply_retain_keys(&mut original, patch, retain, path)?;
        }
        let mut ordered = HashSet::new();
        for (key, order) in patch {
            if let Some(field) = key.strip_prefix(SET_ELEMENT_ORDER) {
                self.set_element_order(&mut original, patch, field, order, ty, path)?;
                ordered.insert(field);
            }
        }
        for (key, value) in patch {
            if key == PATCH || key == RETAIN_KEYS || key.starts_with(SET_ELEMENT_ORDER) {
                continue;
            }
            if let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
                delete_from_primitive_list(&mut original, field, value, path)?;
                continue;
            }
            if key.starts_with('$') {
                return Err(strategic_error(path, format!("unknown directive {key:?}")));
            }
            if ordered.contains(key.as_str()) {
                continue;
            }
            let child_path = join_field(path, key);
            if value.is_null() {
                remove_key(&mut original, key);
                continue;
            }
            let child_ty = field_type(ty, key);
            let merged = match original.get_mut(key) {
                Some(existing) => {
                    self.merge_value(existing.take(), value, child_ty, &child_path)?
                }
                None => self.fresh(value, child_ty, &child_path)?,
            };
            original.insert(key.clone(), merged);
        }
        Ok(Value::Object(original))
    }

    /// Merges a patch value into an existing value of the same field.
    fn merge_value(
        &self,
        original: Value,
        patch: &Value,
        ty: Option<TypeRef>,
        path: &str,
    ) -> Result<Value, PatchError> {
        match (original, patch) {
            (Value::Object(original), Value::Object(patch)) => {
                if ty.is_some_and(|ty| ty.patch_strategy().replace) {
                    return Ok(Value::Object(patch.clone()));
                }
                self.merge_map(original, patch, ty, path)
            }
            (Value::Array(original), Value::Array(patch)) => self
                .merge_list_field(original, patch, ty, path)
                .map(Value::Array),
            (_, patch) => self.fresh(patch, ty, path),
        }
    }

    /// A patch value for a field the original does not have (or has with another JSON type):
    /// merged into an empty value so that its directives and `null`s are processed.
    fn fresh(&self, patch: &Value, ty: Option<TypeRef>, path: &str) -> Result<Value, PatchError> {
        match patch {
            Value::Object(_) => self.merge_value(Value::Object(Map::new()), patch, ty, path),
            Value::Array(_) => self.merge_value(Value::Array(Vec::new()), patch, ty, path),
            other => Ok(other.clone()),
        }
    }

    /// Merges a list field by its patch strategy: `merge` lists merge, others are replaced.
    fn merge_list_field(
        &self,
        original: Vec<Value>,
        patch: &[Value],
        ty: Option<TypeRef>,
        path: &str,
    ) -> Result<Vec<Value>, PatchError> {
        match ty {
            Some(ty) if ty.patch_strategy().merge => self.merge_list(original, patch, ty, path),
            _ => Ok(patch.to_vec()),
        }
    }

    /// Merges two lists of a `merge` field (see upstream `mergeSlice`).
    fn merge_list(
        &self,
        original: Vec<Value>,
        patch: &[Value],
        ty: TypeRef,
        path: &str,
    ) -> Result<Vec<Value>, PatchError> {
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        let items_are_maps = element_kind_is_map(&original, patch, path)?;
        if !items_are_maps {
            let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
            for item in original.iter().chain(patch) {
                if !merged.iter().any(|seen| json_equal(seen, item)) {
                    merged.push(item.clone());
                }
            }
            return Ok(self.enforce_order(merged, patch, &original, None));
        }
        let Some(merge_key) = ty.patch_merge_key() else {
            return Err(strategic_error(
                path,
                "cannot merge lists of objects without a patch merge key",
            ));
        };
        let (mut original, plain) = apply_list_directives(original, patch, merge_key, path)?;
        let item_ty = ty.items();
        let server_order = match self.order {
            ListOrder::Server => original.clone(),
            ListOrder::Appended | ListOrder::Kustomize => Vec::new(),
        };
        for (index, item) in plain.iter().enumerate() {
            let item_path = join_index(path, index);
            let (Value::Object(item_map), Some(key)) = (item, item.get(merge_key)) else {
                return Err(strategic_error(
                    &item_path,
                    format!("list item has no merge key {merge_key:?}"),
                ));
            };
            let found = original
                .iter_mut()
                .find(|o| o.get(merge_key).is_some_and(|v| json_equal(v, key)));
            match found {
                Some(existing) => {
                    let existing_map = match existing.take() {
                        Value::Object(map) => map,
                        _ => Map::new(),
                    };
                    *existing = self.merge_map(existing_map, item_map, item_ty, &item_path)?;
                }
                None => original.push(self.fresh(item, item_ty, &item_path)?),
            }
        }
        Ok(self.enforce_order(original, &plain, &server_order, Some(merge_key)))
    }

    /// Orders a merged list by the configured [`ListOrder`].
    fn enforce_order(
        &self,
        merged: Vec<Value>,
        patch: &[Value],
        original: &[Value],
        merge_key: Option<&str>,
    ) -> Vec<Value> {
        match self.order {
            ListOrder::Appended => merged,
            ListOrder::Server => {
                let (in_patch, server_only) = partition(merged, patch, merge_key);
                normalize_element_order(in_patch, server_only, patch, original, merge_key)
            }
            ListOrder::Kustomize => {
                let (mut in_patch, original_only) = partition(merged, patch, merge_key);
                in_patch.sort_by_key(|item| index_of(patch, item, merge_key));
                in_patch.extend(original_only);
                in_patch
            }
        }
    }

    /// Processes `$setElementOrder/<field>` with the patch's list for `field` (see upstream
    /// `mergePatchIntoOriginal`): merge, then order by the directive, then by the original.
    fn set_element_order(
        &self,
        original: &mut Map<String, Value>,
        patch: &Map<String, Value>,
        field: &str,
        order: &Value,
        ty: Option<TypeRef>,
        path: &str,
    ) -> Result<(), PatchError> {
        let field_path = join_field(path, field);
        let Value::Array(order) = order else {
            return Err(strategic_error(
                &field_path,
                "$setElementOrder must be a list",
            ));
        };
        let as_list = |value: Option<&Value>| match value {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items.clone())),
            Some(other) => Err(strategic_error(
                &field_path,
                format!("expected a list, found {}", type_name(other)),
            )),
        };
        let original_list = as_list(original.get(field))?;
        let patch_list = as_list(patch.get(field))?;
        let field_ty = field_type(ty, field);
        let merge_key = field_ty.and_then(|t| t.patch_merge_key());
        validate_order(
            patch_list.as_deref().unwrap_or(&[]),
            order,
            merge_key,
            &field_path,
        )?;
        let merged = match (original_list.clone(), &patch_list) {
            (None, None) => return Ok(()),
            (Some(original), None) => original,
            (None, Some(patch)) => {
                self.merge_list_field(Vec::new(), patch, field_ty, &field_path)?
            }
            (Some(original), Some(patch)) => {
                self.merge_list_field(original, patch, field_ty, &field_path)?
            }
        };
        let maps = merged.iter().any(Value::is_object);
        let result = if maps && merge_key.is_none() {
            merged
        } else {
            let (in_order, server_only) = partition(merged, order, merge_key);
            let server_order = original_list.unwrap_or_default();
            normalize_element_order(in_order, server_only, order, &server_order, merge_key)
        };
        original.insert(field.to_owned(), Value::Array(result));
        Ok(())
    }
}

/// Applies `$retainKeys`: every key the patch sets must be listed, and unlisted keys of the
/// original are cleared.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    retain: &Value,
    path: &str,
) -> Result<(), PatchError> {
    let keys: Option<Vec<&str>> = retain
        .as_array()
        .and_then(|list| list.iter().map(Value::as_str).collect());
    let Some(keys) = keys else {
        return Err(strategic_error(
            path,
            "$retainKeys must be a list of strings",
        ));
    };
    for (key, value) in patch {
        let directive = key == PATCH
            || key == RETAIN_KEYS
            || key.starts_with(SET_ELEMENT_ORDER)
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST);
        if !value.is_null() && !directive && !keys.contains(&key.as_str()) {
            return Err(strategic_error(
                path,
                format!("field {key:?} is set but not listed in $retainKeys"),
            ));
        }
    }
    original.retain(|key, _| keys.contains(&key.as_str()));
    Ok(())
}

/// Applies `$deleteFromPrimitiveList/<field>`: removes the listed values from the list.
fn delete_from_primitive_list(
    original: &mut Map<String, Value>,
    field: &str,
    values: &Value,
    path: &str,
) -> Result<(), PatchError> {
    let field_path = join_field(path, field);
    let Value::Array(values) = values else {
        return Err(strategic_error(
            &field_path,
            "$deleteFromPrimitiveList must be a list",
        ));
    };
    match original.get_mut(field) {
        None => Ok(()),
        Some(Value::Array(items)) => {
            items.retain(|item| !values.iter().any(|value| json_equal(item, value)));
            Ok(())
        }
        Some(other) => Err(strategic_error(
            &field_path,
            format!(
                "$deleteFromPrimitiveList needs a list, found {}",
                type_name(other)
            ),
        )),
    }
}

/// True when the items of both lists are objects, false when they are scalars; an error when
/// they mix JSON types or are lists (lists of lists cannot be merged).
fn element_kind_is_map(
    original: &[Value],
    patch: &[Value],
    path: &str,
) -> Result<bool, PatchError> {
    let mut kind = None;
    for item in original.iter().chain(patch) {
        if item.is_array() {
            return Err(strategic_error(path, "lists of lists cannot be merged"));
        }
        let this = type_name(item);
        match kind {
            None => kind = Some(this),
            Some(seen) if seen != this => {
                return Err(strategic_error(
                    path,
                    format!("list items mix {seen} and {this} values"),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(kind == Some("object"))
}

/// Handles the `$patch` items of a merge list: `delete` removes the original's items with that
/// key, `replace` makes the patch's other items the whole list; `merge` is refused, as upstream.
/// Returns the original and the patch's plain items.
fn apply_list_directives(
    mut original: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
    path: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for (index, item) in patch.iter().enumerate() {
        let Some(directive) = item.get(PATCH) else {
            plain.push(item.clone());
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let Some(key) = item.get(merge_key) else {
                    let item_path = join_index(path, index);
                    return Err(strategic_error(
                        &item_path,
                        format!("$patch: delete needs the merge key {merge_key:?}"),
                    ));
                };
                original.retain(|o| !o.get(merge_key).is_some_and(|v| json_equal(v, key)));
            }
            Some("replace") => replace = true,
            Some("merge") => {
                let item_path = join_index(path, index);
                return Err(strategic_error(
                    &item_path,
                    "merging lists cannot yet be specified in the patch",
                ));
            }
            _ => {
                let item_path = join_index(path, index);
                return Err(strategic_error(
                    &item_path,
                    format!("unknown $patch directive {directive}"),
                ));
            }
        }
    }
    if replace {
        return Ok((plain, Vec::new()));
    }
    Ok((original, plain))
}

/// Checks that the patch's list follows the relative order of its `$setElementOrder` list and
/// only has items that list names (deletions excepted).
fn validate_order(
    patch: &[Value],
    order: &[Value],
    merge_key: Option<&str>,
    path: &str,
) -> Result<(), PatchError> {
    let items: Vec<&Value> = patch
        .iter()
        .filter(|item| item.get(PATCH).is_none())
        .collect();
    let (mut p, mut o) = (0, 0);
    while p < items.len() && o < order.len() {
        if same_item(items[p], &order[o], merge_key, path)? {
            p += 1;
        }
        o += 1;
    }
    if p < items.len() {
        return Err(strategic_error(
            path,
            "the order of the patch list does not match its $setElementOrder list",
        ));
    }
    Ok(())
}

/// Whether two list items are the same item: equal merge key values, or equal scalars.
fn same_item(
    a: &Value,
    b: &Value,
    merge_key: Option<&str>,
    path: &str,
) -> Result<bool, PatchError> {
    let Some(key) = merge_key else {
        return Ok(json_equal(a, b));
    };
    match (a.get(key), b.get(key)) {
        (Some(x), Some(y)) => Ok(json_equal(x, y)),
        _ => Err(strategic_error(
            path,
            format!("list item has no merge key {key:?}"),
        )),
    }
}

/// The position of `item` in `list` (by merge key for objects, by value for scalars).
fn index_of(list: &[Value], item: &Value, merge_key: Option<&str>) -> Option<usize> {
    match merge_key {
        Some(key) => {
            let value = item.get(key)?;
            list.iter()
                .position(|other| other.get(key).is_some_and(|v| json_equal(v, value)))
        }
        None => list.iter().position(|other| json_equal(other, item)),
    }
}

/// Splits `merged` into the items present in `by` and the others, each in merged order.
fn partition(
    merged: Vec<Value>,
    by: &[Value],
    merge_key: Option<&str>,
) -> (Vec<Value>, Vec<Value>) {
    merged
        .into_iter()
        .partition(|item| index_of(by, item, merge_key).is_some())
}

/// Sorts the patch's items by `patch_order` and the server-only items by `server_order`, then
/// interleaves them (upstream `normalizeElementOrder` and `mergeSortedSlice`): a server-only
/// item goes before a patch item when both appear in `server_order` and it comes first there.
fn normalize_element_order(
    mut patch_items: Vec<Value>,
    mut server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: Option<&str>,
) -> Vec<Value> {
    let rank =
        |list: &[Value], item: &Value| index_of(list, item, merge_key).map_or(-1, |i| i as i64);
    patch_items.sort_by_key(|item| rank(patch_order, item));
    server_only.sort_by_key(|item| rank(server_order, item));
    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = patch_items.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                let (li, ri) = (rank(server_order, l), rank(server_order, r));
                li >= 0 && ri >= 0 && li < ri
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Schema;
    use serde_json::json;

    fn deployment_ty() -> Option<TypeRef<'static>> {
        Schema::builtin().kind_type("apps/v1", "Deployment")
    }

    fn deployment(containers: Value) -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}, "finalizers": ["a", "b"]},
            "spec": {
                "replicas": 1,
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                "template": {"spec": {"containers": containers}}
            }
        })
    }

    fn smp(original: &Value, patch: Value) -> Value {
        strategic_merge_patch(original, &patch, deployment_ty()).unwrap()
    }

    fn containers(doc: &Value) -> &Value {
        &doc["spec"]["template"]["spec"]["containers"]
    }

    fn names(list: &Value) -> Vec<&str> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect()
    }

    fn two_containers() -> Value {
        deployment(json!([
            {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]},
            {"name": "sidecar", "image": "proxy:1", "args": ["--x"]}
        ]))
    }

    #[test]
    fn maps_merge_and_null_deletes() {
        let doc = two_containers();
        let out = smp(
            &doc,
            json!({"metadata": {"labels": {"tier": "web", "app": null}}, "spec": {"replicas": 3}}),
        );
        assert_eq!(out["metadata"]["labels"], json!({"tier": "web"}));
        assert_eq!(out["spec"]["replicas"], 3);
        assert_eq!(containers(&out), containers(&doc));
    }

    #[test]
    fn merge_lists_merge_by_key_recursively() {
        let out = smp(
            &two_containers(),
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "app", "image": "app:2", "env": [{"name": "B", "value": "2"}]}
            ]}}}}),
        );
        let list = containers(&out);
        assert_eq!(names(list), ["app", "sidecar"]);
        assert_eq!(list[0]["image"], "app:2");
        assert_eq!(
            list[0]["env"],
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
        );
        assert_eq!(list[1]["args"], json!(["--x"]));
    }

    #[test]
    fn new_items_are_appended_or_put_first_as_the_api_server_does() {
        let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "redis", "image": "redis"}]}}}});
        assert_eq!(
            names(containers(&smp(&two_containers(), patch.clone()))),
            ["app", "sidecar", "redis"]
        );
        let server = strategic_merge_patch_with_order(
            &two_containers(),
            &patch,
            deployment_ty(),
            ListOrder::Server,
        )
        .unwrap();
        // kubectl patch docs: the patched-in container comes first.
        assert_eq!(names(containers(&server)), ["redis", "app", "sidecar"]);
        // Items the patch names keep the patch's order relative to the server's.
        let patch = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "sidecar", "image": "proxy:2"}, {"name": "x", "image": "x"}
        ]}}}});
        let server = strategic_merge_patch_with_order(
            &two_containers(),
            &patch,
            deployment_ty(),
            ListOrder::Server,
        )
        .unwrap();
        assert_eq!(names(containers(&server)), ["app", "sidecar", "x"]);
    }

    #[test]
    fn non_merge_lists_are_replaced() {
        let out = smp(
            &two_containers(),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "args": ["--y"]}]}}}}),
        );
        assert_eq!(containers(&out)[1]["args"], json!(["--y"]));
    }

    #[test]
    fn primitive_merge_lists_are_unions_and_delete_from_primitive_list() {
        let doc = two_containers();
        let out = smp(&doc, json!({"metadata": {"finalizers": ["c", "a"]}}));
        assert_eq!(out["metadata"]["finalizers"], json!(["a", "b", "c"]));
        let out = smp(
            &doc,
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "finalizers": ["d"]}}),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["b", "d"]));
        let server = strategic_merge_patch_with_order(
            &doc,
            &json!({"metadata": {"finalizers": ["c"]}}),
            deployment_ty(),
            ListOrder::Server,
        )
        .unwrap();
        assert_eq!(server["metadata"]["finalizers"], json!(["c", "a", "b"]));
    }

    #[test]
    fn patch_directives_on_list_items() {
        let doc = two_containers();
        let out = smp(
            &doc,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "$patch": "delete"}]}}}}),
        );
        assert_eq!(names(containers(&out)), ["sidecar"]);
        let out = smp(
            &doc,
            json!({"spec": {"template": {"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "o"}]}}}}),
        );
        assert_eq!(containers(&out), &json!([{"name": "only", "image": "o"}]));
        let merge = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "$patch": "merge"}]}}}});
        let err = strategic_merge_patch(&doc, &merge, deployment_ty()).unwrap_err();
        assert!(
            err.to_string()
                .contains("merging lists cannot yet be specified"),
            "{err}"
        );
    }

    #[test]
    fn patch_directives_on_maps() {
        let doc = two_containers();
        let out = smp(
            &doc,
            json!({"metadata": {"labels": {"$patch": "replace", "new": "1"}}}),
        );
        assert_eq!(out["metadata"]["labels"], json!({"new": "1"}));
        let out = smp(&doc, json!({"metadata": {"labels": {"$patch": "delete"}}}));
        assert_eq!(out["metadata"]["labels"], json!({}));
        let merge = json!({"metadata": {"labels": {"$patch": "merge", "x": "y"}}});
        assert!(
            strategic_merge_patch(&doc, &merge, deployment_ty()).is_err(),
            "upstream refuses merge"
        );
        let out = smp(
            &doc,
            json!({"metadata": {"annotations": {"$patch": "delete"}}}),
        );
        assert_eq!(out["metadata"]["annotations"], json!({}));
    }

    #[test]
    fn retain_keys_clears_unlisted_keys() {
        let out = smp(
            &two_containers(),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        );
        assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
        let err = strategic_merge_patch(
            &two_containers(),
            &json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 2}}}}),
            deployment_ty(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "strategic merge patch at .spec.strategy: field \"rollingUpdate\" is set but not listed in $retainKeys"
        );
    }

    #[test]
    fn set_element_order_orders_the_merged_list() {
        let doc = deployment(json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]));
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "d"}],
            "containers": [{"name": "c", "image": "c2"}, {"name": "d"}]
        }}}});
        let out = smp(&doc, patch);
        assert_eq!(names(containers(&out)), ["b", "c", "a", "d"]);
        assert_eq!(containers(&out)[1]["image"], "c2");
        let patch = json!({"metadata": {"$setElementOrder/finalizers": ["b", "a"]}});
        assert_eq!(
            smp(&doc, patch)["metadata"]["finalizers"],
            json!(["b", "a"])
        );
        let bad = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "a"}],
            "containers": [{"name": "z"}]
        }}}});
        let err = strategic_merge_patch(&doc, &bad, deployment_ty()).unwrap_err();
        assert!(
            err.to_string().contains(".spec.template.spec.containers"),
            "{err}"
        );
    }

    #[test]
    fn replace_strategy_replaces_maps() {
        let ty = Schema::builtin().kind_type("policy/v1", "PodDisruptionBudget");
        let doc = json!({"spec": {"selector": {"matchLabels": {"a": "1"}}, "minAvailable": 1}});
        let patch = json!({"spec": {"selector": {"matchExpressions": []}}});
        let out = strategic_merge_patch(&doc, &patch, ty).unwrap();
        assert_eq!(
            out["spec"],
            json!({"selector": {"matchExpressions": []}, "minAvailable": 1})
        );
    }

    #[test]
    fn errors_name_the_json_path() {
        let doc = two_containers();
        let cases = [
            (
                json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
                "strategic merge patch at .spec.template.spec.containers[0]: list item has no merge key \"name\"",
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": [{"$patch": "delete"}]}}}}),
                "strategic merge patch at .spec.template.spec.containers[0]: $patch: delete needs the merge key \"name\"",
            ),
            (
                json!({"metadata": {"labels": {"$patch": "explode"}}}),
                "strategic merge patch at .metadata.labels: unknown $patch directive \"explode\"",
            ),
            (
                json!({"metadata": {"finalizers": [1]}}),
                "strategic merge patch at .metadata.finalizers: list items mix string and number values",
            ),
            (
                json!({"$retainKeys": "x"}),
                "strategic merge patch at .: $retainKeys must be a list of strings",
            ),
            (
                json!({"metadata": {"$bogus": 1}}),
                "strategic merge patch at .metadata: unknown directive \"$bogus\"",
            ),
            (
                json!({"metadata": {"$deleteFromPrimitiveList/name": ["x"]}}),
                "strategic merge patch at .metadata.name: $deleteFromPrimitiveList needs a list, found string",
            ),
        ];
        for (patch, expected) in cases {
            let err = strategic_merge_patch(&doc, &patch, deployment_ty()).unwrap_err();
            assert_eq!(err.to_string(), expected, "{patch}");
        }
        assert!(matches!(
            strategic_merge_patch(&doc, &json!([1]), deployment_ty()),
            Err(PatchError::Invalid(_))
        ));
        assert!(strategic_merge_patch(&json!([1]), &json!({}), deployment_ty()).is_err());
    }

    #[test]
    fn untyped_documents_get_json_merge_patch() {
        let doc = json!({"spec": {"items": [{"name": "a", "v": 1}], "keep": true}});
        let patch = json!({"spec": {"items": [{"name": "b"}], "keep": null}});
        let out = strategic_merge_patch(&doc, &patch, None).unwrap();
        assert_eq!(out, json!({"spec": {"items": [{"name": "b"}]}}));
    }

    #[test]
    fn new_values_are_cleaned_of_directives_and_nulls() {
        let doc = json!({"metadata": {"name": "x"}});
        let patch = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "i", "command": null}, {"name": "gone", "$patch": "delete"}
        ]}}}});
        let out = smp(&doc, patch);
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"],
            json!([{"name": "a", "image": "i"}])
        );
    }

    #[test]
    fn key_order_is_original_then_patch() {
        let out = smp(
            &two_containers(),
            json!({"zeta": 1, "metadata": {"annotations": {"a": "1"}}, "alpha": 2}),
        );
        let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["apiVersion", "kind", "metadata", "spec", "zeta", "alpha"]
        );
        let meta: Vec<&String> = out["metadata"].as_object().unwrap().keys().collect();
        assert_eq!(meta, ["name", "labels", "finalizers", "annotations"]);
    }

    /// Property: a document patched with itself is unchanged, in both list orders.
    #[test]
    fn property_patch_with_itself_is_identity() {
        let doc = two_containers();
        for order in [ListOrder::Appended, ListOrder::Server] {
            let out = strategic_merge_patch_with_order(&doc, &doc, deployment_ty(), order).unwrap();
            assert_eq!(out, doc);
        }
        let ty = Schema::builtin().kind_type("v1", "ConfigMap");
        for generated in crate::testgen::documents(200, false) {
            let doc = json!({"metadata": {"name": "x"}, "data": generated});
            assert_eq!(strategic_merge_patch(&doc, &doc, ty).unwrap(), doc);
        }
    }

    /// Property: an empty patch changes nothing.
    #[test]
    fn property_empty_patch_is_identity() {
        let ty = Schema::builtin().kind_type("v1", "ConfigMap");
        for generated in crate::testgen::documents(200, true) {
            let doc = json!({"data": generated});
            assert_eq!(strategic_merge_patch(&doc, &json!({}), ty).unwrap(), doc);
        }
    }
}
