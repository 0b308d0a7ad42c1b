//! Schema-guided walks over JSON objects for server-side apply: the field set of a value, the
//! structured merge of an applied configuration into a live object, the comparison of two
//! objects, and the removal of fields.

use serde_json::{Map, Value};

use super::fieldset::{FieldSet, PathElement};
use crate::schema::{ListType, NodeKind, TypeRef};
use crate::value::{json_equal, remove_key};

/// List-map key fields the API server defaults before keys are compared, so that an applied
/// item that omits them matches the stored (defaulted) item: `protocol` of container, service
/// and endpoint ports defaults to `TCP` (the OpenAPI `default`, not in the data file).
const DEFAULTED_KEYS: &[(&str, &str)] = &[("protocol", "TCP")];

/// How a value is merged and tracked.
#[derive(Clone, Copy)]
enum Shape<'a> {
    /// An object tracked field by field (struct, granular map, or untyped object).
    Object(Option<TypeRef<'a>>),
    /// A `set` list: items tracked by value.
    SetList,
    /// A `map` list: items tracked by their list-map keys.
    MapList(TypeRef<'a>),
    /// A leaf: scalar, atomic list or map, or untyped list.
    Leaf,
}

/// How `value` of type `ty` is tracked.
fn shape<'a>(ty: Option<TypeRef<'a>>, value: &Value) -> Shape<'a> {
    let kind = ty.map_or(NodeKind::Untyped, |ty| ty.kind());
    match (kind, value, ty) {
        (NodeKind::Struct | NodeKind::Map, Value::Object(_), Some(ty)) if !ty.is_atomic_map() => {
            Shape::Object(Some(ty))
        }
        (NodeKind::Untyped, Value::Object(_), _) => Shape::Object(None),
        (NodeKind::List, Value::Array(_), Some(ty)) => match ty.list_type() {
            ListType::Atomic => Shape::Leaf,
            ListType::Set => Shape::SetList,
            ListType::Map => Shape::MapList(ty),
        },
        _ => Shape::Leaf,
    }
}

/// The type of field `key` of an object of type `ty`.
fn member<'a>(ty: Option<TypeRef<'a>>, key: &str) -> Option<TypeRef<'a>> {
    ty?.member(key)
}

/// The path element of item `index` of a list: its value for sets, its keys for map lists.
fn item_element(list: Option<TypeRef>, item: &Value, index: usize) -> PathElement {
    let Some(list) = list else {
        return PathElement::Index(index);
    };
    if list.list_type() == ListType::Set {
        return PathElement::Value(item.clone());
    }
    let mut fields: Vec<(String, Value)> = list
        .list_map_keys()
        .iter()
        .filter_map(|key| {
            let value = item.get(key).cloned().or_else(|| {
                DEFAULTED_KEYS
                    .iter()
                    .find(|(name, _)| name == key)
                    .map(|(_, v)| Value::String((*v).to_owned()))
            })?;
            Some((key.clone(), value))
        })
        .collect();
    if fields.is_empty() {
        return PathElement::Index(index);
    }
    fields.sort_by(|a, b| a.0.cmp(&b.0));
    PathElement::Key(fields)
}

/// The path elements of every item of `items`.
fn elements(list: Option<TypeRef>, items: &[Value]) -> Vec<PathElement> {
    items
        .iter()
        .enumerate()
        .map(|(index, item)| item_element(list, item, index))
        .collect()
}

/// The set of fields `value` sets (structured-merge-diff `ToFieldSet`): leaves for scalars,
/// atomic values, `null`s and empty objects; list-map items are members themselves too.
pub(crate) fn field_set(value: &Value, ty: Option<TypeRef>) -> FieldSet {
    let mut set = FieldSet::new();
    if let Shape::Object(ty) = shape(ty, value) {
        visit_object(value, ty, &mut Vec::new(), &mut set);
    }
    set
}

/// Adds the fields of an object value below `path`.
fn visit_object(
    value: &Value,
    ty: Option<TypeRef>,
    path: &mut Vec<PathElement>,
    set: &mut FieldSet,
) {
    let Value::Object(map) = value else {
        return;
    };
    for (key, child) in map {
        path.push(PathElement::Field(key.clone()));
        visit_value(child, member(ty, key), path, set);
        path.pop();
    }
}

/// Adds the fields of `value` at `path`.
fn visit_value(
    value: &Value,
    ty: Option<TypeRef>,
    path: &mut Vec<PathElement>,
    set: &mut FieldSet,
) {
    match (shape(ty, value), value) {
        (Shape::Object(ty), Value::Object(map)) if !map.is_empty() => {
            visit_object(value, ty, path, set)
        }
        (Shape::SetList, Value::Array(items)) => {
            for item in items {
                path.push(PathElement::Value(item.clone()));
                set.insert(path);
                path.pop();
            }
        }
        (Shape::MapList(list), Value::Array(items)) => {
            let item_ty = list.items();
            for (element, item) in elements(Some(list), items).into_iter().zip(items) {
                path.push(element);
                set.insert(path);
                visit_object(item, item_ty, path, set);
                path.pop();
            }
        }
        _ => set.insert(path),
    }
}

/// Merges the applied configuration `rhs` into the live value `lhs` (structured-merge-diff
/// `Merge`): objects merge field by field, set and map lists merge item by item, everything
/// else is taken from `rhs`. `None` means the field is dropped (`rhs` is `null`).
pub(crate) fn merge(lhs: Option<&Value>, rhs: &Value, ty: Option<TypeRef>) -> Option<Value> {
    if rhs.is_null() {
        return None;
    }
    match shape(ty, rhs) {
        Shape::Object(ty) => {
            let mut out = match lhs {
                Some(Value::Object(map)) => map.clone(),
                _ => Map::new(),
            };
            if let Value::Object(rhs) = rhs {
                for (key, value) in rhs {
                    match merge(out.get(key), value, member(ty, key)) {
                        Some(merged) => {
                            out.insert(key.clone(), merged);
                        }
                        None => {
                            remove_key(&mut out, key);
                        }
                    }
                }
            }
            Some(Value::Object(out))
        }
        Shape::SetList => Some(Value::Array(merge_list(lhs, rhs, None, |_, r| r.clone()))),
        Shape::MapList(list) => {
            let item_ty = list.items();
            let merged = merge_list(lhs, rhs, Some(list), |l, r| {
                merge(l, r, item_ty).unwrap_or_else(|| r.clone())
            });
            Some(Value::Array(merged))
        }
        Shape::Leaf => Some(rhs.clone()),
    }
}

/// Merges two lists item by item (structured-merge-diff's list merge): items only the live list
/// has stay where they are, shared items follow the applied order, new items are placed where
/// the applied list has them. `list` is the map-list type (sets when `None`).
fn merge_list(
    lhs: Option<&Value>,
    rhs: &Value,
    list: Option<TypeRef>,
    merge_item: impl Fn(Option<&Value>, &Value) -> Value,
) -> Vec<Value> {
    let lhs: &[Value] = lhs.and_then(Value::as_array).map_or(&[], Vec::as_slice);
    let rhs: &[Value] = rhs.as_array().map_or(&[], Vec::as_slice);
    let element = |items: &[Value]| match list {
        Some(list) => elements(Some(list), items),
        None => items
            .iter()
            .map(|item| PathElement::Value(item.clone()))
            .collect(),
    };
    let (lpe, rpe) = (element(lhs), element(rhs));
    let in_rhs = |pe: &PathElement| rpe.contains(pe);
    let lhs_item = |pe: &PathElement| lpe.iter().position(|l| l == pe).map(|i| &lhs[i]);
    let mut shared = rpe.iter().filter(|pe| lpe.contains(pe));
    let mut next_shared = shared.next();
    let mut merged_rhs: Vec<&PathElement> = Vec::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let (mut li, mut ri) = (0, 0);
    while li < lhs.len() || ri < rhs.len() {
        if li < lhs.len() && ri < rhs.len() {
            if lpe[li] == rpe[ri] {
                merged_rhs.push(&rpe[ri]);
                out.push(merge_item(lhs_item(&rpe[ri]), &rhs[ri]));
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            if in_rhs(&lpe[li]) && next_shared.is_some_and(|next| *next != lpe[li]) {
                li += 1;
                continue;
            }
        }
        if li < lhs.len() {
            if !in_rhs(&lpe[li]) {
                out.push(lhs[li].clone());
                li += 1;
                continue;
            }
            if merged_rhs.contains(&&lpe[li]) || ri >= rhs.len() {
                li += 1;
                continue;
            }
        }
        if ri < rhs.len() {
            let pe = &rpe[ri];
            merged_rhs.push(pe);
            out.push(merge_item(lhs_item(pe), &rhs[ri]));
            ri += 1;
            if next_shared == Some(pe) {
                next_shared = shared.next();
            }
        }
    }
    out
}

/// The fields added, modified and removed between two values (structured-merge-diff `Compare`).
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    /// Fields present only in the new value (and new map-list items and granular maps).
    pub(crate) added: FieldSet,
    /// Leaves whose value changed.
    pub(crate) modified: FieldSet,
    /// Fields present only in the old value.
    pub(crate) removed: FieldSet,
}

/// Compares `lhs` (old) and `rhs` (new) objects of type `ty`.
pub(crate) fn compare(lhs: &Value, rhs: &Value, ty: Option<TypeRef>) -> Comparison {
    let mut out = Comparison::default();
    compare_at(Some(lhs), Some(rhs), ty, &mut Vec::new(), &mut out);
    out
}

/// Compares two optional values at `path`.
fn compare_at(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    ty: Option<TypeRef>,
    path: &mut Vec<PathElement>,
    out: &mut Comparison,
) {
    let shape = match (lhs, rhs) {
        (None, None) => return,
        (Some(value), None) | (None, Some(value)) => shape(ty, value),
        (Some(l), Some(r)) => match (shape(ty, l), shape(ty, r)) {
            (Shape::Object(ty), Shape::Object(_)) => Shape::Object(ty),
            (Shape::SetList, Shape::SetList) => Shape::SetList,
            (Shape::MapList(list), Shape::MapList(_)) => Shape::MapList(list),
            _ => Shape::Leaf,
        },
    };
    match shape {
        Shape::Object(object_ty) => {
            let (l, r) = (
                lhs.and_then(Value::as_object),
                rhs.and_then(Value::as_object),
            );
            let empty = |m: Option<&Map<String, Value>>| m.is_none_or(Map::is_empty);
            if empty(l) && empty(r) {
                return compare_leaf(lhs, rhs, path, out);
            }
            let granular = object_ty.is_none_or(|t| t.kind() != NodeKind::Struct);
            if !path.is_empty() && granular {
                match (l, r) {
                    (None, Some(_)) => out.added.insert(path),
                    (Some(_), None) => out.removed.insert(path),
                    _ => {}
                }
            }
            let keys = l.into_iter().chain(r).flat_map(Map::keys);
            let mut seen: Vec<&String> = Vec::new();
            for key in keys {
                if seen.contains(&key) {
                    continue;
                }
                seen.push(key);
                path.push(PathElement::Field(key.clone()));
                let (lv, rv) = (l.and_then(|m| m.get(key)), r.and_then(|m| m.get(key)));
                compare_at(lv, rv, member(object_ty, key), path, out);
                path.pop();
            }
        }
        Shape::SetList | Shape::MapList(_) => {
            let list = match shape {
                Shape::MapList(list) => Some(list),
                _ => ty,
            };
            let item_ty = match shape {
                Shape::MapList(list) => list.items(),
                _ => None,
            };
            let (l, r) = (list_items(lhs), list_items(rhs));
            let (lpe, rpe) = (elements(list, l), elements(list, r));
            let mut seen: Vec<&PathElement> = Vec::new();
            for pe in lpe.iter().chain(&rpe) {
                if seen.contains(&pe) {
                    continue;
                }
                seen.push(pe);
                let find = |pes: &[PathElement], items: &'_ [Value]| {
                    pes.iter().position(|p| p == pe).map(|i| items[i].clone())
                };
                let (li, ri) = (find(&lpe, l), find(&rpe, r));
                path.push(pe.clone());
                if matches!(shape, Shape::MapList(_)) {
                    match (&li, &ri) {
                        (None, Some(_)) => out.added.insert(path),
                        (Some(_), None) => out.removed.insert(path),
                        _ => {}
                    }
                    compare_at(li.as_ref(), ri.as_ref(), item_ty, path, out);
                } else {
                    compare_leaf(li.as_ref(), ri.as_ref(), path, out);
                }
                path.pop();
            }
        }
        Shape::Leaf => compare_leaf(lhs, rhs, path, out),
    }
}

/// The items of an optional list value (none when absent or not a list).
fn list_items(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// Compares two leaves at `path`.
fn compare_leaf(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    path: &[PathElement],
    out: &mut Comparison,
) {
    if path.is_empty() {
        return;
    }
    match (lhs, rhs) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        (Some(l), Some(r)) if !json_equal(l, r) => out.modified.insert(path),
        _ => {}
    }
}

/// Removes the value at `path` from `value` (a field, or a list item by key or value).
pub(crate) fn remove_path(value: &mut Value, path: &[PathElement], ty: Option<TypeRef>) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    match (first, value) {
        (PathElement::Field(key), Value::Object(map)) => {
            if rest.is_empty() {
                remove_key(map, key);
            } else if let Some(child) = map.get_mut(key) {
                remove_path(child, rest, member(ty, key));
            }
        }
        (_, Value::Array(items)) => {
            let list = ty.filter(|t| t.kind() == NodeKind::List);
            let Some(index) = elements(list, items).iter().position(|pe| pe == first) else {
                return;
            };
            if rest.is_empty() {
                items.remove(index);
            } else {
                remove_path(&mut items[index], rest, list.and_then(|l| l.items()));
            }
        }
        _ => {}
    }
}
