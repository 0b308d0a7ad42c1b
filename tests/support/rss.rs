//! Resident memory of a process — this one, or a `wardn serve` child — read from `/proc`: the
//! current RSS and the peak since it was last reset, what the flood tests and `benches/abuse.rs`
//! measure. Linux only.

/// The memory figures of one process.
pub struct Rss {
    proc_dir: String,
}

impl Rss {
    /// This process.
    pub fn this() -> Rss {
        Rss {
            proc_dir: "/proc/self".to_string(),
        }
    }

    /// The process `pid` (a child of this one).
    pub fn of(pid: u32) -> Rss {
        Rss {
            proc_dir: format!("/proc/{pid}"),
        }
    }

    /// A field of `/proc/PID/status` in KiB (`VmRSS:`, `VmHWM:`); NaN if unreadable.
    fn kib(&self, field: &str) -> f64 {
        std::fs::read_to_string(format!("{}/status", self.proc_dir))
            .ok()
            .and_then(|text| {
                text.lines()
                    .find_map(|l| l.strip_prefix(field))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            })
            .unwrap_or(f64::NAN)
    }

    /// The current RSS in MiB.
    pub fn current_mib(&self) -> f64 {
        self.kib("VmRSS:") / 1024.0
    }

    /// The peak RSS (VmHWM) in MiB since the last [`Rss::reset_peak`] (or the start).
    pub fn peak_mib(&self) -> f64 {
        self.kib("VmHWM:") / 1024.0
    }

    /// Resets the peak RSS to the current RSS (writing 5 to `clear_refs`) and returns the
    /// current RSS in MiB. Panics if the kernel refuses: a growth measured from a stale peak
    /// would be wrong.
    pub fn reset_peak(&self) -> f64 {
        std::fs::write(format!("{}/clear_refs", self.proc_dir), "5")
            .unwrap_or_else(|e| panic!("cannot reset the peak RSS of {}: {e}", self.proc_dir));
        self.current_mib()
    }
}
