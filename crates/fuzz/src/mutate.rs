//! Byte-level mutations, chosen by a seeded generator so that a run is
//! reproducible from its seed.

use kapprox_core::rng::mix64;

/// A small deterministic generator (SplitMix64).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(mix64(seed ^ 0x6675_7a7a))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.0)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Bytes that mean something to one of the formats: separators, quotes,
/// signs, comment and exponent markers, and the edges of the byte range.
const INTERESTING_BYTES: &[u8] = b"\x00\x01\x7f\x80\xff\n\r\t ,;:#\"-+.eE0";

/// Integers worth writing over a header field or a length.
const INTERESTING_INTS: &[u64] =
    &[0, 1, 2, 0x7f, 0xff, 0x100, 0xffff, 0x1_0000, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 2_000_000_000, u64::MAX];

/// Number tokens worth writing over a run of digits.
const INTERESTING_TOKENS: &[&str] = &[
    "0",
    "-1",
    "-0",
    "2000000000",
    "4294967296",
    "18446744073709551615",
    "99999999999999999999999",
    "1e308",
    "1e300",
    "-1e300",
    "1e-320",
    "nan",
    "inf",
    "-inf",
    "0x10",
    "",
];

/// A mutant of `input`: one to four stacked mutations, some of which splice
/// in parts of other `corpus` entries. At most `max_len` bytes.
pub fn mutate(input: &[u8], rng: &mut Rng, corpus: &[Vec<u8>], max_len: usize) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        mutate_once(&mut out, rng, corpus);
    }
    out.truncate(max_len);
    out
}

fn mutate_once(out: &mut Vec<u8>, rng: &mut Rng, corpus: &[Vec<u8>]) {
    if out.is_empty() {
        let n = 1 + rng.below(8);
        out.extend((0..n).map(|_| rng.next_u64() as u8));
        return;
    }
    let len = out.len();
    let at = rng.below(len);
    match rng.below(10) {
        0 => out[at] ^= 1 << rng.below(8),
        1 => out[at] = rng.next_u64() as u8,
        2 => out[at] = *rng.pick(INTERESTING_BYTES),
        3 => {
            let n = 1 + rng.below(8);
            let bytes: Vec<u8> = (0..n).map(|_| *rng.pick(INTERESTING_BYTES)).collect();
            out.splice(at..at, bytes);
        }
        4 => {
            let n = 1 + rng.below((len / 4).max(1));
            out.drain(at..(at + n).min(len));
        }
        5 => {
            let n = 1 + rng.below((len / 4).clamp(1, 64));
            let piece = out[at..(at + n).min(len)].to_vec();
            let to = rng.below(len);
            out.splice(to..to, piece);
        }
        6 => {
            let v = *rng.pick(INTERESTING_INTS);
            let big_endian = rng.below(2) == 0;
            let bytes = match (rng.below(2) == 0, big_endian) {
                (true, true) => (v as u32).to_be_bytes().to_vec(),
                (true, false) => (v as u32).to_le_bytes().to_vec(),
                (false, true) => v.to_be_bytes().to_vec(),
                (false, false) => v.to_le_bytes().to_vec(),
            };
            for (k, b) in bytes.into_iter().enumerate() {
                if let Some(slot) = out.get_mut(at + k) {
                    *slot = b;
                }
            }
        }
        7 => {
            // A run of digits (or the byte at `at`) becomes a number token.
            let start = (0..=at).rev().take_while(|&i| out[i].is_ascii_digit()).last().unwrap_or(at);
            let end = (at..len).take_while(|&i| out[i].is_ascii_digit()).last().map_or(at + 1, |e| e + 1);
            out.splice(start..end, rng.pick(INTERESTING_TOKENS).bytes());
        }
        8 => {
            let other = rng.pick(corpus);
            if !other.is_empty() {
                let from = rng.below(other.len());
                out.truncate(at);
                out.extend_from_slice(&other[from..]);
            }
        }
        _ => out.truncate(at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_are_reproducible_and_bounded() {
        let corpus = vec![b"a,b\n1,2\n".to_vec(), b"1 1:2\n".to_vec()];
        let run = |seed| {
            let mut rng = Rng::new(seed);
            (0..200).map(|i| mutate(&corpus[i % 2], &mut rng, &corpus, 64)).collect::<Vec<_>>()
        };
        let a = run(1);
        assert_eq!(a, run(1));
        assert_ne!(a, run(2));
        assert!(a.iter().all(|m| m.len() <= 64));
        assert!(a.iter().any(|m| m != &corpus[0] && m != &corpus[1]));
    }
}
