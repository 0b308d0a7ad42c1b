//! A reader that shortens long JSON strings as they stream past.
//!
//! `serde_json::from_reader` builds every string a visitor asks for (a map key, a value read
//! as a string) in a scratch buffer: one 24 MB key in a webhook body would cost 24 MB.
//! [`CappedStrings`] stops passing a string's bytes on once [`MAX_STRING_CHARS`] characters of
//! it went through, resuming at its closing quote. The cut falls on a character boundary, outside an
//! escape sequence and never between the two halves of a surrogate pair, so the text stays
//! valid JSON wherever it was, and a cut string is still longer than anything the payload
//! readers keep (keys of at most 32 bytes, URLs of at most 2,048 characters): what they find
//! is the same as in the whole text.

use std::io::{self, Read};

/// The most characters of one JSON string passed on (an escape sequence counts as one): more
/// than the longest value a payload reader keeps, so a cut string is still one it ignores.
/// Decoded, a cut string is at most 4 bytes a character.
pub const MAX_STRING_CHARS: usize = 2048 + 16;

/// Where the scanner is inside an escape sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    /// Not in one.
    None,
    /// After the backslash: the escape's letter comes next.
    Letter,
    /// In `\uXXXX`, at this hex digit (0 to 3).
    Hex(u8),
}

/// Wraps a reader of JSON text, cutting every string to [`MAX_STRING_CHARS`] (see the
/// module documentation). Bytes outside strings pass unchanged.
pub struct CappedStrings<R> {
    inner: R,
    in_string: bool,
    escape: Escape,
    /// The `\u` escape being read is a high surrogate (so far), or the last one completed was
    /// one: the string must not be cut before its low half.
    high_surrogate: bool,
    /// Characters of the current string passed on.
    run: usize,
    /// The rest of the current string is dropped.
    dropping: bool,
}

impl<R: Read> CappedStrings<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> CappedStrings<R> {
        CappedStrings {
            inner,
            in_string: false,
            escape: Escape::None,
            high_surrogate: false,
            run: 0,
            dropping: false,
        }
    }

    /// Whether byte `b`, next in the text, is passed on.
    fn keep(&mut self, b: u8) -> bool {
        if !self.in_string {
            if b == b'"' {
                self.in_string = true;
                self.run = 0;
                self.dropping = false;
                self.high_surrogate = false;
            }
            return true;
        }
        match self.escape {
            Escape::Letter => {
                self.escape = if b == b'u' {
                    Escape::Hex(0)
                } else {
                    Escape::None
                };
            }
            Escape::Hex(index) => {
                // D800-DBFF: a high surrogate, whose low half must follow uncut.
                let high = match index {
                    0 => b.eq_ignore_ascii_case(&b'd'),
                    1 => self.high_surrogate && matches!(b.to_ascii_lowercase(), b'8'..=b'b'),
                    _ => self.high_surrogate,
                };
                self.high_surrogate = high;
                self.escape = if index == 3 {
                    Escape::None
                } else {
                    Escape::Hex(index + 1)
                };
            }
            Escape::None => {
                if b == b'"' {
                    self.in_string = false;
                    return true;
                }
                // A character (or an escape sequence) starts here.
                // After a high surrogate it is the pair's low half: the same character.
                if (b & 0xC0) != 0x80 && !std::mem::take(&mut self.high_surrogate) {
                    if !self.dropping && self.run >= MAX_STRING_CHARS {
                        self.dropping = true;
                    }
                    self.run += 1;
                }
                if b == b'\\' {
                    self.escape = Escape::Letter;
                }
            }
        }
        !self.dropping
    }
}

impl<R: Read> Read for CappedStrings<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let read = self.inner.read(buf)?;
            if read == 0 {
                return Ok(0);
            }
            let mut kept = 0;
            for i in 0..read {
                let b = buf[i];
                if self.keep(b) {
                    buf[kept] = b;
                    kept += 1;
                }
            }
            // Everything read was the dropped middle of a long string: read on (0 means the
            // end of the text to the caller).
            if kept > 0 {
                return Ok(kept);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capped(text: &[u8], chunk: usize) -> Vec<u8> {
        /// Hands the text out `chunk` bytes at a time, as a socket or a file might.
        struct Chunks<'a>(&'a [u8], usize);
        impl Read for Chunks<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(self.1).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut out = Vec::new();
        CappedStrings::new(Chunks(text, chunk))
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn short_text_passes_unchanged() {
        let text = br#"{"a": "b\"c\\", "d": [1, 2.5, null, "\u00e9\ud83d\ude00"], "k\u0041": {}}"#;
        for chunk in [1, 3, 1024] {
            assert_eq!(capped(text, chunk), text);
        }
    }

    #[test]
    fn long_strings_are_cut_and_stay_valid_json() {
        let units = ["x", "é", "😀", "\\\"", "\\u0041", "\\ud83d\\ude00", "\\\\"];
        for unit in units {
            let long = unit.repeat(3 * MAX_STRING_CHARS);
            let text =
                format!(r#"{{"{long}": ["{long}", 7], "url": "https://h/o/r", "z": "{long}"}}"#);
            for chunk in [1, 7, 4096] {
                let out = capped(text.as_bytes(), chunk);
                assert!(
                    out.len() <= 3 * 12 * MAX_STRING_CHARS + 100,
                    "{unit}: {} bytes",
                    out.len()
                );
                let value: serde_json::Value = serde_json::from_slice(&out)
                    .unwrap_or_else(|e| panic!("{unit} (chunks of {chunk}): {e}"));
                assert_eq!(value["url"], "https://h/o/r", "{unit}");
                let kept = value["z"].as_str().unwrap();
                let chars = kept.chars().count();
                assert_eq!(chars, MAX_STRING_CHARS, "{unit}");
            }
        }
    }

    #[test]
    fn whole_megabytes_of_one_string_cost_one_cut_string() {
        let text = format!(r#"{{"repoURL": "{}"}}"#, "x".repeat(24 << 20));
        let out = capped(text.as_bytes(), 64 << 10);
        assert_eq!(out.len(), MAX_STRING_CHARS + r#"{"repoURL": ""}"#.len());
    }
}
