//! Resource quantities (`apimachinery/pkg/api/resource/quantity.go`): parsing and the
//! canonical form a real API server stores and serves (`1000m` → `1`, `1024Mi` → `1Gi`,
//! `0.5` → `500m`, `1.5Gi` → `1536Mi`), and comparison.

use std::cmp::Ordering;

/// The message kube-apiserver's decoder gives for a value that is not a quantity.
pub const FORMAT_ERROR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// How a quantity was written, which decides how its canonical form is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `Ki`, `Mi`, ... suffixes.
    BinarySi,
    /// `m`, `k`, `M`, ... suffixes (and none).
    DecimalSi,
    /// `e3`, `E-2`.
    DecimalExponent,
}

/// A parsed quantity: `mantissa × 10^scale`, rounded up to nano precision as the real
/// parser rounds. Quantities compare by value (`1Gi` == `1024Mi`).
#[derive(Debug, Clone, Copy)]
pub struct Quantity {
    mantissa: i128,
    scale: i32,
    format: Format,
}

/// Largest number of digits kept; longer numbers are refused rather than overflowing.
const MAX_DIGITS: usize = 30;

impl Quantity {
    /// Parses a quantity as `ParseQuantity` does (None when it is not one).
    pub fn parse(text: &str) -> Option<Quantity> {
        let (negative, rest) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(num_end);
        let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && frac.is_empty()) || frac.contains('.') {
            return None;
        }
        let (base, exponent, format) = match suffix {
            "" => (10, 0, Format::DecimalSi),
            "n" => (10, -9, Format::DecimalSi),
            "u" => (10, -6, Format::DecimalSi),
            "m" => (10, -3, Format::DecimalSi),
            "k" => (10, 3, Format::DecimalSi),
            "M" => (10, 6, Format::DecimalSi),
            "G" => (10, 9, Format::DecimalSi),
            "T" => (10, 12, Format::DecimalSi),
            "P" => (10, 15, Format::DecimalSi),
            "E" => (10, 18, Format::DecimalSi),
            "Ki" => (2, 10, Format::BinarySi),
            "Mi" => (2, 20, Format::BinarySi),
            "Gi" => (2, 30, Format::BinarySi),
            "Ti" => (2, 40, Format::BinarySi),
            "Pi" => (2, 50, Format::BinarySi),
            "Ei" => (2, 60, Format::BinarySi),
            s if s.starts_with(['e', 'E']) => {
                let e: i32 = s[1..].parse().ok()?;
                if !(-100..=100).contains(&e) {
                    return None;
                }
                (10, e, Format::DecimalExponent)
            }
            _ => return None,
        };
        let digits = format!("{whole}{frac}");
        let digits = digits.trim_start_matches('0');
        if digits.len() > MAX_DIGITS {
            return None;
        }
        let mut mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        };
        let mut scale = -(frac.len() as i32);
        if base == 2 {
            mantissa = mantissa.checked_mul(1i128.checked_shl(exponent as u32)?)?;
        } else {
            scale += exponent;
        }
        if negative {
            mantissa = -mantissa;
        }
        let mut q = Quantity {
            mantissa,
            scale,
            format,
        };
        q.round_up_to_nano();
        q.normalise_scale();
        Some(q)
    }

    /// Zero.
    pub fn zero() -> Quantity {
        Quantity {
            mantissa: 0,
            scale: 0,
            format: Format::DecimalSi,
        }
    }

    fn round_up_to_nano(&mut self) {
        while self.scale < -9 {
            let (d, r) = (self.mantissa / 10, self.mantissa % 10);
            self.mantissa = d + r.signum();
            self.scale += 1;
        }
    }

    /// Moves trailing zeros of the mantissa into the scale (and caps the scale so the
    /// value stays representable).
    fn normalise_scale(&mut self) {
        if self.mantissa == 0 {
            self.scale = 0;
            return;
        }
        while self.mantissa % 10 == 0 {
            self.mantissa /= 10;
            self.scale += 1;
        }
    }

    /// The value times 10^9 (nano units), saturating.
    fn nanos(&self) -> i128 {
        let shift = self.scale + 9;
        let mut v = self.mantissa;
        for _ in 0..shift.max(0) {
            v = v.saturating_mul(10);
        }
        v
    }

    /// The canonical form (`CanonicalizeBytes`): the input's format, except that binary
    /// quantities below 1024 or with a fractional part are written in decimal.
    pub fn canonical(&self) -> String {
        let mut format = self.format;
        if format == Format::BinarySi {
            let small = self.nanos().abs() < 1024 * 1_000_000_000;
            if small || self.scale < 0 {
                format = Format::DecimalSi;
            }
        }
        match format {
            Format::BinarySi => {
                let mut value = self.mantissa;
                for _ in 0..self.scale {
                    value = value.saturating_mul(10);
                }
                let mut exp = 0;
                while value != 0 && value % 1024 == 0 && exp < 6 {
                    value /= 1024;
                    exp += 1;
                }
                let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][exp];
                format!("{value}{suffix}")
            }
            _ => {
                let (mut amount, mut exp) = (self.mantissa, self.scale);
                match exp.rem_euclid(3) {
                    1 => {
                        amount *= 10;
                        exp -= 1;
                    }
                    2 => {
                        amount *= 100;
                        exp -= 2;
                    }
                    _ => {}
                }
                if amount == 0 {
                    exp = 0;
                }
                let suffix = if format == Format::DecimalExponent {
                    if exp == 0 {
                        String::new()
                    } else {
                        format!("e{exp}")
                    }
                } else {
                    match exp {
                        -9 => "n".into(),
                        -6 => "u".into(),
                        -3 => "m".into(),
                        0 => String::new(),
                        3 => "k".into(),
                        6 => "M".into(),
                        9 => "G".into(),
                        12 => "T".into(),
                        15 => "P".into(),
                        18 => "E".into(),
                        e => format!("e{e}"),
                    }
                };
                format!("{amount}{suffix}")
            }
        }
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos() == other.nanos()
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos().cmp(&other.nanos())
    }
}

/// The canonical form of a quantity given as a JSON string or number (None when it is
/// not a quantity).
pub fn canonical_json(v: &serde_json::Value) -> Option<String> {
    let text = match v {
        serde_json::Value::String(s) => s.trim().to_string(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => return None,
    };
    Quantity::parse(&text).map(|q| q.canonical())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        Quantity::parse(s)
            .map(|q| q.canonical())
            .unwrap_or_else(|| "ERR".into())
    }

    #[test]
    fn canonical_forms_match_apimachinery() {
        // quantity.go's documented examples and the quantity_test.go table.
        for (input, want) in [
            ("1000m", "1"),
            ("1024Mi", "1Gi"),
            ("0.5", "500m"),
            ("1.5", "1500m"),
            ("1.5Gi", "1536Mi"),
            ("1e3", "1e3"),
            ("1E6", "1e6"),
            ("100m", "100m"),
            ("0", "0"),
            ("0Mi", "0"),
            ("1Ki", "1Ki"),
            ("1000", "1k"),
            ("1500000", "1500k"),
            ("512Mi", "512Mi"),
            ("1000Mi", "1000Mi"),
            ("0.1Ki", "102400m"),
            ("1024", "1024"),
            ("2048Ki", "2Mi"),
            ("12e6", "12e6"),
            ("-1", "-1"),
            ("+5", "5"),
            ("1.0000000001", "1000000001n"),
            ("0.0000000001", "1n"),
            ("1k", "1k"),
            ("1000k", "1M"),
            ("10G", "10G"),
            ("500Gi", "500Gi"),
            ("5e-3", "5e-3"),
        ] {
            assert_eq!(canon(input), want, "{input}");
        }
    }

    #[test]
    fn bad_quantities_are_refused() {
        for bad in [
            "",
            "abc",
            "1x",
            "1.2.3",
            ".",
            "1Kb",
            "--1",
            "1e",
            "1Mi2",
            &"9".repeat(40),
        ] {
            assert!(Quantity::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn comparison_is_by_value() {
        let q = |s| Quantity::parse(s).unwrap();
        assert!(q("1") == q("1000m").max(q("1")));
        assert!(q("500m") < q("1"));
        assert!(q("1Gi") > q("1G"));
        assert_eq!(q("1Gi").cmp(&q("1024Mi")), Ordering::Equal);
    }
}
