//! Sync windows: cron schedules (standard 5 fields, or the `cron` crate's 6/7 fields with
//! seconds) opening `allow` or `deny` windows for a duration, in a time zone. Pure functions of
//! the windows and the current time.

use std::str::FromStr;

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use cron::Schedule;

use crate::app::{SyncWindow, WindowKind};
use crate::sources::spec::parse_duration;

/// A parsed sync window.
#[derive(Debug, Clone)]
pub struct Window {
    /// Allow or deny.
    pub kind: WindowKind,
    schedule: Schedule,
    duration: TimeDelta,
    tz: Tz,
}

/// Why a sync window was refused; names the entry and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("spec.syncPolicy.syncWindows[{index}].{field}: {reason}")]
pub struct WindowError {
    /// The entry's position.
    pub index: usize,
    /// `schedule`, `duration` or `timeZone`.
    pub field: &'static str,
    /// What is wrong.
    pub reason: String,
}

/// Shifts standard cron weekday numbers (0–7, Sunday = 0 or 7) to the `cron` crate's (1–7,
/// Sunday = 1); names, `*` and steps need no change.
fn shift_weekdays(field: &str) -> Result<String, String> {
    let shift = |n: &str| -> Result<u32, String> {
        let v: u32 = n.parse().map_err(|_| format!("bad weekday {n:?}"))?;
        match v {
            0..=6 => Ok(v + 1),
            7 => Ok(1),
            _ => Err(format!("weekday {v} out of range 0-7")),
        }
    };
    let mut items = Vec::new();
    for item in field.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((r, s)) => (r, Some(s)),
            None => (item, None),
        };
        let starts_numeric = range.chars().next().is_some_and(|c| c.is_ascii_digit());
        if !starts_numeric {
            items.push(item.to_string());
            continue;
        }
        let suffix = step.map(|s| format!("/{s}")).unwrap_or_default();
        match range.split_once('-') {
            Some((a, "7")) => {
                items.push(format!("{}-7{suffix}", shift(a)?));
                if step.is_none() {
                    items.push("1".to_string());
                }
            }
            Some((a, b)) => items.push(format!("{}-{}{suffix}", shift(a)?, shift(b)?)),
            None => items.push(format!("{}{suffix}", shift(range)?)),
        }
    }
    Ok(items.join(","))
}

/// Parses a cron expression: 5 standard fields (minute hour day month weekday) or 6/7 fields
/// with seconds (and year) as the `cron` crate reads them.
pub fn parse_schedule(expr: &str) -> Result<Schedule, String> {
    let fields: Vec<&str> = expr.split_whitespace().collect();
    let full = match fields.as_slice() {
        [m, h, dom, mon, dow] => format!("0 {m} {h} {dom} {mon} {}", shift_weekdays(dow)?),
        f if f.len() == 6 || f.len() == 7 => f.join(" "),
        _ => {
            return Err(format!(
                "{expr:?}: expected 5 cron fields (minute hour day month weekday)"
            ));
        }
    };
    Schedule::from_str(&full).map_err(|e| format!("{expr:?}: {e}"))
}

impl Window {
    /// Parses entry `index` of `spec.syncPolicy.syncWindows`.
    pub fn parse(index: usize, spec: &SyncWindow) -> Result<Window, WindowError> {
        let err = |field, reason| WindowError {
            index,
            field,
            reason,
        };
        let schedule = parse_schedule(&spec.schedule).map_err(|r| err("schedule", r))?;
        let duration = parse_duration(&spec.duration)
            .ok()
            .and_then(|d| TimeDelta::from_std(d).ok())
            .filter(|d| *d > TimeDelta::zero())
            .ok_or_else(|| {
                err(
                    "duration",
                    format!(
                        "{:?}: expected a positive duration like 30m or 1h30m",
                        spec.duration
                    ),
                )
            })?;
        let tz = match &spec.time_zone {
            None => Tz::UTC,
            Some(name) => name
                .parse::<Tz>()
                .map_err(|_| err("timeZone", format!("{name:?} is not an IANA time zone")))?,
        };
        Ok(Window {
            kind: spec.kind,
            schedule,
            duration,
            tz,
        })
    }

    /// The openings whose window contains `t` (started in `(t - duration, t]`).
    fn active_starts(&self, t: DateTime<Utc>) -> impl Iterator<Item = DateTime<Utc>> + '_ {
        let from = (t - self.duration).with_timezone(&self.tz);
        self.schedule
            .after(&from)
            .map(|o| o.with_timezone(&Utc))
            .take_while(move |o| *o <= t)
    }

    /// Whether the window is open at `t`.
    pub fn is_active(&self, t: DateTime<Utc>) -> bool {
        self.active_starts(t).next().is_some()
    }

    /// When the window, open at `t`, closes (the latest end of the openings covering `t`).
    fn closes_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.active_starts(t).map(|o| o + self.duration).max()
    }

    /// The next opening strictly after `t`.
    fn next_start(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.schedule
            .after(&t.with_timezone(&self.tz))
            .next()
            .map(|o| o.with_timezone(&Utc))
    }
}

/// Parses every window of a sync policy.
pub fn parse_all(specs: &[SyncWindow]) -> Result<Vec<Window>, WindowError> {
    specs
        .iter()
        .enumerate()
        .map(|(i, w)| Window::parse(i, w))
        .collect()
}

/// Whether automated syncs may run at `t`: no deny window open, and (when there are allow
/// windows) some allow window open.
pub fn is_open(windows: &[Window], t: DateTime<Utc>) -> bool {
    let denied = windows
        .iter()
        .any(|w| w.kind == WindowKind::Deny && w.is_active(t));
    let mut allows = windows
        .iter()
        .filter(|w| w.kind == WindowKind::Allow)
        .peekable();
    let allowed = allows.peek().is_none() || allows.any(|w| w.is_active(t));
    !denied && allowed
}

/// The first time at or after `now` when syncs may run, `None` if no opening is found within
/// a bounded search (e.g. a deny window that never closes).
pub fn next_opening(windows: &[Window], now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let mut t = now;
    for _ in 0..256 {
        if is_open(windows, t) {
            return Some(t);
        }
        let deny_end = windows
            .iter()
            .filter(|w| w.kind == WindowKind::Deny)
            .filter_map(|w| w.closes_after(t))
            .max();
        t = match deny_end {
            Some(end) => end,
            None => windows
                .iter()
                .filter(|w| w.kind == WindowKind::Allow)
                .filter_map(|w| w.next_start(t))
                .min()?,
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(kind: WindowKind, schedule: &str, duration: &str, tz: Option<&str>) -> Window {
        Window::parse(
            0,
            &SyncWindow {
                kind,
                schedule: schedule.into(),
                duration: duration.into(),
                time_zone: tz.map(Into::into),
            },
        )
        .unwrap()
    }

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn deny_window_blocks_and_names_the_next_opening() {
        // Every day 22:00 for 8 hours.
        let ws = vec![w(WindowKind::Deny, "0 22 * * *", "8h", None)];
        assert!(is_open(&ws, at("2026-11-30T21:59:00Z")));
        assert!(!is_open(&ws, at("2026-11-30T23:00:00Z")));
        assert!(!is_open(&ws, at("2026-12-01T05:59:59Z")));
        assert_eq!(
            next_opening(&ws, at("2026-11-30T23:00:00Z")),
            Some(at("2026-12-01T06:00:00Z"))
        );
    }

    #[test]
    fn allow_windows_only_open_inside() {
        // Weekdays (Mon-Fri in standard numbering) 09:00-17:00 Paris time.
        let ws = vec![w(
            WindowKind::Allow,
            "0 9 * * 1-5",
            "8h",
            Some("Europe/Paris"),
        )];
        // 2026-11-30 is a Monday; Paris is UTC+1 in winter.
        assert!(is_open(&ws, at("2026-11-30T08:30:00Z")));
        assert!(!is_open(&ws, at("2026-11-30T07:30:00Z")));
        // Saturday 2026-12-05: closed; next opening Monday 08:00 UTC.
        assert!(!is_open(&ws, at("2026-12-05T10:00:00Z")));
        assert_eq!(
            next_opening(&ws, at("2026-12-05T10:00:00Z")),
            Some(at("2026-12-07T08:00:00Z"))
        );
    }

    #[test]
    fn deny_overrides_allow() {
        let ws = vec![
            w(WindowKind::Allow, "0 0 * * *", "24h", None),
            w(WindowKind::Deny, "0 12 * * *", "1h", None),
        ];
        assert!(is_open(&ws, at("2026-11-30T11:00:00Z")));
        assert!(!is_open(&ws, at("2026-11-30T12:30:00Z")));
        assert_eq!(
            next_opening(&ws, at("2026-11-30T12:30:00Z")),
            Some(at("2026-11-30T13:00:00Z"))
        );
    }

    #[test]
    fn weekday_numbers_follow_standard_cron() {
        assert_eq!(shift_weekdays("0").unwrap(), "1");
        assert_eq!(shift_weekdays("1-5").unwrap(), "2-6");
        assert_eq!(shift_weekdays("5-7").unwrap(), "6-7,1");
        assert_eq!(shift_weekdays("*/2").unwrap(), "*/2");
        assert_eq!(shift_weekdays("MON-FRI").unwrap(), "MON-FRI");
        // Sunday only, written as 0 and as 7.
        for s in ["0 10 * * 0", "0 10 * * 7"] {
            let ws = vec![w(WindowKind::Allow, s, "1h", None)];
            assert!(is_open(&ws, at("2026-12-06T10:30:00Z")), "{s}");
            assert!(!is_open(&ws, at("2026-12-07T10:30:00Z")), "{s}");
        }
    }

    #[test]
    fn errors_name_the_field() {
        let bad = |schedule: &str, duration: &str, tz: Option<&str>| {
            Window::parse(
                2,
                &SyncWindow {
                    kind: WindowKind::Deny,
                    schedule: schedule.into(),
                    duration: duration.into(),
                    time_zone: tz.map(Into::into),
                },
            )
            .unwrap_err()
            .to_string()
        };
        assert!(bad("* * *", "1h", None).starts_with("spec.syncPolicy.syncWindows[2].schedule:"));
        assert!(bad("0 22 * * 9", "1h", None).contains(".schedule:"));
        assert!(bad("0 22 * * *", "soon", None).contains(".duration:"));
        assert!(bad("0 22 * * *", "0s", None).contains(".duration:"));
        assert!(bad("0 22 * * *", "1h", Some("Mars/Base")).contains(".timeZone:"));
    }
}
