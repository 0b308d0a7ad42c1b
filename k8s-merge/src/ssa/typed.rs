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
    collect(value, ty, false)
}

/// The fields `value` sets to `null` (an applied `null` removes the field it owns).
pub(crate) fn null_fields(value: &Value, ty: Option<TypeRef>) -> FieldSet {
    collect(value, ty, true)
}

/// Walks an object value collecting its field set, or only its `null` leaves.
fn collect(value: &Value, ty: Option<TypeRef>, nulls_only: bool) -> FieldSet {
    let mut collector = Collector {
        set: FieldSet::new(),
        path: Vec::new(),
        nulls_only,
    };
    if let Shape::Object(ty) = shape(ty, value) {
        collector.visit_object(value, ty);
    }
    collector.set
}

/// The state of a field set walk.
struct Collector {
    set: FieldSet,
    path: Vec<PathElement>,
    nulls_only: bool,
}

impl Collector {
    /// Adds the current path unless only `null` leaves are collected.
    fn insert_member(&mut self) {
        if !self.nulls_only {
            self.set.insert(&self.path);
        }
    }

    /// Adds the fields of an object value below the current path. Keys that are not declared
    /// fields (map entries, untyped objects) are members themselves too, as
    /// structured-merge-diff records them.
    fn visit_object(&mut self, value: &Value, ty: Option<TypeRef>) {
        let Value::Object(map) = value else {
            return;
        };
        let is_struct = ty.is_some_and(|t| t.kind() == NodeKind::Struct);
        for (key, child) in map {
            self.path.push(PathElement::Field(key.clone()));
            self.visit_value(child, member(ty, key));
            let declared = is_struct && ty.is_some_and(|t| t.field(key).is_some());
            if !declared {
                self.insert_member();
            }
            self.path.pop();
        }
    }

    /// Adds the fields of `value` at the current path.
    fn visit_value(&mut self, value: &Value, ty: Option<TypeRef>) {
        match (shape(ty, value), value) {
            (Shape::Object(ty), Value::Object(map)) if !map.is_empty() => {
                self.visit_object(value, ty)
            }
            (Shape::SetList, Value::Array(items)) => {
                for item in items {
                    self.path.push(PathElement::Value(item.clone()));
                    self.insert_member();
                    self.path.pop();
                }
            }
            (Shape::MapList(list), Value::Array(items)) => {
                let item_ty = list.items();
                for (element, item) in elements(Some(list), items).into_iter().zip(items) {
                    self.path.push(element);
                    self.insert_member();
                    self.visit_object(item, item_ty);
                    self.path.pop();
                }
            }
            _ if self.nulls_only && !value.is_null() => {}
            _ => self.set.insert(&self.path),
        }
    }
}

/// Merges the applied configuration `rhs` into the live value `lhs` (structured-merge-diff
/// `Merge`): objects merge field by field, set and map lists merge item by item, everything
/// else is taken from `rhs`. `None` means the field is dropped (`rhs` is `null`).
pub(crate) fn merge(lhs: Option<Value>, rhs: &Value, ty: Option<TypeRef>) -> Option<Value> {
    if rhs.is_null() {
        return None;
    }
    match (shape(ty, rhs), rhs) {
        (Shape::Object(ty), Value::Object(rhs)) => {
            let mut out = match lhs {
                Some(Value::Object(map)) => map,
                _ => Map::new(),
            };
            for (key, value) in rhs {
                let current = out.get_mut(key).map(Value::take);
                match merge(current, value, member(ty, key)) {
                    Some(merged) => {
                        out.insert(key.clone(), merged);
                    }
                    None => {
                        remove_key(&mut out, key);
                    }
                }
            }
            Some(Value::Object(out))
        }
        (Shape::SetList, _) => Some(Value::Array(merge_list(lhs, rhs, None, |_, r| r.clone()))),
        (Shape::MapList(list), _) => {
            let item_ty = list.items();
            let merged = merge_list(lhs, rhs, Some(list), |l, r| {
                merge(l, r, item_ty).unwrap_or_else(|| r.clone())
            });
            Some(Value::Array(merged))
        }
        _ => Some(rhs.clone()),
    }
}

/// Merges two lists item by item (structured-merge-diff's list merge): items only the live list
/// has stay where they are, shared items follow the applied order, new items are placed where
/// the applied list has them. `list` is the map-list type (sets when `None`).
fn merge_list(
    lhs: Option<Value>,
    rhs: &Value,
    list: Option<TypeRef>,
    merge_item: impl Fn(Option<Value>, &Value) -> Value,
) -> Vec<Value> {
    let lhs = match lhs {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    };
    let rhs: &[Value] = rhs.as_array().map_or(&[], Vec::as_slice);
    let element = |items: &[Value]| match list {
        Some(list) => elements(Some(list), items),
        None => items
            .iter()
            .map(|item| PathElement::Value(item.clone()))
            .collect(),
    };
    let (lpe, rpe) = (element(&lhs), element(rhs));
    let mut lhs: Vec<Option<Value>> = lhs.into_iter().map(Some).collect();
    let in_rhs = |pe: &PathElement| rpe.contains(pe);
    // Takes the first live item with this path element that is still available.
    let take_lhs = |lhs: &mut Vec<Option<Value>>, pe: &PathElement| {
        let index = lpe
            .iter()
            .zip(lhs.iter())
            .position(|(l, item)| l == pe && item.is_some())?;
        lhs[index].take()
    };
    let mut shared = rpe.iter().filter(|pe| lpe.contains(pe));
    let mut next_shared = shared.next();
    let mut merged_rhs: Vec<&PathElement> = Vec::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let (mut li, mut ri) = (0, 0);
    while li < lhs.len() || ri < rhs.len() {
        if li < lhs.len() && ri < rhs.len() {
            if lpe[li] == rpe[ri] {
                merged_rhs.push(&rpe[ri]);
                let live = take_lhs(&mut lhs, &rpe[ri]);
                out.push(merge_item(live, &rhs[ri]));
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
                out.extend(lhs[li].take());
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
            let live = take_lhs(&mut lhs, pe);
            out.push(merge_item(live, &rhs[ri]));
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

impl Comparison {
    /// True when the two values are equal.
    pub(crate) fn is_empty(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }
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
            // A new object is added itself (its `.`) unless it is a struct: the API server compares
            // against Go objects where absent structs already exist as zero values.
            let granular = object_ty.is_none_or(|t| t.kind() != NodeKind::Struct);
            if !path.is_empty() {
                match (l, r) {
                    (None, Some(_)) if granular => out.added.insert(path),
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
            if l.is_empty() && r.is_empty() {
                return compare_leaf(lhs, rhs, path, out);
            }
            let (lpe, rpe) = (elements(list, l), elements(list, r));
            let mut seen: Vec<&PathElement> = Vec::new();
            for pe in lpe.iter().chain(&rpe) {
                if seen.contains(&pe) {
                    continue;
                }
                seen.push(pe);
                let (li, ri) = (find_item(&lpe, l, pe), find_item(&rpe, r, pe));
                path.push(pe.clone());
                if matches!(shape, Shape::MapList(_)) {
                    match (li, ri) {
                        (None, Some(_)) => out.added.insert(path),
                        (Some(_), None) => out.removed.insert(path),
                        _ => {}
                    }
                    compare_at(li, ri, item_ty, path, out);
                } else {
                    compare_leaf(li, ri, path, out);
                }
                path.pop();
            }
        }
        Shape::Leaf => compare_leaf(lhs, rhs, path, out),
    }
}

/// True when `rest` names one of a map list's key fields inside an item: an item that stays
/// keeps its keys even when nobody owns them any more.
fn is_key_field(list: Option<TypeRef>, rest: &[PathElement]) -> bool {
    match (list, rest) {
        (Some(list), [PathElement::Field(name)]) => list.list_map_keys().contains(name),
        _ => false,
    }
}

/// The first item of `items` whose path element is `pe`.
fn find_item<'v>(pes: &[PathElement], items: &'v [Value], pe: &PathElement) -> Option<&'v Value> {
    pes.iter().position(|p| p == pe).and_then(|i| items.get(i))
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

/// Removes the value at `path` from `value` (a field, or a list item by key or value). Maps
/// and lists emptied by the removal are removed too, as structured-merge-diff does. Returns
/// true when `value` itself was emptied.
pub(crate) fn remove_path(value: &mut Value, path: &[PathElement], ty: Option<TypeRef>) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    match (first, value) {
        (PathElement::Field(key), Value::Object(map)) => {
            let removed = if rest.is_empty() {
                remove_key(map, key).is_some()
            } else {
                let emptied = map
                    .get_mut(key)
                    .is_some_and(|child| remove_path(child, rest, member(ty, key)));
                emptied && remove_key(map, key).is_some()
            };
            removed && map.is_empty()
        }
        (_, Value::Array(items)) => {
            let list = ty.filter(|t| t.kind() == NodeKind::List);
            let Some(index) = elements(list, items).iter().position(|pe| pe == first) else {
                return false;
            };
            // The item goes when it is the target, or when removing inside it emptied it.
            let remove_item = rest.is_empty()
                || (!is_key_field(list, rest)
                    && remove_path(&mut items[index], rest, list.and_then(|l| l.items())));
            if remove_item {
                items.remove(index);
            }
            remove_item && items.is_empty()
        }
        _ => false,
    }
}
