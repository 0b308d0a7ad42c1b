//! The message definitions the codec walks: Kubernetes' own `generated.proto` files for the
//! group/versions kubesim serves (vendored under `kubesim/proto/` by `kubesim/proto/update.py`,
//! at v1.32), parsed once from the proto2 subset go-to-protobuf writes (`package`, `import`,
//! `option`, flat `message`s of `optional`/`repeated` fields and `map<,>`s), joined with the
//! Go facts the .proto files do not carry (`kubesim/proto/go-fields.txt`: each field's JSON
//! name, whether it is a pointer, omitempty or inlined, and which messages are Go named
//! slices).

use std::collections::HashMap;
use std::sync::LazyLock;

/// A field's scalar or message type.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Ty {
    /// `string`.
    Str,
    /// `bytes` (base64 in JSON).
    Bytes,
    /// `bool`.
    Bool,
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `double`.
    Double,
    /// A message, by full name (no leading dot).
    Message(String),
}

/// How a field repeats.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Label {
    /// `optional`: one value.
    Single,
    /// `repeated`: a JSON array.
    Repeated,
    /// `map<string, V>`: a JSON object (the value type is the field's `ty`).
    Map,
}

/// One field of a message, with its Go facts.
#[derive(Debug, Clone)]
pub(super) struct Field {
    /// The field number.
    pub number: u32,
    /// The JSON name (the .proto name when Go gives none).
    pub json: String,
    /// The (value) type.
    pub ty: Ty,
    /// Single, repeated or map.
    pub label: Label,
    /// The Go field is a pointer: a zero value on the wire is meaningful and kept.
    pub pointer: bool,
    /// The Go JSON tag has omitempty: a zero non-pointer scalar is not in the JSON form.
    pub omitempty: bool,
    /// Go's `json:",inline"`: the message's fields sit in the parent's JSON object.
    pub inline: bool,
}

/// One message: its fields by number.
#[derive(Debug, Clone, Default)]
pub(super) struct Message {
    /// Full name, e.g. `k8s.io.api.apps.v1.Deployment`.
    pub name: String,
    /// Fields in ascending number order.
    pub fields: Vec<Field>,
    /// A Go named slice (`type ExtraValue []string`): JSON writes its `items` as an array.
    pub list: bool,
}

impl Message {
    /// The field with this number, if the message has one.
    #[cfg(test)]
    pub(super) fn field(&self, number: u64) -> Option<&Field> {
        self.fields
            .binary_search_by_key(&number, |f| u64::from(f.number))
            .ok()
            .map(|i| &self.fields[i])
    }
}

/// Every vendored message, and where each group/version's kinds live.
#[derive(Debug, Default)]
pub(super) struct Schema {
    messages: HashMap<String, Message>,
    /// ("apps", "v1") → "k8s.io.api.apps.v1": the last two parts of each package name.
    packages: HashMap<(String, String), String>,
}

/// (import path, text) of one vendored `generated.proto`.
macro_rules! vendored {
    ($path:literal) => {
        (
            $path,
            include_str!(concat!("../../proto/", $path, "/generated.proto")),
        )
    };
}

/// The vendored files, by import path.
const FILES: &[(&str, &str)] = &[
    vendored!("k8s.io/api/core/v1"),
    vendored!("k8s.io/api/admissionregistration/v1"),
    vendored!("k8s.io/api/apps/v1"),
    vendored!("k8s.io/api/authentication/v1"),
    vendored!("k8s.io/api/authorization/v1"),
    vendored!("k8s.io/api/autoscaling/v1"),
    vendored!("k8s.io/api/autoscaling/v2"),
    vendored!("k8s.io/api/batch/v1"),
    vendored!("k8s.io/api/certificates/v1"),
    vendored!("k8s.io/api/coordination/v1"),
    vendored!("k8s.io/api/discovery/v1"),
    vendored!("k8s.io/api/events/v1"),
    vendored!("k8s.io/api/flowcontrol/v1"),
    vendored!("k8s.io/api/networking/v1"),
    vendored!("k8s.io/api/node/v1"),
    vendored!("k8s.io/api/policy/v1"),
    vendored!("k8s.io/api/rbac/v1"),
    vendored!("k8s.io/api/scheduling/v1"),
    vendored!("k8s.io/api/storage/v1"),
    vendored!("k8s.io/apimachinery/pkg/apis/meta/v1"),
    vendored!("k8s.io/apimachinery/pkg/api/resource"),
    vendored!("k8s.io/apimachinery/pkg/util/intstr"),
    vendored!("k8s.io/apimachinery/pkg/runtime"),
    vendored!("k8s.io/apimachinery/pkg/runtime/schema"),
    vendored!("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"),
    vendored!("k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"),
];

const GO_FIELDS: &str = include_str!("../../proto/go-fields.txt");

/// The schema, parsed on first use.
pub(super) fn schema() -> &'static Schema {
    static SCHEMA: LazyLock<Schema> = LazyLock::new(|| {
        // The vendored files are checked by the tests below; a parse failure here would be a
        // build-time mistake, so it leaves the schema without the offending file's messages.
        let mut schema = Schema::default();
        for (path, text) in FILES {
            if let Err(e) = schema.add_file(text) {
                tracing::error!("kubesim: vendored {path}/generated.proto: {e}");
            }
        }
        schema.add_go_facts(GO_FIELDS);
        schema
    });
    &SCHEMA
}

impl Schema {
    /// A message by full name.
    pub(super) fn message(&self, name: &str) -> Option<&Message> {
        self.messages.get(name)
    }

    /// The message of a kind served at `apiVersion` (`apps/v1`, `v1`, `rbac.authorization.k8s.io/v1`):
    /// the package is the one whose name ends in the group's first label (`core` for the
    /// core group) and the version. `Status` is meta/v1's wherever it is sent.
    pub(super) fn kind(&self, api_version: &str, kind: &str) -> Option<&Message> {
        if kind == "Status" {
            return self.message("k8s.io.apimachinery.pkg.apis.meta.v1.Status");
        }
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let label = match group.split('.').next() {
            Some("") | None => "core",
            Some(label) => label,
        };
        let package = self
            .packages
            .get(&(label.to_string(), version.to_string()))?;
        self.message(&format!("{package}.{kind}"))
    }

    fn add_file(&mut self, text: &str) -> Result<(), String> {
        let text = strip_comments(text);
        let mut package = String::new();
        let mut current: Option<Message> = None;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            let at = |e: String| format!("line {}: {e}", n + 1);
            if line.is_empty() {
                continue;
            }
            if let Some(message) = current.as_mut() {
                if line == "}" {
                    let mut done = current.take().unwrap_or_default();
                    done.fields.sort_by_key(|f| f.number);
                    self.messages.insert(done.name.clone(), done);
                } else {
                    let field = parse_field(line, &package).map_err(at)?;
                    message.fields.push(field);
                }
            } else if let Some(rest) = line.strip_prefix("package ") {
                package = rest.trim_end_matches(';').trim().to_string();
                let parts: Vec<&str> = package.rsplitn(3, '.').collect();
                if let [version, label, _] = parts[..] {
                    self.packages
                        .insert((label.to_string(), version.to_string()), package.clone());
                }
            } else if let Some(rest) = line.strip_prefix("message ") {
                let name = rest.trim_end_matches('{').trim();
                if name.contains(|c: char| !c.is_ascii_alphanumeric() && c != '_') {
                    return Err(at(format!("unexpected message name {name:?}")));
                }
                current = Some(Message {
                    name: format!("{package}.{name}"),
                    ..Message::default()
                });
            } else if ["syntax ", "import ", "option "]
                .iter()
                .any(|p| line.starts_with(p))
            {
            } else {
                return Err(at(format!("unexpected {line:?}")));
            }
        }
        match current {
            Some(m) => Err(format!("message {} is not closed", m.name)),
            None => Ok(()),
        }
    }

    fn add_go_facts(&mut self, text: &str) {
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let parts: Vec<&str> = line.split_whitespace().collect();
            match parts[..] {
                ["list", message] => {
                    if let Some(m) = self.messages.get_mut(message) {
                        m.list = true;
                    }
                }
                ["field", message, number, json, flags] => {
                    let Some(m) = self.messages.get_mut(message) else {
                        continue;
                    };
                    let Some(f) = m.fields.iter_mut().find(|f| number.parse() == Ok(f.number))
                    else {
                        continue;
                    };
                    if json != "-" {
                        f.json = json.to_string();
                    }
                    f.pointer = flags.contains('p');
                    f.omitempty = flags.contains('o');
                    f.inline = flags.contains('i');
                }
                _ => {}
            }
        }
    }
}

/// `optional T name = N;`, `repeated T name = N;` or `map<string, V> name = N;`.
fn parse_field(line: &str, package: &str) -> Result<Field, String> {
    let line = line
        .strip_suffix(';')
        .ok_or_else(|| format!("field without ';': {line:?}"))?;
    let (decl, number) = line
        .rsplit_once('=')
        .ok_or_else(|| format!("field without a number: {line:?}"))?;
    let number: u32 = number
        .trim()
        .parse()
        .map_err(|e| format!("field number in {line:?}: {e}"))?;
    let decl = decl.trim();
    let (label, ty, name) = if let Some(rest) = decl.strip_prefix("map<") {
        let (types, name) = rest
            .split_once('>')
            .ok_or_else(|| format!("unclosed map in {line:?}"))?;
        let (key, value) = types
            .split_once(',')
            .ok_or_else(|| format!("map without a value type in {line:?}"))?;
        if key.trim() != "string" {
            return Err(format!("map key {key:?} is not a string in {line:?}"));
        }
        (Label::Map, value.trim(), name.trim())
    } else {
        let mut words = decl.split_whitespace();
        let label = match words.next() {
            Some("optional" | "required") => Label::Single,
            Some("repeated") => Label::Repeated,
            other => return Err(format!("unexpected label {other:?} in {line:?}")),
        };
        let ty = words.next().ok_or_else(|| format!("no type in {line:?}"))?;
        let name = words.next().ok_or_else(|| format!("no name in {line:?}"))?;
        (label, ty, name)
    };
    let ty = match ty {
        "string" => Ty::Str,
        "bytes" => Ty::Bytes,
        "bool" => Ty::Bool,
        "int32" => Ty::Int32,
        "int64" => Ty::Int64,
        "double" => Ty::Double,
        absolute if absolute.starts_with('.') => Ty::Message(absolute[1..].to_string()),
        relative => Ty::Message(format!("{package}.{relative}")),
    };
    Ok(Field {
        number,
        json: name.to_string(),
        ty,
        label,
        pointer: false,
        omitempty: false,
        inline: false,
    })
}

/// The text without `//` and `/* */` comments, line numbers kept (the vendored files have
/// no comment markers inside strings).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_block = false;
    for line in text.lines() {
        let mut rest = line;
        loop {
            if in_block {
                match rest.find("*/") {
                    Some(i) => {
                        in_block = false;
                        rest = &rest[i + 2..];
                    }
                    None => break,
                }
            }
            match (rest.find("//"), rest.find("/*")) {
                (Some(l), b) if b.is_none_or(|b| l < b) => {
                    out.push_str(&rest[..l]);
                    break;
                }
                (_, Some(b)) => {
                    out.push_str(&rest[..b]);
                    rest = &rest[b + 2..];
                    in_block = true;
                }
                _ => {
                    out.push_str(rest);
                    break;
                }
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_vendored_file_parses_and_every_message_reference_resolves() {
        let mut schema = Schema::default();
        for (path, text) in FILES {
            schema
                .add_file(text)
                .unwrap_or_else(|e| panic!("{path}: {e}"));
        }
        assert!(schema.messages.len() > 500, "{}", schema.messages.len());
        for m in schema.messages.values() {
            for f in &m.fields {
                if let Ty::Message(name) = &f.ty {
                    assert_ne!(
                        name, "k8s.io.apimachinery.pkg.apis.meta.v1.Duration",
                        "{}.{} is a Duration: give Duration its JSON form in special.rs",
                        m.name, f.json
                    );
                    assert!(
                        schema.messages.contains_key(name),
                        "{}.{}: {name}",
                        m.name,
                        f.json
                    );
                }
            }
        }
    }

    #[test]
    fn go_facts_cover_the_fields_and_name_the_json_forms() {
        let schema = schema();
        let pod_spec = schema.message("k8s.io.api.core.v1.PodSpec").unwrap();
        let field = |n| pod_spec.field(n).unwrap();
        assert_eq!(field(2).json, "containers");
        assert!(field(4).pointer, "terminationGracePeriodSeconds is *int64");
        assert!(field(3).omitempty && !field(3).pointer, "restartPolicy");
        let volume = schema.message("k8s.io.api.core.v1.Volume").unwrap();
        assert!(volume.field(2).unwrap().inline, "VolumeSource is inlined");
        let props = schema
            .message("k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps")
            .unwrap();
        let names: Vec<&str> = props.fields.iter().map(|f| f.json.as_str()).collect();
        assert!(names.contains(&"$ref") && names.contains(&"x-kubernetes-list-type"));
        assert!(
            schema
                .message("k8s.io.api.authentication.v1.ExtraValue")
                .unwrap()
                .list
        );
        // Every field of a message that is not one of the specially encoded ones has a fact.
        let facts: std::collections::HashSet<(&str, &str)> = GO_FIELDS
            .lines()
            .filter_map(|l| {
                let p: Vec<&str> = l.split_whitespace().collect();
                (p.first() == Some(&"field")).then(|| (p[1], p[2]))
            })
            .collect();
        for m in schema.messages.values() {
            if m.list || super::super::special::is_special(&m.name) || m.name.ends_with(".List") {
                continue;
            }
            for f in &m.fields {
                let number = f.number.to_string();
                assert!(
                    facts.contains(&(m.name.as_str(), number.as_str())),
                    "no Go fact for {}.{}",
                    m.name,
                    f.json
                );
            }
        }
    }

    #[test]
    fn kinds_are_found_by_api_version() {
        let schema = schema();
        for (api_version, kind, message) in [
            ("v1", "Pod", "k8s.io.api.core.v1.Pod"),
            ("apps/v1", "StatefulSet", "k8s.io.api.apps.v1.StatefulSet"),
            (
                "rbac.authorization.k8s.io/v1",
                "Role",
                "k8s.io.api.rbac.v1.Role",
            ),
            (
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
            ),
            (
                "v1",
                "Status",
                "k8s.io.apimachinery.pkg.apis.meta.v1.Status",
            ),
        ] {
            assert_eq!(schema.kind(api_version, kind).unwrap().name, message);
        }
        assert!(schema.kind("example.com/v1", "Widget").is_none());
        assert!(schema.kind("apps/v1beta1", "Deployment").is_none());
    }

    #[test]
    fn malformed_proto_text_is_refused_with_its_line() {
        let mut schema = Schema::default();
        let err = schema
            .add_file("package a.b.v1;\nmessage X {\n  optional string name;\n}\n")
            .unwrap_err();
        assert!(err.starts_with("line 3:"), "{err}");
        assert!(schema.add_file("message Y {\n").is_err());
        assert!(
            schema
                .add_file("message Z {\n  map<int32, string> m = 1;\n}\n")
                .is_err()
        );
    }
}
