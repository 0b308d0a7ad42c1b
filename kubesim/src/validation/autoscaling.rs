//! The autoscaling group's rules (`pkg/apis/autoscaling/validation`): a
//! HorizontalPodAutoscaler names its scale target and keeps `1 <= minReplicas <=
//! maxReplicas`.

use serde_json::Value;

use super::field::{Errors, invalid, invalid_str, required};
use super::{int, s};
use crate::names;

/// A HorizontalPodAutoscaler (v1 and v2 share these fields).
pub fn hpa(obj: &Value, errs: &mut Errors) {
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    let min = int(spec, "minReplicas");
    let max = int(spec, "maxReplicas").unwrap_or(0);
    if let Some(m) = min.filter(|m| *m < 1) {
        errs.push(invalid(
            "spec.minReplicas",
            m.to_string(),
            "must be greater than or equal to 1",
        ));
    }
    if max < 1 {
        errs.push(invalid(
            "spec.maxReplicas",
            max.to_string(),
            "must be greater than 0",
        ));
    }
    if min.is_some_and(|m| max < m) {
        errs.push(invalid(
            "spec.maxReplicas",
            max.to_string(),
            "must be greater than or equal to `minReplicas`",
        ));
    }
    let target = spec.get("scaleTargetRef").unwrap_or(&empty);
    for field in ["kind", "name"] {
        let p = format!("spec.scaleTargetRef.{field}");
        let value = s(target, field);
        if value.is_empty() {
            errs.push(required(&p, ""));
        } else {
            for m in names::path_segment_name(value) {
                errs.push(invalid_str(&p, value, &m));
            }
        }
    }
}
