//! A small deterministic generator (xorshift) for the unit tests' property and long-run loops:
//! pseudo-random but repeatable, so a failing step can be replayed.

/// The generator; the seed must not be 0.
pub struct Rng(pub u64);

impl Rng {
    /// The next value below `below` (not 0).
    pub fn below(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }

    /// Applies one to four random edits to `text`, as a careless or hostile writer would:
    /// each inserts one of `pieces` or deletes up to eight bytes, at a character boundary.
    pub fn mutate(&mut self, text: &mut String, pieces: &[&str]) {
        for _ in 0..1 + self.below(4) {
            let mut at = self.below(text.len() as u64 + 1) as usize;
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            if self.below(2) == 0 {
                text.insert_str(at, pieces[self.below(pieces.len() as u64) as usize]);
            } else {
                let mut end = (at + 1 + self.below(8) as usize).min(text.len());
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.replace_range(at..end, "");
            }
        }
    }
}
