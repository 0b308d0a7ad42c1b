//! Field sets (structured-merge-diff `fieldpath.Set`): a trie of path elements, its FieldsV1
//! encoding as the API server writes `managedFields[].fieldsV1`, and path display.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// One step of a field path.
#[derive(Debug, Clone)]
pub enum PathElement {
    /// An object field or map key (`f:<name>`).
    Field(String),
    /// A `map` list item, identified by its list-map-key fields sorted by name (`k:{...}`).
    Key(Vec<(String, Value)>),
    /// A `set` list item, identified by its value (`v:<json>`).
    Value(Value),
    /// A list item by position (`i:<n>`), used only when parsing foreign field sets.
    Index(usize),
}

impl PathElement {
    /// The rank of each kind of element in the set order (fields first, as upstream).
    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The FieldsV1 key of this element (`f:name`, `k:{..}`, `v:..`, `i:n`).
    fn encode(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => format!("k:{}", key_json(fields)),
            PathElement::Value(value) => format!("v:{value}"),
            PathElement::Index(index) => format!("i:{index}"),
        }
    }

    /// Parses a FieldsV1 key.
    fn decode(text: &str) -> Result<PathElement, String> {
        let (prefix, rest) = text
            .split_once(':')
            .ok_or_else(|| format!("field set key {text:?} has no prefix"))?;
        match prefix {
            "f" => Ok(PathElement::Field(rest.to_owned())),
            "v" => serde_json::from_str(rest)
                .map(PathElement::Value)
                .map_err(|e| format!("field set key {text:?}: {e}")),
            "i" => rest
                .parse()
                .map(PathElement::Index)
                .map_err(|e| format!("field set key {text:?}: {e}")),
            "k" => match serde_json::from_str(rest) {
                Ok(Value::Object(map)) => {
                    let mut fields: Vec<(String, Value)> = map.into_iter().collect();
                    fields.sort_by(|a, b| a.0.cmp(&b.0));
                    Ok(PathElement::Key(fields))
                }
                Ok(_) => Err(format!("field set key {text:?}: k: needs a JSON object")),
                Err(e) => Err(format!("field set key {text:?}: {e}")),
            },
            _ => Err(format!("field set key {text:?} has an unknown prefix")),
        }
    }
}

/// The compact JSON object of a key's fields, in name order.
fn key_json(fields: &[(String, Value)]) -> String {
    let map: Map<String, Value> = fields.iter().cloned().collect();
    Value::Object(map).to_string()
}

/// Orders JSON values: by type (null, boolean, number, string, array, object), then by value.
fn compare_values(a: &Value, b: &Value) -> Ordering {
    let rank = |v: &Value| match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
    };
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Null, Value::Null) => Ordering::Equal,
        _ => rank(a)
            .cmp(&rank(b))
            .then_with(|| a.to_string().cmp(&b.to_string())),
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => {
                for ((an, av), (bn, bv)) in a.iter().zip(b) {
                    let order = an.cmp(bn).then_with(|| compare_values(av, bv));
                    if order != Ordering::Equal {
                        return order;
                    }
                }
                a.len().cmp(&b.len())
            }
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

/// Writes a path as the API server prints it in conflicts: `.spec.replicas`,
/// `.spec.containers[name="app"].image`, `.metadata.finalizers[="x"]`.
pub fn path_string(path: &[PathElement]) -> String {
    let mut out = String::new();
    for element in path {
        match element {
            PathElement::Field(name) => {
                out.push('.');
                out.push_str(name);
            }
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
                out.push_str(&format!("[{}]", parts.join(",")));
            }
            PathElement::Value(value) => out.push_str(&format!("[={value}]")),
            PathElement::Index(index) => out.push_str(&format!("[{index}]")),
        }
    }
    out
}

/// A set of field paths, stored as a trie. A node is a member when its path itself is in the
/// set; a node can be a member and have members below it (FieldsV1 writes that as `".": {}`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    member: bool,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> FieldSet {
        FieldSet::default()
    }

    /// True when no path is a member.
    pub fn is_empty(&self) -> bool {
        !self.member && self.children.values().all(FieldSet::is_empty)
    }

    /// Adds `path` (the empty path is the root, never a member).
    pub fn insert(&mut self, path: &[PathElement]) {
        let mut node = self;
        for element in path {
            node = node.children.entry(element.clone()).or_default();
        }
        if !path.is_empty() {
            node.member = true;
        }
    }

    /// True when `path` is a member.
    pub fn contains(&self, path: &[PathElement]) -> bool {
        self.node(path)
            .is_some_and(|node| node.member && !path.is_empty())
    }

    /// True when `path` or a path below it is a member.
    pub fn owns_at_or_below(&self, path: &[PathElement]) -> bool {
        self.node(path).is_some_and(|node| !node.is_empty())
    }

    /// The subtree at `path`.
    fn node(&self, path: &[PathElement]) -> Option<&FieldSet> {
        let mut node = self;
        for element in path {
            node = node.children.get(element)?;
        }
        Some(node)
    }

    /// The members of both sets.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.union_with(other);
        out
    }

    /// Adds the members of `other` to this set.
    pub fn union_with(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (element, child) in &other.children {
            self.children
                .entry(element.clone())
                .or_default()
                .union_with(child);
        }
    }

    /// The members of `self` that are not members of `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        self.filter(other, false)
    }

    /// The members of `self` that are also members of `other`.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        self.filter(other, true)
    }

    /// Keeps the members whose presence in `other` equals `keep_if_in_other`.
    fn filter(&self, other: &FieldSet, keep_if_in_other: bool) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && other.member == keep_if_in_other,
            ..FieldSet::default()
        };
        let empty = FieldSet::default();
        for (element, child) in &self.children {
            let other_child = other.children.get(element).unwrap_or(&empty);
            let filtered = child.filter(other_child, keep_if_in_other);
            if !filtered.is_empty() {
                out.children.insert(element.clone(), filtered);
            }
        }
        out
    }

    /// Every member path, in set order, parents before their children.
    pub fn paths(&self) -> Vec<Vec<PathElement>> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Vec<PathElement>>) {
        for (element, child) in &self.children {
            prefix.push(element.clone());
            if child.member {
                out.push(prefix.clone());
            }
            child.collect(prefix, out);
            prefix.pop();
        }
    }

    /// The FieldsV1 JSON of this set, as in `managedFields[].fieldsV1`.
    pub fn to_fields_v1(&self) -> Value {
        let mut map = Map::new();
        if self.member && !self.children.is_empty() {
            map.insert(".".to_owned(), Value::Object(Map::new()));
        }
        for (element, child) in &self.children {
            if child.is_empty() {
                continue;
            }
            map.insert(element.encode(), child.to_fields_v1());
        }
        Value::Object(map)
    }

    /// Parses FieldsV1 JSON.
    pub fn from_fields_v1(value: &Value) -> Result<FieldSet, String> {
        let Value::Object(map) = value else {
            return Err("fieldsV1 must be a JSON object".to_owned());
        };
        let mut set = FieldSet::default();
        for (key, child) in map {
            if key == "." {
                set.member = true;
                continue;
            }
            let element = PathElement::decode(key)?;
            let mut child_set = FieldSet::from_fields_v1(child)?;
            if child_set.children.is_empty() {
                child_set.member = true;
            }
            set.children.insert(element, child_set);
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.to_owned())
    }

    fn key(name: &str, value: Value) -> PathElement {
        PathElement::Key(vec![(name.to_owned(), value)])
    }

    #[test]
    fn fields_v1_round_trip_matches_api_server_shape() {
        let fields = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {},
                        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}
                }}}
            },
            "f:metadata2": {"f:finalizers": {"v:\"x\"": {}}, "f:list": {"i:3": {}}}
        });
        let set = FieldSet::from_fields_v1(&fields).unwrap();
        assert_eq!(set.to_fields_v1(), fields);
        let containers = [f("spec"), f("template"), f("spec"), f("containers")];
        let mut item = containers.to_vec();
        item.push(key("name", json!("app")));
        assert!(set.contains(&item));
        assert!(!set.contains(&containers));
        assert!(set.owns_at_or_below(&containers));
        item.push(f("image"));
        assert!(set.contains(&item));
        assert_eq!(
            path_string(&item),
            ".spec.template.spec.containers[name=\"app\"].image"
        );
    }

    #[test]
    fn set_algebra() {
        let mut a = FieldSet::new();
        a.insert(&[f("a"), f("x")]);
        a.insert(&[f("a"), f("y")]);
        a.insert(&[f("b")]);
        let mut b = FieldSet::new();
        b.insert(&[f("a"), f("y")]);
        b.insert(&[f("c")]);
        assert_eq!(a.intersection(&b).paths(), vec![vec![f("a"), f("y")]]);
        assert_eq!(
            a.difference(&b).paths(),
            vec![vec![f("a"), f("x")], vec![f("b")]]
        );
        assert_eq!(a.union(&b).paths().len(), 4);
        assert!(a.difference(&a).is_empty());
        assert!(FieldSet::new().is_empty());
        assert_eq!(FieldSet::new().to_fields_v1(), json!({}));
    }

    #[test]
    fn paths_print_like_the_api_server() {
        let path = [
            f("spec"),
            PathElement::Key(vec![
                ("containerPort".into(), json!(80)),
                ("protocol".into(), json!("TCP")),
            ]),
            PathElement::Value(json!("v")),
            PathElement::Index(2),
        ];
        assert_eq!(
            path_string(&path),
            ".spec[containerPort=80,protocol=\"TCP\"][=\"v\"][2]"
        );
    }

    #[test]
    fn malformed_fields_v1_is_an_error() {
        for bad in [
            json!([]),
            json!({"x:a": {}}),
            json!({"nope": {}}),
            json!({"k:[1]": {}}),
            json!({"v:{": {}}),
        ] {
            assert!(FieldSet::from_fields_v1(&bad).is_err(), "{bad}");
        }
    }
}
