//! Deterministic pseudo-random JSON documents for property-style tests.

use serde_json::{Map, Value, json};

/// A xorshift64 generator: reproducible without extra dependencies.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `count` documents of up to four levels; `nulls` allows `null` values.
pub(crate) fn documents(count: usize, nulls: bool) -> Vec<Value> {
    let mut rng = Rng::new(0x5eed);
    (0..count).map(|_| document(&mut rng, 4, nulls)).collect()
}

/// One random document.
pub(crate) fn document(rng: &mut Rng, depth: u32, nulls: bool) -> Value {
    let choices = if depth == 0 { 4 } else { 6 };
    match rng.below(choices) {
        0 if nulls => Value::Null,
        0 => json!(true),
        1 => json!(rng.below(100)),
        2 => json!(["a", "b", "c", "~", "/"][rng.below(5) as usize]),
        3 => json!(rng.below(2) == 0),
        4 => Value::Array(
            (0..rng.below(4))
                .map(|_| document(rng, depth - 1, nulls))
                .collect(),
        ),
        _ => {
            let mut map = Map::new();
            for _ in 0..rng.below(5) {
                let key = ["a", "b", "c", "d", "x/y", "m~n"][rng.below(6) as usize];
                map.insert(key.to_owned(), document(rng, depth - 1, nulls));
            }
            Value::Object(map)
        }
    }
}
