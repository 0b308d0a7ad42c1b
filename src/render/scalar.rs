//! go-yaml v2 scalar rules used by the emitter: which strings may be written unquoted (YAML
//! 1.1 resolution), the "natural" key order of its map sorter, number formatting, and the
//! printable/line-break character classes of its emitter.

use std::cmp::Ordering;

use serde_json::Number;

/// Whether `s`, written as a plain scalar, would read back as a string under go-yaml v2's
/// YAML 1.1 resolver (`resolve` plus `isBase60Float`). If not, the emitter must quote it.
pub fn resolves_to_string(s: &str) -> bool {
    !resolves_to_other(s) && !is_base60_float(s)
}

fn resolves_to_other(s: &str) -> bool {
    let Some(first) = s.bytes().next() else {
        return true;
    };
    let hint = match first {
        b'+' | b'-' => 'S',
        b'0'..=b'9' => 'D',
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => 'M',
        b'.' => '.',
        _ => return false,
    };
    // go-yaml's resolve table (`<<`, the merge key, is a string; it starts with no hint).
    if matches!(
        s,
        "y" | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "true"
            | "True"
            | "TRUE"
            | "on"
            | "On"
            | "ON"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "false"
            | "False"
            | "FALSE"
            | "off"
            | "Off"
            | "OFF"
            | "~"
            | "null"
            | "Null"
            | "NULL"
            | ".nan"
            | ".NaN"
            | ".NAN"
            | ".inf"
            | ".Inf"
            | ".INF"
            | "+.inf"
            | "+.Inf"
            | "+.INF"
            | "-.inf"
            | "-.Inf"
            | "-.INF"
    ) {
        return true;
    }
    match hint {
        'M' => false,
        '.' => is_dot_float(s),
        _ => {
            if hint == 'D' && is_timestamp(s) {
                return true;
            }
            let plain: String = s.chars().filter(|&c| c != '_').collect();
            is_go_int(&plain) || is_yaml_float(&plain)
        }
    }
}

/// `strconv.ParseFloat` on a string starting with `.`.
fn is_dot_float(s: &str) -> bool {
    let rest = &s[1..];
    let (mant, exp) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    if mant.is_empty() || !mant.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    match exp {
        None => true,
        Some(e) => {
            let e = e.strip_prefix(['+', '-']).unwrap_or(e);
            !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()) && s.parse::<f64>().is_ok()
        }
    }
}

/// `strconv.ParseInt(s, 0, 64)` or `strconv.ParseUint(s, 0, 64)` succeeds.
fn is_go_int(s: &str) -> bool {
    let (neg, signed, body) = match s.as_bytes().first() {
        Some(b'-') => (true, true, &s[1..]),
        Some(b'+') => (false, true, &s[1..]),
        _ => (false, false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d.to_string())
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d.to_string())
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d.to_string())
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].to_string())
    } else {
        (10, lower)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return false;
    }
    let Ok(v) = u128::from_str_radix(&digits, radix) else {
        return false;
    };
    if neg {
        v <= 1u128 << 63
    } else if signed {
        v <= i64::MAX as u128
    } else {
        v <= u64::MAX as u128
    }
}

/// go-yaml's `yamlStyleFloat` regexp plus a successful, finite `ParseFloat`.
fn is_yaml_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len() && s.parse::<f64>().is_ok_and(f64::is_finite)
}

/// go-yaml's timestamp formats: `2006-1-2`, `2006-1-2 15:4:5.9`, `2006-1-2T15:4:5.9Z07:00`.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let year: u32 = s[..4].parse().unwrap_or(0);
    let mut p = Cursor { b, i: 5 };
    let Some(month) = p.num(1, 2) else {
        return false;
    };
    if !p.eat(b'-') {
        return false;
    }
    let Some(day) = p.num(1, 2) else {
        return false;
    };
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return false;
    }
    if p.done() {
        return true;
    }
    let sep = b[p.i];
    if !matches!(sep, b'T' | b't' | b' ') {
        return false;
    }
    p.i += 1;
    let (Some(h), true, Some(m), true, Some(sec)) = (
        p.num(1, 2),
        p.eat(b':'),
        p.num(1, 2),
        p.eat(b':'),
        p.num(1, 2),
    ) else {
        return false;
    };
    if h > 23 || m > 59 || sec > 59 {
        return false;
    }
    if p.eat(b'.') && p.num(1, 9).is_none() {
        return false;
    }
    if sep == b' ' {
        return p.done();
    }
    if p.eat(b'Z') {
        return p.done();
    }
    if !(p.eat(b'+') || p.eat(b'-')) {
        return false;
    }
    let (Some(zh), true, Some(zm)) = (p.num(2, 2), p.eat(b':'), p.num(2, 2)) else {
        return false;
    };
    zh <= 24 && zm <= 59 && p.done()
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn num(&mut self, min: usize, max: usize) -> Option<u32> {
        let start = self.i;
        while self.i < self.b.len() && self.i - start < max && self.b[self.i].is_ascii_digit() {
            self.i += 1;
        }
        if self.i - start < min {
            return None;
        }
        std::str::from_utf8(&self.b[start..self.i])
            .ok()?
            .parse()
            .ok()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn done(&self) -> bool {
        self.i == self.b.len()
    }
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// go-yaml v2's `isBase60Float` (`1:20`, `-1:20:30.5`).
fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let Some(&c) = b.first() else {
        return false;
    };
    if !(c == b'+' || c == b'-' || c.is_ascii_digit()) || !s.contains(':') {
        return false;
    }
    let mut i = usize::from(c == b'+' || c == b'-');
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        i += 1;
        let start = i;
        while i < b.len() && i - start < 2 && b[i].is_ascii_digit() {
            i += 1;
        }
        let n = i - start;
        if n == 0 || (n == 2 && b[start] > b'5') {
            return false;
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// go-yaml v2's map key order (`keyList.Less` on strings): letters compare by code point,
/// letters sort after non-letters, and runs of digits compare by numeric value.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    // Keys are nearly always ASCII: compared byte by byte then, without collecting chars.
    if a.is_ascii() && b.is_ascii() {
        return natural_order(a.as_bytes(), b.as_bytes());
    }
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    natural_order(&ar, &br)
}

/// Sorts `items` by go-yaml v2's key order ([`natural_cmp`] of each item's `key`), stably,
/// with a sort that never panics. That order is not transitive for some keys: a digit run
/// against a letter makes `k3` < `k23` < `k2z2` < `k3`. kustomize then writes such keys in an
/// order that changes from run to run (Go's map iteration feeds its sort), and Rust's own sort
/// may panic on them; here they get one order, the same each time. Keys the order does rank
/// consistently come out exactly as any correct sort gives them.
pub fn sort_natural<'a, T: Copy + 'a>(items: &mut [T], key: impl Fn(T) -> &'a str) {
    let after = |a: T, b: T| natural_cmp(key(a), key(b)) == Ordering::Greater;
    let mut buffer = Vec::with_capacity(items.len());
    merge_sort(items, &mut buffer, &after);
}

/// Below this many items, [`merge_sort`] sorts by insertion.
const INSERTION_SORT_MAX: usize = 16;

/// A stable merge sort by `after` (whether the first item belongs after the second) that
/// only ever compares and moves: whatever `after` answers, it ends with a permutation.
fn merge_sort<T: Copy>(items: &mut [T], buffer: &mut Vec<T>, after: &impl Fn(T, T) -> bool) {
    if items.len() <= INSERTION_SORT_MAX {
        for i in 1..items.len() {
            let mut j = i;
            while j > 0 && after(items[j - 1], items[j]) {
                items.swap(j - 1, j);
                j -= 1;
            }
        }
        return;
    }
    let middle = items.len() / 2;
    merge_sort(&mut items[..middle], buffer, after);
    merge_sort(&mut items[middle..], buffer, after);
    buffer.clear();
    let (mut left, mut right) = (0, middle);
    while left < middle && right < items.len() {
        if after(items[left], items[right]) {
            buffer.push(items[right]);
            right += 1;
        } else {
            buffer.push(items[left]);
            left += 1;
        }
    }
    buffer.extend_from_slice(&items[left..middle]);
    buffer.extend_from_slice(&items[right..]);
    items.copy_from_slice(buffer);
}

/// A unit of a string [`natural_cmp`] compares: a byte of an ASCII string, or a char.
trait Unit: Copy + Ord {
    fn alphabetic(self) -> bool;
    /// The value of an ASCII digit.
    fn digit(self) -> Option<u8>;
}

impl Unit for u8 {
    fn alphabetic(self) -> bool {
        self.is_ascii_alphabetic()
    }
    fn digit(self) -> Option<u8> {
        self.is_ascii_digit().then(|| self - b'0')
    }
}

impl Unit for char {
    fn alphabetic(self) -> bool {
        self.is_alphabetic()
    }
    fn digit(self) -> Option<u8> {
        self.is_ascii_digit().then(|| self as u8 - b'0')
    }
}

fn natural_order<T: Unit>(a: &[T], b: &[T]) -> Ordering {
    if less(a, b) {
        Ordering::Less
    } else if less(b, a) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

fn less<T: Unit>(ar: &[T], br: &[T]) -> bool {
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let al = ar[i].alphabetic();
        let bl = br[i].alphabetic();
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn): (i64, i64) = (0, 0);
        if ar[i].digit() == Some(0) || br[i].digit() == Some(0) {
            let mut j = i;
            while j > 0 && ar[j - 1].digit().is_some() {
                j -= 1;
                if ar[j].digit() != Some(0) {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while let Some(d) = ar.get(ai).and_then(|c| c.digit()) {
            an = an.wrapping_mul(10).wrapping_add(i64::from(d));
            ai += 1;
        }
        let mut bi = i;
        while let Some(d) = br.get(bi).and_then(|c| c.digit()) {
            bn = bn.wrapping_mul(10).wrapping_add(i64::from(d));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// How a JSON number comes out of kustomize: Go's JSON encoding followed by go-yaml v2's
/// resolution, i.e. integral values as integers and other floats in `%g` shortest form.
pub fn format_number(n: &Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    if f.fract() == 0.0 && f.abs() < 1e21 {
        if f.abs() < 9.2e18 {
            return format!("{}", f as i64);
        }
        if f > 0.0 && f < 1.8e19 {
            return format!("{}", f as u64);
        }
    }
    format_g(f)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`.
fn format_g(f: f64) -> String {
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.to_string();
    }
    if f.is_nan() {
        return ".nan".to_string();
    }
    let e = format!("{f:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let sign = if neg { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let frac = if digits.len() > 1 {
            format!(".{}", &digits[1..])
        } else {
            String::new()
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{}{frac}e{esign}{:02}", &digits[..1], exp.abs());
    }
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let int_len = exp as usize + 1;
    if digits.len() <= int_len {
        format!("{sign}{digits}{}", "0".repeat(int_len - digits.len()))
    } else {
        format!("{sign}{}.{}", &digits[..int_len], &digits[int_len..])
    }
}

/// go-yaml's `is_printable` (with unicode output enabled).
pub fn is_printable(c: char) -> bool {
    let v = c as u32;
    v == 0x0A
        || (0x20..=0x7E).contains(&v)
        || (0xA0..=0xD7FF).contains(&v)
        || ((0xE000..=0xFFFD).contains(&v) && v != 0xFEFF)
}

/// go-yaml's `is_break`.
pub fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml11_resolution() {
        for s in [
            "yes",
            "n",
            "true",
            "123",
            "0x1F",
            "012",
            "0o12",
            "1_000",
            "1e3",
            ".inf",
            ".5",
            "2001-12-14",
            "1:20",
            "",
            "~",
            "-1",
            "+1.5",
        ] {
            assert!(!resolves_to_string(s), "{s}");
        }
        for s in [
            "abc",
            "0x",
            "1.2.3",
            "2001-02-30",
            "<<",
            "1e400",
            "-",
            "v1",
            "3Mi",
            "0xFFFFFFFFFFFFFFFFF",
        ] {
            assert!(resolves_to_string(s), "{s}");
        }
    }

    #[test]
    fn natural_order() {
        let mut v = vec!["b10", "b9", "a", "B", "_x", "1", "a0", "a00"];
        sort_natural(&mut v, |k| k);
        assert_eq!(v, ["_x", "1", "B", "a", "a0", "a00", "b9", "b10"]);
    }

    /// go-yaml's key order has cycles (`k3` < `k23` < `k2z2` < `k3`), on which Rust's sort
    /// may panic ("user-provided comparison function does not correctly implement a total
    /// order"; found by the render fuzzer on a ConfigMap of 61 keys). 10,000 random key sets
    /// of digit runs, leading zeros and letters, up to 80 keys: never a panic, always a
    /// permutation, the same order for the same input; and where the keys hold no digit (a
    /// consistent order), exactly the order of a correct sort.
    #[test]
    fn natural_sort_survives_cyclic_keys() {
        use crate::test_rng::Rng;
        assert_eq!(natural_cmp("k3", "k23"), Ordering::Less);
        assert_eq!(natural_cmp("k23", "k2z2"), Ordering::Less);
        assert_eq!(natural_cmp("k2z2", "k3"), Ordering::Less);
        let units = ["0", "00", "1", "2", "3", "9", "z", "a", "k", "_", "Z"];
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for _ in 0..10_000 {
            let count = 1 + rng.below(80) as usize;
            let keys: Vec<String> = (0..count)
                .map(|_| {
                    let length = 1 + rng.below(5);
                    (0..length)
                        .map(|_| units[rng.below(units.len() as u64) as usize])
                        .collect()
                })
                .collect();
            let mut sorted: Vec<&str> = keys.iter().map(String::as_str).collect();
            sort_natural(&mut sorted, |k| k);
            let mut again: Vec<&str> = keys.iter().map(String::as_str).collect();
            sort_natural(&mut again, |k| k);
            assert_eq!(sorted, again);
            let mut permutation = sorted.clone();
            permutation.sort_unstable();
            let mut given: Vec<&str> = keys.iter().map(String::as_str).collect();
            given.sort_unstable();
            assert_eq!(permutation, given);
            let letters: Vec<&str> = keys
                .iter()
                .map(String::as_str)
                .filter(|k| !k.bytes().any(|b| b.is_ascii_digit()))
                .collect();
            let mut ours = letters.clone();
            sort_natural(&mut ours, |k| k);
            let mut reference = letters;
            reference.sort_by(|a, b| natural_cmp(a, b));
            assert_eq!(ours, reference);
        }
    }

    #[test]
    fn go_g_format() {
        assert_eq!(format_g(1.5), "1.5");
        assert_eq!(format_g(1234567.5), "1.2345675e+06");
        assert_eq!(format_g(0.0001), "0.0001");
        assert_eq!(format_g(0.00001), "1e-05");
        assert_eq!(format_g(-2.25), "-2.25");
    }
}
