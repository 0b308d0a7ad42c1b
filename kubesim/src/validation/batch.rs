//! The batch group's rules (`pkg/apis/batch/validation`): Jobs restart OnFailure or Never,
//! their counts are non-negative, their selector matches the template and their template
//! is immutable; CronJobs need a parseable schedule and a name of at most 52 characters.

use serde_json::Value;

use super::apps::nonnegative;
use super::field::{Errors, go_string_map, invalid, invalid_str, not_supported, required};
use super::{core, s};
use crate::selectors::LabelSelector;

/// A Job spec at `path` (`spec` or `spec.jobTemplate.spec`).
fn job_spec(spec: &Value, path: &str, generated_selector: bool, errs: &mut Errors) {
    for key in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
    ] {
        nonnegative(spec, key, path, errs);
    }
    let template = spec.get("template");
    if generated_selector {
        match spec.get("selector").filter(|v| !v.is_null()) {
            None => errs.push(required(&format!("{path}.selector"), "")),
            Some(sel) => {
                let labels = template.and_then(|t| t.pointer("/metadata/labels"));
                let empty = serde_json::Map::new();
                let matches = LabelSelector::from_object(sel).is_ok_and(|sel| {
                    sel.matches(labels.and_then(Value::as_object).unwrap_or(&empty))
                });
                if !matches {
                    errs.push(invalid(
                        &format!("{path}.template.metadata.labels"),
                        go_string_map(labels),
                        "`selector` does not match template `labels`",
                    ));
                }
            }
        }
    }
    core::pod_template(template, &format!("{path}.template"), errs);
    let policy = template
        .and_then(|t| t.pointer("/spec/restartPolicy"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if policy != "OnFailure" && policy != "Never" {
        errs.push(not_supported(
            &format!("{path}.template.spec.restartPolicy"),
            policy,
            &["OnFailure", "Never"],
        ));
    }
    match spec.get("completionMode").and_then(Value::as_str) {
        None | Some("NonIndexed" | "Indexed") => {}
        Some(other) => errs.push(not_supported(
            &format!("{path}.completionMode"),
            other,
            &["NonIndexed", "Indexed"],
        )),
    }
}

/// A Job (the selector is checked once the server has generated it).
pub fn job(obj: &Value, errs: &mut Errors) {
    let empty = Value::Null;
    job_spec(obj.get("spec").unwrap_or(&empty), "spec", true, errs);
}

/// A Job update: the selector and the pod template are immutable (`completions` too).
pub fn job_update(old: &Value, new: &Value, errs: &mut Errors) {
    for (key, shown) in [
        ("selector", None),
        ("template", Some("core.PodTemplateSpec{...}")),
        ("completions", None),
    ] {
        let (o, n) = (
            old.pointer(&format!("/spec/{key}")),
            new.pointer(&format!("/spec/{key}")),
        );
        if o != n {
            let value = match (shown, key) {
                (Some(s), _) => s.to_string(),
                (None, "selector") => super::field::go_label_selector(n),
                _ => n
                    .and_then(Value::as_i64)
                    .map_or("null".into(), |c| c.to_string()),
            };
            errs.push(invalid(&format!("spec.{key}"), value, "field is immutable"));
        }
    }
}

/// Checks a standard cron schedule as robfig/cron's `ParseStandard` does (five fields or
/// a `@descriptor`); the error text is the parser's.
fn schedule_error(schedule: &str) -> Option<String> {
    let schedule = schedule.trim();
    if schedule.is_empty() {
        return Some("empty spec string".into());
    }
    let schedule = match schedule
        .strip_prefix("TZ=")
        .or_else(|| schedule.strip_prefix("CRON_TZ="))
    {
        Some(rest) => rest.split_once(' ').map_or("", |(_, s)| s.trim()),
        None => schedule,
    };
    if let Some(descriptor) = schedule.strip_prefix('@') {
        let known = [
            "yearly", "annually", "monthly", "weekly", "daily", "midnight", "hourly",
        ];
        if known.contains(&descriptor) || descriptor.starts_with("every ") {
            return None;
        }
        return Some(format!("unrecognized descriptor: {schedule}"));
    }
    let fields: Vec<&str> = schedule.split_whitespace().collect();
    if fields.len() != 5 {
        return Some(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    let ranges = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)];
    for (field, (min, max)) in fields.iter().zip(ranges) {
        for part in field.split(',') {
            let range = part.split_once('/').map_or(part, |(r, _)| r);
            if range == "*" || range == "?" {
                continue;
            }
            let (lo, hi) = range.split_once('-').unwrap_or((range, range));
            let mut bounds = [0i64; 2];
            for (slot, bound) in bounds.iter_mut().zip([lo, hi]) {
                if !bound.is_empty() && bound.chars().all(|c| c.is_ascii_alphabetic()) {
                    // month and weekday names
                    *slot = if bound == lo { min } else { max };
                    continue;
                }
                match bound.parse::<i64>() {
                    Ok(n) => *slot = n,
                    Err(_) => {
                        return Some(format!(
                            "failed to parse int from {bound}: strconv.Atoi: parsing {}: invalid syntax",
                            super::field::quote(bound)
                        ));
                    }
                }
            }
            let [start, end] = bounds;
            if start < min {
                return Some(format!(
                    "beginning of range ({start}) below minimum ({min}): {part}"
                ));
            }
            if end > max {
                return Some(format!(
                    "end of range ({end}) above maximum ({max}): {part}"
                ));
            }
            if start > end {
                return Some(format!(
                    "beginning of range ({start}) beyond end of range ({end}): {part}"
                ));
            }
        }
    }
    None
}

/// A CronJob: name length, schedule, concurrency policy and the job template.
pub fn cron_job(obj: &Value, errs: &mut Errors) {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if name.len() > 52 {
        errs.push(invalid_str(
            "metadata.name",
            name,
            "must be no more than 52 characters",
        ));
    }
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    let schedule = s(spec, "schedule");
    if schedule.is_empty() {
        errs.push(required("spec.schedule", ""));
    } else if let Some(e) = schedule_error(schedule) {
        errs.push(invalid_str("spec.schedule", schedule, &e));
    }
    match s(spec, "concurrencyPolicy") {
        "Allow" | "Forbid" | "Replace" => {}
        "" => errs.push(required("spec.concurrencyPolicy", "")),
        other => errs.push(not_supported(
            "spec.concurrencyPolicy",
            other,
            &["Allow", "Forbid", "Replace"],
        )),
    }
    for key in [
        "startingDeadlineSeconds",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
    ] {
        nonnegative(spec, key, "spec", errs);
    }
    let job = spec.pointer("/jobTemplate/spec").unwrap_or(&empty);
    job_spec(job, "spec.jobTemplate.spec", false, errs);
}

#[cfg(test)]
mod tests {
    use super::schedule_error;

    #[test]
    fn schedules_parse_as_robfig_cron_does() {
        for ok in [
            "*/5 * * * *",
            "0 3 * * 1-5",
            "@hourly",
            "@every 1h",
            "0 0 1 JAN MON",
            "TZ=UTC 0 * * * *",
        ] {
            assert_eq!(schedule_error(ok), None, "{ok}");
        }
        assert_eq!(
            schedule_error("bad"),
            Some("expected exactly 5 fields, found 1: [bad]".into())
        );
        assert_eq!(
            schedule_error("70 * * * *"),
            Some("end of range (70) above maximum (59): 70".into())
        );
        assert_eq!(
            schedule_error("@often"),
            Some("unrecognized descriptor: @often".into())
        );
    }
}
