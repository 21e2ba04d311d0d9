//! The sparse-grid index set `S_n = {j ∈ ℕ₀^D : |j|₁ ≤ n}`: counting, the
//! block table the transform walks, and the random subset of the last shell
//! that a feature budget keeps.

use kapprox_core::rng::{self, Domain};
use rand::RngCore;

/// Functions of the 1-D level `j`: one at levels 0 and 1, `2^{j−2}` hats
/// above.
fn level_width_bits(j: u32) -> u32 {
    j.saturating_sub(2)
}

/// `C(n + D, D)`: the number of level multi-indices (blocks) in `S_n`,
/// saturating at `u128::MAX`.
pub(super) fn count_blocks(d: usize, n: u32) -> u128 {
    let mut c: u128 = 1;
    for i in 1..=n as u128 {
        // C(D + i, i) = C(D + i − 1, i − 1)·(D + i)/i, exact at every step.
        c = match c.checked_mul(d as u128 + i) {
            Some(v) => v / i,
            None => return u128::MAX,
        };
    }
    c
}

/// `|S_n|`, the number of features of level `n` in `D` dimensions,
/// saturating at `u128::MAX`: the sum of the coefficients of `t^0..t^n` in
/// `W(t)^D`, `W(t) = 1 + t + Σ_{j≥2} 2^{j−2} t^j`. Computed by binary
/// powering of the truncated polynomial.
pub(super) fn count_features(d: usize, n: u32) -> u128 {
    let len = n as usize + 1;
    let mul = |a: &[u128], b: &[u128]| -> Vec<u128> {
        let mut c = vec![0u128; len];
        for (i, &ai) in a.iter().enumerate().filter(|(_, v)| **v != 0) {
            for (j, &bj) in b.iter().enumerate().take(len - i) {
                c[i + j] = c[i + j].saturating_add(ai.saturating_mul(bj));
            }
        }
        c
    };
    let w: Vec<u128> = (0..len as u32).map(|j| 1u128 << level_width_bits(j)).collect();
    let mut acc = vec![0u128; len];
    acc[0] = 1;
    let (mut base, mut e) = (w, d);
    while e > 0 {
        if e & 1 == 1 {
            acc = mul(&acc, &base);
        }
        e >>= 1;
        if e > 0 {
            base = mul(&base, &base);
        }
    }
    acc.iter().fold(0u128, |s, v| s.saturating_add(*v))
}

/// One level multi-index `j` of `S_n`, stored as its parent (the same `j`
/// without its last non-zero coordinate) plus that coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Block {
    /// First column of the block's `2^{Σ(j_d−2)₊}` functions in the full
    /// enumeration of `S_n`.
    pub(super) offset: u64,
    /// Index of the parent block (the root, `j = 0`, is its own parent).
    pub(super) parent: u32,
    /// `d·(n + 1) + j_d` of the last non-zero coordinate: where the
    /// transform's per-row table holds that 1-D value.
    pub(super) slot: u32,
    /// `(j_d − 2)₊`: bits the last coordinate adds to the local index.
    pub(super) shift: u8,
    /// `|j|₁`.
    pub(super) shell: u8,
}

/// The blocks of `S_n` in column order: by shell `|j|₁`, then
/// lexicographically by the list `((d₁, j_{d₁}), (d₂, j_{d₂}), …)` of the
/// non-zero coordinates (`d₁ < d₂ < …`, pairs compared by dimension, then
/// level). The parent of a block always comes before it.
///
/// The caller bounds the number of blocks (`count_blocks`).
pub(super) fn enumerate(d: usize, n: u32) -> Vec<Block> {
    // (parent, slot, shift, shell, bits): a depth-first preorder, which is
    // the lexicographic order of the pair lists.
    struct Raw {
        parent: u32,
        slot: u32,
        shift: u8,
        shell: u8,
        bits: u8,
    }
    fn visit(raw: &mut Vec<Raw>, at: u32, start: usize, d: usize, n: u32) {
        let (shell, bits) = (raw[at as usize].shell as u32, raw[at as usize].bits as u32);
        for dim in start..d {
            for j in 1..=n - shell {
                let shift = level_width_bits(j);
                raw.push(Raw {
                    parent: at,
                    slot: (dim * (n as usize + 1) + j as usize) as u32,
                    shift: shift as u8,
                    shell: (shell + j) as u8,
                    bits: (bits + shift) as u8,
                });
                let child = raw.len() as u32 - 1;
                if shell + j < n {
                    visit(raw, child, dim + 1, d, n);
                }
            }
        }
    }
    let mut raw = vec![Raw { parent: 0, slot: 0, shift: 0, shell: 0, bits: 0 }];
    if n > 0 {
        visit(&mut raw, 0, 0, d, n);
    }
    // A stable sort by shell keeps the lexicographic order within a shell,
    // and parents (smaller shell) stay before their children.
    let mut order: Vec<u32> = (0..raw.len() as u32).collect();
    order.sort_by_key(|&i| raw[i as usize].shell);
    let mut new_index = vec![0u32; raw.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old as usize] = new as u32;
    }
    let mut offset = 0u64;
    order
        .iter()
        .map(|&old| {
            let r = &raw[old as usize];
            let b =
                Block { offset, parent: new_index[r.parent as usize], slot: r.slot, shift: r.shift, shell: r.shell };
            offset += 1u64 << r.bits;
            b
        })
        .collect()
}

/// The stream index of the budget subset: EOF's own range of the
/// [`Domain::FEATURE_MAP`] index space (family tag `0xE0F` in the top 16
/// bits, clear of the crate's other map families).
const SUBSET_STREAM: u64 = 0xE0F << 48;

/// A uniformly random `keep`-subset of the `total` functions of the last
/// shell, as a bitmap with a rank directory: membership and the rank of a
/// member in `O(1)` bit operations.
#[derive(Clone, Debug)]
pub(super) struct Subset {
    words: Vec<u64>,
    /// Members before each word.
    ranks: Vec<u32>,
}

impl Subset {
    /// Draws the subset with Floyd's algorithm (`keep` draws, the bitmap as
    /// the set): for `t = total − keep, …, total − 1`, draw `u` uniform in
    /// `0..=t` and add `u`, or `t` if `u` is already in. Uniform integers are
    /// `⌊r·(t + 1)/2^64⌋` for the next 64-bit output `r` of
    /// `rng::stream(seed, FEATURE_MAP, 0xE0F << 48)` (bias below 2^−32).
    pub(super) fn sample(total: u64, keep: u64, seed: u64) -> Subset {
        debug_assert!(keep <= total && total <= u32::MAX as u64);
        let mut words = vec![0u64; total.div_ceil(64) as usize];
        let mut r = rng::stream(seed, Domain::FEATURE_MAP, SUBSET_STREAM);
        for t in total - keep..total {
            let u = ((r.next_u64() as u128 * (t as u128 + 1)) >> 64) as u64;
            let pick = if words[(u >> 6) as usize] >> (u & 63) & 1 == 1 { t } else { u };
            words[(pick >> 6) as usize] |= 1 << (pick & 63);
        }
        let mut ranks = Vec::with_capacity(words.len());
        let mut acc = 0u32;
        for w in &words {
            ranks.push(acc);
            acc += w.count_ones();
        }
        Subset { words, ranks }
    }

    /// The rank of position `p` among the members, if `p` is a member.
    #[inline]
    pub(super) fn rank(&self, p: u64) -> Option<u32> {
        let (w, b) = ((p >> 6) as usize, p & 63);
        let word = self.words[w];
        if word >> b & 1 == 0 {
            return None;
        }
        Some(self.ranks[w] + (word & ((1u64 << b) - 1)).count_ones())
    }

    /// Whether any of the positions `start..start + len` is a member.
    pub(super) fn any_in(&self, start: u64, len: u64) -> bool {
        if len == 0 {
            return false;
        }
        let last = start + len - 1;
        let (first_word, last_word) = ((start >> 6) as usize, (last >> 6) as usize);
        (first_word..=last_word).any(|w| {
            let mut word = self.words[w];
            if w == first_word {
                word &= !0u64 << (start & 63);
            }
            if w == last_word {
                word &= !0u64 >> (63 - (last & 63));
            }
            word != 0
        })
    }

    /// Heap bytes.
    pub(super) fn bytes(&self) -> usize {
        self.words.len() * 8 + self.ranks.len() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// All `j ∈ ℕ₀^D` with `|j|₁ ≤ n`, by brute force over `(n+1)^D`.
    fn brute(d: usize, n: u32) -> Vec<Vec<u32>> {
        let mut out = Vec::new();
        let total = (n as usize + 1).pow(d as u32);
        for mut code in 0..total {
            let j: Vec<u32> = (0..d)
                .map(|_| {
                    let v = (code % (n as usize + 1)) as u32;
                    code /= n as usize + 1;
                    v
                })
                .collect();
            if j.iter().sum::<u32>() <= n {
                out.push(j);
            }
        }
        out
    }

    /// The dense level vector of a block, by walking its parents.
    fn levels(blocks: &[Block], b: usize, d: usize, n: u32) -> Vec<u32> {
        let mut j = vec![0u32; d];
        let mut at = b;
        while at != 0 {
            let s = blocks[at].slot as usize;
            j[s / (n as usize + 1)] = (s % (n as usize + 1)) as u32;
            at = blocks[at].parent as usize;
        }
        j
    }

    #[test]
    fn blocks_are_the_sparse_grid_in_column_order() {
        for (d, n) in [(1, 0), (1, 6), (2, 5), (3, 4), (4, 3), (5, 2)] {
            let blocks = enumerate(d, n);
            let mut want = brute(d, n);
            assert_eq!(blocks.len(), want.len(), "d={d} n={n}");
            assert_eq!(count_blocks(d, n), want.len() as u128);
            let mut got: Vec<Vec<u32>> = (0..blocks.len()).map(|b| levels(&blocks, b, d, n)).collect();
            for (b, blk) in blocks.iter().enumerate() {
                assert_eq!(blk.shell as u32, got[b].iter().sum::<u32>());
                assert!(b == 0 || (blk.parent as usize) < b);
            }
            // Column order: by shell, then lexicographic in the non-zero
            // (dimension, level) pairs.
            let key = |j: &Vec<u32>| {
                let pairs: Vec<(usize, u32)> = j.iter().copied().enumerate().filter(|p| p.1 > 0).collect();
                (j.iter().sum::<u32>(), pairs)
            };
            assert!(got.windows(2).all(|w| key(&w[0]) < key(&w[1])), "d={d} n={n}");
            got.sort();
            want.sort();
            assert_eq!(got, want);
            let sizes: u64 = want.iter().map(|j| 1u64 << j.iter().map(|&l| level_width_bits(l)).sum::<u32>()).sum();
            assert_eq!(count_features(d, n), sizes as u128);
            let last = blocks.last().unwrap();
            assert_eq!(
                last.offset
                    + (1u64
                        << levels(&blocks, blocks.len() - 1, d, n).iter().map(|&l| level_width_bits(l)).sum::<u32>()),
                sizes
            );
        }
    }

    #[test]
    fn counts_saturate() {
        assert_eq!(count_features(1, 5), 17);
        assert_eq!(count_blocks(10, 3), 286);
        assert_eq!(count_blocks(usize::MAX, 32), u128::MAX);
        assert_eq!(count_features(usize::MAX, 32), u128::MAX);
    }

    #[test]
    fn subset_has_the_requested_size_and_ranks_are_dense() {
        for (total, keep) in [(1u64, 1u64), (10, 3), (1000, 999), (4097, 1234)] {
            let s = Subset::sample(total, keep, 9);
            let members: Vec<u64> = (0..total).filter(|&p| s.rank(p).is_some()).collect();
            assert_eq!(members.len() as u64, keep);
            for (r, &p) in members.iter().enumerate() {
                assert_eq!(s.rank(p), Some(r as u32));
            }
            assert_eq!(s.any_in(0, total), keep > 0);
            for a in (0..total).step_by(7) {
                for len in [0, 1, 5, 63, 64, 65, 130] {
                    let len = len.min(total - a);
                    assert_eq!(s.any_in(a, len), members.iter().any(|&p| p >= a && p < a + len), "{a} + {len}");
                }
            }
        }
    }

    #[test]
    fn subset_is_uniform_enough() {
        // Each of 20 positions is kept with probability 5/20; over 400 seeds
        // a count has mean 100 and standard deviation √75 ≈ 8.7: allow 5σ.
        let mut hits = [0u32; 20];
        for seed in 0..400 {
            let s = Subset::sample(20, 5, seed);
            for (p, h) in hits.iter_mut().enumerate() {
                *h += s.rank(p as u64).is_some() as u32;
            }
        }
        assert!(hits.iter().all(|&h| (h as f64 - 100.0).abs() < 5.0 * 8.7), "{hits:?}");
    }
}
