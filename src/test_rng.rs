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
}
