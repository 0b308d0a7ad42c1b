//! Sync windows: cron schedules opening `allow` or `deny` windows for a duration, in a time
//! zone. Pure functions of the windows and the current time.
//!
//! Schedules are read by [`croner`] in standard cron numbering: 5 fields (minute hour
//! day-of-month month day-of-week), 6 fields (a leading seconds field) or 7 fields (seconds
//! first, year last). Day of week is 0-7 with 0 and 7 both Sunday, 1 Monday, in every form;
//! names (`MON`, `jan`) are accepted. A schedule that restricts both day of month and day of
//! week opens only on days matching both. Time zones come from the tz database compiled into
//! wardn (jiff's bundled copy), so a zone name means the same on every host.

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::tz::{TimeZone, TimeZoneDatabase};
use jiff::{SignedDuration, Timestamp};

use crate::app::{SyncWindow, WindowKind};
use crate::sources::spec::parse_duration;

/// A parsed sync window.
#[derive(Debug, Clone)]
pub struct Window {
    /// Allow or deny.
    pub kind: WindowKind,
    schedule: Cron,
    duration: SignedDuration,
    tz: TimeZone,
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

/// The longest schedule accepted, in bytes; real ones are a few dozen.
const MAX_SCHEDULE_LEN: usize = 1024;

/// Parses a cron expression: 5 standard fields (minute hour day month weekday), or 6 with
/// seconds first, or 7 with seconds first and year last. Weekdays are numbered as in standard
/// cron (0 or 7 = Sunday, 1 = Monday) in every form.
pub fn parse_schedule(expr: &str) -> Result<Cron, String> {
    if expr.len() > MAX_SCHEDULE_LEN {
        return Err(format!(
            "{} bytes: longer than the {MAX_SCHEDULE_LEN} accepted",
            expr.len()
        ));
    }
    let fields = expr.split_whitespace().count();
    if !(5..=7).contains(&fields) {
        return Err(format!(
            "{expr:?}: expected 5 cron fields (minute hour day month weekday), or 6/7 with \
             seconds first (and year last)"
        ));
    }
    CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Optional)
        // Both day fields restricted: the day must match both (as wardn always read them).
        .dom_and_dow(true)
        .build()
        .parse(expr)
        .map_err(|e| format!("{expr:?}: {e}"))
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
            .and_then(|d| SignedDuration::try_from(d).ok())
            .filter(|d| d.is_positive())
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
            None => TimeZone::UTC,
            Some(name) => TimeZoneDatabase::bundled()
                .get(name)
                .map_err(|_| err("timeZone", format!("{name:?} is not an IANA time zone")))?,
        };
        Ok(Window {
            kind: spec.kind,
            schedule,
            duration,
            tz,
        })
    }

    /// The latest opening at or before `t` whose window still contains `t` (started in
    /// `(t - duration, t]`); it is also the one that closes last.
    fn latest_active_start(&self, t: Timestamp) -> Option<Timestamp> {
        let start = self
            .schedule
            .find_previous_occurrence(&t.to_zoned(self.tz.clone()), true)
            .ok()?
            .timestamp();
        let covers = match t.checked_sub(self.duration) {
            Ok(from) => start > from,
            // The window reaches back past the start of time: every opening covers `t`.
            Err(_) => true,
        };
        covers.then_some(start)
    }

    /// Whether the window is open at `t`.
    pub fn is_active(&self, t: Timestamp) -> bool {
        self.latest_active_start(t).is_some()
    }

    /// When the window, open at `t`, closes (the latest end of the openings covering `t`).
    fn closes_after(&self, t: Timestamp) -> Option<Timestamp> {
        self.latest_active_start(t)
            .map(|o| o.checked_add(self.duration).unwrap_or(Timestamp::MAX))
    }

    /// The next opening strictly after `t`.
    fn next_start(&self, t: Timestamp) -> Option<Timestamp> {
        self.schedule
            .find_next_occurrence(&t.to_zoned(self.tz.clone()), false)
            .ok()
            .map(|o| o.timestamp())
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
pub fn is_open(windows: &[Window], t: Timestamp) -> bool {
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
pub fn next_opening(windows: &[Window], now: Timestamp) -> Option<Timestamp> {
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

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
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
        // Sunday only, written as 0, as 7 and by name. 2026-12-06 is a Sunday.
        for s in ["0 10 * * 0", "0 10 * * 7", "0 10 * * SUN", "0 10 * * sun"] {
            let ws = vec![w(WindowKind::Allow, s, "1h", None)];
            assert!(is_open(&ws, at("2026-12-06T10:30:00Z")), "{s}");
            assert!(!is_open(&ws, at("2026-12-07T10:30:00Z")), "{s}");
        }
        // Friday to Sunday, the range ending in 7.
        let ws = vec![w(WindowKind::Allow, "0 10 * * 5-7", "1h", None)];
        for (day, open) in [
            ("2026-12-03", false),
            ("2026-12-04", true),
            ("2026-12-05", true),
            ("2026-12-06", true),
            ("2026-12-07", false),
        ] {
            let t = at(&format!("{day}T10:30:00Z"));
            assert_eq!(is_open(&ws, t), open, "5-7 on {day}");
        }
        // Names, and croner's nth/last weekday: 2026-11-27 is the last Friday of November.
        for s in ["0 10 * * 5#L", "0 10 * nov FRI#L", "0 10 * * mon-fri"] {
            let ws = vec![w(WindowKind::Allow, s, "1h", None)];
            assert!(is_open(&ws, at("2026-11-27T10:30:00Z")), "{s}");
            assert!(!is_open(&ws, at("2026-11-28T10:30:00Z")), "{s}");
        }
    }

    #[test]
    fn a_weekday_means_the_same_day_with_and_without_seconds() {
        // Day-of-week numbers 0..=7 in the 5-field form and in the 6/7-field forms with
        // seconds (and year) must open on the same day: 0 and 7 Sunday, 1 Monday, 6 Saturday.
        // 2026-11-29 is a Sunday.
        let sunday = at("2026-11-29T00:00:00Z");
        for dow in 0..=7i64 {
            let day = sunday + SignedDuration::from_hours(24 * (dow % 7));
            let forms = [
                format!("0 10 * * {dow}"),
                format!("0 0 10 * * {dow}"),
                format!("0 0 10 * * {dow} *"),
            ];
            for form in &forms {
                let ws = vec![w(WindowKind::Allow, form, "1h", None)];
                let inside = day + SignedDuration::from_mins(10 * 60 + 30);
                assert!(is_open(&ws, inside), "{form:?} at {inside}");
                let next_day = inside + SignedDuration::from_hours(24);
                assert!(!is_open(&ws, next_day), "{form:?} at {next_day}");
                assert_eq!(
                    next_opening(&ws, next_day),
                    Some(
                        inside + SignedDuration::from_hours(24 * 7) - SignedDuration::from_mins(30)
                    ),
                    "{form:?}"
                );
            }
        }
    }

    #[test]
    fn seconds_field_is_honoured() {
        let ws = vec![w(WindowKind::Deny, "30 0 12 * * *", "10s", None)];
        assert!(is_open(&ws, at("2026-11-30T12:00:29Z")));
        assert!(!is_open(&ws, at("2026-11-30T12:00:30Z")));
        assert!(!is_open(&ws, at("2026-11-30T12:00:39.999Z")));
        assert!(is_open(&ws, at("2026-11-30T12:00:40Z")));
        assert_eq!(
            next_opening(&ws, at("2026-11-30T12:00:35.5Z")),
            Some(at("2026-11-30T12:00:40Z"))
        );
    }

    #[test]
    fn named_zone_follows_daylight_saving_time() {
        // 22:00 Berlin time for 8 hours: 21:00 UTC in winter (CET, +1), 20:00 UTC in summer
        // (CEST, +2). Europe/Berlin switched to CEST on 2026-03-29.
        let ws = vec![w(
            WindowKind::Deny,
            "0 22 * * *",
            "8h",
            Some("Europe/Berlin"),
        )];
        assert!(is_open(&ws, at("2026-03-27T20:30:00Z")));
        assert!(!is_open(&ws, at("2026-03-27T21:30:00Z")));
        assert!(!is_open(&ws, at("2026-03-29T20:30:00Z")));
        assert!(is_open(&ws, at("2026-03-29T19:30:00Z")));
        // Opened at 21:00 UTC on the 28th (CET) and closes 8 hours later.
        assert_eq!(
            next_opening(&ws, at("2026-03-28T23:00:00Z")),
            Some(at("2026-03-29T05:00:00Z"))
        );
        // Opened at 20:00 UTC on the 29th (CEST).
        assert_eq!(
            next_opening(&ws, at("2026-03-29T20:30:00Z")),
            Some(at("2026-03-30T04:00:00Z"))
        );
        // Zone names come from the bundled database, not the host's.
        assert!(TimeZoneDatabase::bundled().get("Europe/Berlin").is_ok());
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

    #[test]
    fn hostile_schedules_are_refused_by_field_without_panicking() {
        let parse = |schedule: &str| {
            Window::parse(
                3,
                &SyncWindow {
                    kind: WindowKind::Deny,
                    schedule: schedule.into(),
                    duration: "1h".into(),
                    time_zone: None,
                },
            )
        };
        let huge_number = format!("0 {} * * *", "9".repeat(10_000));
        let long_list = format!("0 {} * * *", vec!["1"; 100_000].join(","));
        let many_fields = "* ".repeat(100_000);
        let hostile = [
            "",
            "   ",
            "garbage",
            "a b c d e",
            "* * * * * * * *",
            "60 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "* * 32 * *",
            "* * * 13 *",
            "* * * 0 *",
            "* * * * 8",
            "* * * * -1",
            "0 22 * * 9",
            "*/0 * * * *",
            "*/-1 * * * *",
            "5-1 * * * *",
            "1-99999999999999999999 * * * *",
            "* * * * 1#9",
            "* * * * #",
            "* * L-5 * *",
            "60 0 0 * * *",
            "0 0 0 * * * 99999",
            "@daily",
            "\0 \u{202e} * * *",
            "０ ０ * * *",
            &huge_number,
            &long_list,
            &many_fields,
        ];
        for s in hostile {
            let shown: String = s.chars().take(40).collect();
            let e = parse(s).expect_err(&shown).to_string();
            assert!(
                e.starts_with("spec.syncPolicy.syncWindows[3].schedule: "),
                "{shown:?}: {e}"
            );
            assert!(e.len() < 2_000, "{shown:?}: error of {} bytes", e.len());
        }
        // Accepted but never (or hardly ever) matching schedules end their search.
        for s in ["0 0 30 2 *", "0 0 31 * 1", "0 0 0 29 2 * 2400"] {
            let ws = vec![w(WindowKind::Allow, s, "1h", None)];
            let t = at("2026-11-30T12:00:00Z");
            assert!(!is_open(&ws, t), "{s}");
            let _ = next_opening(&ws, t);
        }
        // Durations at the edge of the representable range.
        let ws = vec![w(WindowKind::Deny, "* * * * *", "2562047788015215h", None)];
        let t = at("2026-11-30T12:00:00Z");
        assert!(!is_open(&ws, t));
        assert_eq!(next_opening(&ws, t), None);
        assert!(is_open(&ws, Timestamp::MIN) || !is_open(&ws, Timestamp::MIN));
        assert!(next_opening(&ws, Timestamp::MAX).is_none());
    }
}
