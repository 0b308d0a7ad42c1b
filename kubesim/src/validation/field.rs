//! Field errors as apimachinery's `field` package words them (`validation/field/errors.go`):
//! a reason (`FieldValueRequired`, `FieldValueInvalid`, ...), the field path, the bad value
//! printed the way Go prints it, and a detail; a list of them becomes one 422 Invalid Status.

use serde_json::{Value, json};

use crate::status::ApiError;

/// Why a field is wrong: the Status cause `reason` and the words kube-apiserver puts before
/// the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// `FieldValueRequired`: a required value is missing.
    Required,
    /// `FieldValueInvalid`: a malformed or out-of-range value.
    Invalid,
    /// `FieldValueDuplicate`: a value that must be unique is not.
    Duplicate,
    /// `FieldValueNotSupported`: a value outside an enumeration.
    NotSupported,
    /// `FieldValueForbidden`: a value not allowed here.
    Forbidden,
    /// `FieldValueTooLong`: a value over its size limit.
    TooLong,
    /// `FieldValueNotFound`: a reference to something that does not exist.
    NotFound,
    /// `FieldValueTooMany`: a list with more items than allowed.
    TooMany,
    /// `FieldValueTypeInvalid`: a value of the wrong type (custom resource schemas).
    TypeInvalid,
}

impl Reason {
    fn cause(self) -> &'static str {
        match self {
            Reason::Required => "FieldValueRequired",
            Reason::Invalid => "FieldValueInvalid",
            Reason::Duplicate => "FieldValueDuplicate",
            Reason::NotSupported => "FieldValueNotSupported",
            Reason::Forbidden => "FieldValueForbidden",
            Reason::TooLong => "FieldValueTooLong",
            Reason::NotFound => "FieldValueNotFound",
            Reason::TooMany => "FieldValueTooMany",
            Reason::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    fn words(self) -> &'static str {
        match self {
            Reason::Required => "Required value",
            Reason::Invalid => "Invalid value",
            Reason::Duplicate => "Duplicate value",
            Reason::NotSupported => "Unsupported value",
            Reason::Forbidden => "Forbidden",
            Reason::TooLong => "Too long",
            Reason::NotFound => "Not found",
            Reason::TooMany => "Too many",
            Reason::TypeInvalid => "Invalid value",
        }
    }

    /// Whether the message shows the bad value (Required, Forbidden and TooLong do not).
    fn shows_value(self) -> bool {
        !matches!(self, Reason::Required | Reason::Forbidden | Reason::TooLong)
    }
}

/// One field error: reason, path (`spec.template.spec.containers[0].image`), the bad value
/// already printed as Go's `%v`/`%q`/`%#v` would print it, and the detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Why the field is wrong.
    pub reason: Reason,
    /// The field path.
    pub field: String,
    /// The printed bad value.
    pub value: String,
    /// What is wrong, in kube-apiserver's words.
    pub detail: String,
}

impl FieldError {
    /// The cause message: `Invalid value: "x": detail` (without the field).
    pub fn body(&self) -> String {
        let mut s = self.reason.words().to_string();
        if self.reason.shows_value() {
            s.push_str(": ");
            s.push_str(&self.value);
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    /// The error as the aggregate message shows it: `field: body`.
    pub fn message(&self) -> String {
        format!("{}: {}", self.field, self.body())
    }
}

/// Field errors collected while validating one object, in the order they were found.
pub type Errors = Vec<FieldError>;

fn error(reason: Reason, field: &str, value: String, detail: &str) -> FieldError {
    FieldError {
        reason,
        field: field.to_string(),
        value,
        detail: detail.to_string(),
    }
}

/// `field.Required`.
pub fn required(field: &str, detail: &str) -> FieldError {
    error(Reason::Required, field, String::new(), detail)
}

/// `field.Invalid` with a value printed by [`go`].
pub fn invalid(field: &str, value: impl Into<String>, detail: &str) -> FieldError {
    error(Reason::Invalid, field, value.into(), detail)
}

/// `field.Invalid` of a string value (printed quoted).
pub fn invalid_str(field: &str, value: &str, detail: &str) -> FieldError {
    invalid(field, quote(value), detail)
}

/// `field.Duplicate` of a string value.
pub fn duplicate(field: &str, value: &str) -> FieldError {
    error(Reason::Duplicate, field, quote(value), "")
}

/// `field.NotSupported`: the value (a string) and the supported ones.
pub fn not_supported(field: &str, value: &str, supported: &[&str]) -> FieldError {
    let detail = if supported.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = supported.iter().map(|v| quote(v)).collect();
        format!("supported values: {}", quoted.join(", "))
    };
    error(Reason::NotSupported, field, quote(value), &detail)
}

/// `field.Forbidden`.
pub fn forbidden(field: &str, detail: &str) -> FieldError {
    error(Reason::Forbidden, field, String::new(), detail)
}

/// `field.TooLong` (the value is not shown).
pub fn too_long(field: &str, max_bytes: usize) -> FieldError {
    error(
        Reason::TooLong,
        field,
        String::new(),
        &format!("must have at most {max_bytes} bytes"),
    )
}

/// `field.TooMany`: a list of `actual` items where at most `max` are allowed.
pub fn too_many(field: &str, actual: usize, max: i64) -> FieldError {
    error(
        Reason::TooMany,
        field,
        actual.to_string(),
        &format!("must have at most {max} items"),
    )
}

/// `field.TooLongMaxLength`: a string over its `maxLength` (the value is not shown).
pub fn too_long_max_length(field: &str, max: i64) -> FieldError {
    error(
        Reason::TooLong,
        field,
        String::new(),
        &format!("may not be longer than {max}"),
    )
}

/// `field.TypeInvalid` with a value printed by the caller.
pub fn type_invalid(field: &str, value: impl Into<String>, detail: &str) -> FieldError {
    error(Reason::TypeInvalid, field, value.into(), detail)
}

/// `field.NotSupported` of any JSON value; the supported values are printed quoted, non-string
/// ones as their JSON, as the apiextensions validator lists them.
pub fn not_supported_value(field: &str, value: &Value, supported: &[Value]) -> FieldError {
    let quoted: Vec<String> = supported
        .iter()
        .map(|v| match v {
            Value::String(s) => quote(s),
            other => quote(&other.to_string()),
        })
        .collect();
    let detail = if quoted.is_empty() {
        String::new()
    } else {
        format!("supported values: {}", quoted.join(", "))
    };
    error(Reason::NotSupported, field, go_value(value), &detail)
}

/// `field.Duplicate` of any JSON value (printed by [`go_value`]).
pub fn duplicate_value(field: &str, value: &Value) -> FieldError {
    error(Reason::Duplicate, field, go_value(value), "")
}

/// An error of `reason` with a value and detail, for rules that choose their reason
/// (`x-kubernetes-validations` `reason`).
pub fn with_reason(reason: Reason, field: &str, value: String, detail: &str) -> FieldError {
    error(reason, field, value, detail)
}

/// A float as Go's `%v` prints a float64 (`1.5`, `0`, `1e+06`, `1e-05`).
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if f == 0.0 {
        return "0".into();
    }
    // Shortest round-trip digits in %g form: the exponent form when the exponent is below -4
    // or at least 6 (strconv's rule for the shortest precision).
    let exp = f.abs().log10().floor() as i32;
    if !(-4..6).contains(&exp) {
        let s = format!("{f:e}");
        let (mantissa, e) = s.split_once('e').unwrap_or((&s, "0"));
        let e: i32 = e.parse().unwrap_or(0);
        let sign = if e < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", e.abs());
    }
    let s = format!("{f}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// A JSON value as the apiextensions validator prints a bad value: strings quoted, numbers and
/// booleans as Go prints them, null as `null`, objects and lists as JSON.
pub fn go_value(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => go_float(n.as_f64().unwrap_or_default()),
        },
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

/// `field.NotFound` of a string value.
pub fn not_found(field: &str, value: &str) -> FieldError {
    error(Reason::NotFound, field, quote(value), "")
}

/// A string as Go's `%q` prints it.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON string map as Go's `%#v` prints a `map[string]string` (keys sorted; nil when
/// absent).
pub fn go_string_map(v: Option<&Value>) -> String {
    match v.and_then(Value::as_object) {
        None => "map[string]string(nil)".into(),
        Some(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", quote(k), quote(m[*k].as_str().unwrap_or_default())))
                .collect();
            format!("map[string]string{{{}}}", parts.join(", "))
        }
    }
}

/// A JSON string list as Go's `%#v` prints a `[]string`.
pub fn go_string_list(v: Option<&Value>) -> String {
    match v.and_then(Value::as_array) {
        None => "[]string(nil)".into(),
        Some(items) => {
            let parts: Vec<String> = items
                .iter()
                .map(|s| quote(s.as_str().unwrap_or_default()))
                .collect();
            format!("[]string{{{}}}", parts.join(", "))
        }
    }
}

/// A label selector as Go's `%#v` prints a `v1.LabelSelector` in immutability errors.
pub fn go_label_selector(v: Option<&Value>) -> String {
    let labels = go_string_map(v.and_then(|s| s.get("matchLabels")));
    let exprs = match v
        .and_then(|s| s.get("matchExpressions"))
        .and_then(Value::as_array)
    {
        None => "[]v1.LabelSelectorRequirement(nil)".to_string(),
        Some(items) => {
            let parts: Vec<String> = items
                .iter()
                .map(|r| {
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                        quote(r.get("key").and_then(Value::as_str).unwrap_or_default()),
                        quote(
                            r.get("operator")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                        ),
                        go_string_list(r.get("values")),
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", parts.join(", "))
        }
    };
    format!("v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{exprs}}}")
}

/// The 422 Invalid error for `errors` (None when there are none), as `errors.NewInvalid`
/// builds it: one cause per error, the message aggregating the distinct errors
/// (`[a, b]` when there are several).
pub fn into_error(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> Option<ApiError> {
    if errors.is_empty() {
        return None;
    }
    let mut seen: Vec<String> = Vec::new();
    for e in errors {
        let m = e.message();
        if !seen.contains(&m) {
            seen.push(m);
        }
    }
    let aggregate = if seen.len() == 1 {
        seen.remove(0)
    } else {
        format!("[{}]", seen.join(", "))
    };
    let causes: Vec<Value> = errors
        .iter()
        .map(|e| json!({"reason": e.reason.cause(), "message": e.body(), "field": e.field}))
        .collect();
    Some(ApiError::invalid_with_causes(
        group, kind, name, &aggregate, causes,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_worded_like_apimachinery() {
        assert_eq!(
            required("spec.selector", "").message(),
            "spec.selector: Required value"
        );
        assert_eq!(
            invalid("spec.replicas", "-1", "must be greater than or equal to 0").message(),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(
            not_supported("spec.type", "Foo", &["ClusterIP", "NodePort"]).body(),
            "Unsupported value: \"Foo\": supported values: \"ClusterIP\", \"NodePort\""
        );
        assert_eq!(
            duplicate("spec.containers[1].name", "a").body(),
            "Duplicate value: \"a\""
        );
        assert_eq!(forbidden("data", "x").body(), "Forbidden: x");
        assert_eq!(quote("a\"b\n"), "\"a\\\"b\\n\"");
    }

    #[test]
    fn go_values_print_like_percent_hash_v() {
        let sel = json!({"matchLabels": {"b": "2", "a": "1"}});
        assert_eq!(
            go_label_selector(Some(&sel)),
            "v1.LabelSelector{MatchLabels:map[string]string{\"a\":\"1\", \"b\":\"2\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"
        );
        assert_eq!(go_string_map(None), "map[string]string(nil)");
        assert_eq!(go_string_list(Some(&json!(["x"]))), "[]string{\"x\"}");
    }

    #[test]
    fn several_errors_aggregate_in_brackets_and_duplicates_once() {
        let errs = vec![
            required("a", ""),
            required("a", ""),
            invalid_str("b", "x", "bad"),
        ];
        let e = into_error("apps", "Deployment", "web", &errs).unwrap();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "Deployment.apps \"web\" is invalid: [a: Required value, b: Invalid value: \"x\": bad]"
        );
        let d = e.details.unwrap();
        assert_eq!(d["causes"].as_array().unwrap().len(), 3);
        assert_eq!(d["causes"][2]["reason"], "FieldValueInvalid");
        assert!(into_error("", "ConfigMap", "c", &[]).is_none());
    }
}
