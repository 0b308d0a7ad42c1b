//! `x-kubernetes-validations`: CEL rules evaluated with `self` (the value at the rule's
//! node) and, for transition rules, `oldSelf` (the stored value at the same place, so such
//! rules run on updates only), through the `cel` interpreter. Failures are worded as
//! kube-apiserver words them: the rule's `message` (or `messageExpression`), else
//! `failed rule: RULE`; evaluation errors as `ERROR evaluating rule: RULE`; the `reason`
//! and `fieldPath` of the rule are honoured.

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::super::field::{self, Errors, Reason, quote};
use super::{child, node};

/// Deepest nesting evaluated.
const MAX_DEPTH: usize = 64;

fn env() -> Arc<::cel::Env> {
    static ENV: OnceLock<Arc<::cel::Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(::cel::Env::stdlib())).clone()
}

/// Why a rule does not compile (None when it does), for CRD validation.
pub fn compile_error(rule: &str) -> Option<String> {
    env().compile(rule).err().map(|e| e.to_string())
}

/// Evaluates every rule under `schema` against `new` (`old`: the stored object).
pub fn validate(schema: &Value, new: &Value, old: Option<&Value>, path: &str, errs: &mut Errors) {
    walk(schema, new, old, path, 0, errs);
}

fn walk(
    schema: &Value,
    new: &Value,
    old: Option<&Value>,
    path: &str,
    depth: usize,
    errs: &mut Errors,
) {
    if depth > MAX_DEPTH || new.is_null() {
        return;
    }
    if let Some(rules) = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
    {
        for rule in rules {
            evaluate(schema, rule, new, old, path, errs);
        }
    }
    match new {
        Value::Object(fields) => {
            let props = node::properties(schema);
            let values = node::additional(schema);
            for (key, v) in fields {
                if path.is_empty() && key == "metadata" {
                    continue;
                }
                if let Some(sub) = props.and_then(|p| p.get(key)).or(values) {
                    let before = old.and_then(|o| o.get(key));
                    walk(sub, v, before, &child(path, key), depth + 1, errs);
                }
            }
        }
        Value::Array(items) => {
            let Some(item) = node::items(schema) else {
                return;
            };
            let keys: Vec<&str> = schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let list_type = schema.get("x-kubernetes-list-type").and_then(Value::as_str);
            for (i, v) in items.iter().enumerate() {
                let before = match list_type {
                    Some("map") => old.and_then(Value::as_array).and_then(|olds| {
                        olds.iter()
                            .find(|o| keys.iter().all(|k| o.get(*k) == v.get(*k)))
                    }),
                    Some("set") => old
                        .and_then(Value::as_array)
                        .and_then(|olds| olds.iter().find(|o| *o == v)),
                    _ => None,
                };
                walk(item, v, before, &format!("{path}[{i}]"), depth + 1, errs);
            }
        }
        _ => {}
    }
}

fn text<'a>(rule: &'a Value, key: &str) -> &'a str {
    rule.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Runs `source` with `self` (and `oldSelf`) bound.
fn run(source: &str, new: &Value, old: Option<&Value>) -> Result<::cel::Value, String> {
    let env = env();
    let program = env.compile(source).map_err(|e| e.to_string())?;
    let mut context = ::cel::Context::with_env(env);
    let bind = |v: &Value| ::cel::to_value(v).map_err(|e| e.to_string());
    context
        .add_variable("self", bind(new)?)
        .map_err(|e| e.to_string())?;
    if let Some(old) = old {
        context
            .add_variable("oldSelf", bind(old)?)
            .map_err(|e| e.to_string())?;
    }
    program.execute(&context).map_err(|e| match e {
        ::cel::ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        other => other.to_string(),
    })
}

fn evaluate(
    schema: &Value,
    rule: &Value,
    new: &Value,
    old: Option<&Value>,
    path: &str,
    errs: &mut Errors,
) {
    let source = text(rule, "rule");
    if source.trim().is_empty() {
        return;
    }
    let transition = env()
        .compile(source)
        .is_ok_and(|p| p.references().has_variable("oldSelf"));
    if transition && old.is_none() {
        return;
    }
    let message = text(rule, "message").trim();
    let shown_rule = if message.is_empty() {
        source.trim()
    } else {
        message
    };
    let ty = quote(node::type_of(schema));
    match run(source, new, old) {
        Ok(::cel::Value::Bool(true)) => {}
        Ok(::cel::Value::Bool(false)) => {
            let expression = text(rule, "messageExpression");
            let detail = match run(expression, new, old) {
                Ok(::cel::Value::String(s)) if !expression.is_empty() && !s.trim().is_empty() => {
                    s.trim().to_string()
                }
                _ if !message.is_empty() => message.to_string(),
                _ => format!("failed rule: {shown_rule}"),
            };
            let at = match text(rule, "fieldPath").trim_start_matches('.') {
                "" => path.to_string(),
                sub => child(path, sub),
            };
            errs.push(match text(rule, "reason") {
                "FieldValueForbidden" => field::forbidden(&at, &detail),
                "FieldValueRequired" => field::required(&at, &detail),
                "FieldValueDuplicate" => field::with_reason(Reason::Duplicate, &at, ty, ""),
                _ => field::invalid(&at, ty, &detail),
            });
        }
        Ok(other) => errs.push(field::invalid(
            path,
            ty,
            &format!("rule did not evaluate to a bool ({other:?}): {shown_rule}"),
        )),
        Err(e) => errs.push(field::invalid(
            path,
            ty,
            &format!("{e} evaluating rule: {shown_rule}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.minReplicas <= self.maxReplicas", "message": "minReplicas must not exceed maxReplicas"},
                {"rule": "self.name == oldSelf.name", "message": "name is immutable"},
                {"rule": "!has(self.forbidden)", "reason": "FieldValueForbidden", "fieldPath": ".forbidden", "message": "must not be set"}],
            "properties": {
                "minReplicas": {"type": "integer"}, "maxReplicas": {"type": "integer"},
                "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self.startsWith('app-')"}]},
                "forbidden": {"type": "string"}}}}})
    }

    fn messages(new: &Value, old: Option<&Value>) -> Vec<String> {
        let mut errs = Errors::new();
        validate(&schema(), new, old, "", &mut errs);
        errs.iter().map(|e| e.message()).collect()
    }

    #[test]
    fn rules_fail_with_their_messages_and_transition_rules_wait_for_updates() {
        let ok = json!({"spec": {"minReplicas": 1, "maxReplicas": 3, "name": "app-a"}});
        assert!(messages(&ok, None).is_empty());
        let bad =
            json!({"spec": {"minReplicas": 5, "maxReplicas": 3, "name": "web", "forbidden": "x"}});
        assert_eq!(
            messages(&bad, None),
            vec![
                "spec: Invalid value: \"object\": minReplicas must not exceed maxReplicas",
                "spec.forbidden: Forbidden: must not be set",
                "spec.name: Invalid value: \"string\": failed rule: self.startsWith('app-')",
            ]
        );
        let renamed = json!({"spec": {"minReplicas": 1, "maxReplicas": 3, "name": "app-b"}});
        assert_eq!(
            messages(&renamed, Some(&ok)),
            vec!["spec: Invalid value: \"object\": name is immutable"]
        );
        let missing = json!({"spec": {"maxReplicas": 3, "name": "app-a"}});
        assert_eq!(
            messages(&missing, None),
            vec![
                "spec: Invalid value: \"object\": no such key: minReplicas evaluating rule: minReplicas must not exceed maxReplicas"
            ]
        );
        assert!(compile_error("self.x ==").is_some());
        assert!(compile_error("self.x == 1").is_none());
    }
}
