//! The sparse-grid index sets of both bases: counting, the block table the
//! transform walks, and the random subset that a feature budget keeps.
//!
//! Both bases are described by their 1-D levels `k = 0..=top` per dimension,
//! the multi-indices `k ∈ ℕ₀^D` with `|k|₁ ≤ top`, and the number of
//! functions `2^{bits(k)}` of level `k`:
//!
//! | basis | `top` at level `n` | `bits(k)` |
//! |---|---|---|
//! | centred | `n` | 0 at level 0, then `max(k − 1, 1)` (2, 2, 4, 8, … functions) |
//! | boundary | `n` | `(k − 2)₊` (one function at levels 0 and 1) |
//! | paper | `n − 1` (no block at `n = 0`) | `k` (paper level `k + 1`) |

use super::spec::EofBasis;
use kapprox_core::rng::{self, Domain};
use rand::RngCore;

/// The shape of one basis at one level: the 1-D levels `0..=top` and the
/// multi-indices with `|k|₁ ≤ top` (none when `top` is `None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Levels {
    basis: EofBasis,
    /// `|k|₁ ≤ top`; `None` for the empty paper set at `n = 0`.
    pub(super) top: Option<u32>,
}

impl Levels {
    /// The index set of `basis` at sparse-grid level `n`.
    pub(super) fn new(basis: EofBasis, n: u32) -> Self {
        let top = match basis {
            EofBasis::Centred | EofBasis::Boundary => Some(n),
            EofBasis::Paper => n.checked_sub(1),
        };
        Levels { basis, top }
    }

    /// `log2` of the number of functions of the 1-D level `k`.
    pub(super) fn width_bits(&self, k: u32) -> u32 {
        match self.basis {
            EofBasis::Centred => k.saturating_sub(1).max(k.min(1)),
            EofBasis::Boundary => k.saturating_sub(2),
            EofBasis::Paper => k,
        }
    }

    /// 1-D levels per dimension (`top + 1`).
    pub(super) fn per_dim(&self) -> usize {
        self.top.map_or(0, |t| t as usize + 1)
    }
}

/// `C(top + D, D)`: the number of level multi-indices (blocks), saturating
/// at `u128::MAX`.
pub(super) fn count_blocks(d: usize, levels: Levels) -> u128 {
    let Some(n) = levels.top else { return 0 };
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

/// The number of functions, saturating at `u128::MAX`: the sum of the
/// coefficients of `t^0..t^top` in `W(t)^D`, `W(t) = Σ_k 2^{bits(k)} t^k`.
/// Computed by binary powering of the truncated polynomial.
pub(super) fn count_features(d: usize, levels: Levels) -> u128 {
    let Some(n) = levels.top else { return 0 };
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
    let w: Vec<u128> = (0..len as u32).map(|k| 1u128.checked_shl(levels.width_bits(k)).unwrap_or(u128::MAX)).collect();
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

/// One level multi-index `k` of the index set, stored as its parent (the
/// same `k` without its last non-zero coordinate) plus that coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Block {
    /// First column of the block's `2^{bits}` functions in the full
    /// enumeration of the level.
    pub(super) offset: u64,
    /// Index of the parent block (the root, `k = 0`, is its own parent).
    pub(super) parent: u32,
    /// `d·(top + 1) + k_d` of the last non-zero coordinate: where the
    /// transform's per-row table holds that 1-D value.
    pub(super) slot: u32,
    /// `bits(k_d)` of the last coordinate: bits it adds to the local index.
    pub(super) shift: u8,
    /// `|k|₁`.
    pub(super) shell: u8,
    /// `Σ_d bits(k_d)`: the block holds `2^{bits}` functions.
    pub(super) bits: u8,
}

impl Block {
    /// Functions in the block.
    pub(super) fn size(&self) -> u64 {
        1u64 << self.bits
    }
}

/// The blocks in column order: by shell `|k|₁`, then lexicographically by
/// the list `((d₁, k_{d₁}), (d₂, k_{d₂}), …)` of the non-zero coordinates
/// (`d₁ < d₂ < …`, pairs compared by dimension, then level). The parent of
/// a block always comes before it.
///
/// The caller bounds the number of blocks (`count_blocks`) and their sizes
/// (`count_features`).
pub(super) fn enumerate(d: usize, levels: Levels) -> Vec<Block> {
    let Some(n) = levels.top else { return Vec::new() };
    // A depth-first preorder, which is the lexicographic order of the pair
    // lists; `offset` is filled in after sorting by shell.
    fn visit(raw: &mut Vec<Block>, at: u32, start: usize, d: usize, n: u32, levels: Levels) {
        let (shell, bits) = (raw[at as usize].shell as u32, raw[at as usize].bits as u32);
        for dim in start..d {
            for k in 1..=n - shell {
                let shift = levels.width_bits(k);
                raw.push(Block {
                    offset: 0,
                    parent: at,
                    slot: (dim * (n as usize + 1) + k as usize) as u32,
                    shift: shift as u8,
                    shell: (shell + k) as u8,
                    bits: (bits + shift) as u8,
                });
                let child = raw.len() as u32 - 1;
                if shell + k < n {
                    visit(raw, child, dim + 1, d, n, levels);
                }
            }
        }
    }
    let mut raw = vec![Block { offset: 0, parent: 0, slot: 0, shift: 0, shell: 0, bits: 0 }];
    if n > 0 {
        visit(&mut raw, 0, 0, d, n, levels);
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
            let r = raw[old as usize];
            let b = Block { offset, parent: new_index[r.parent as usize], ..r };
            offset += b.size();
            b
        })
        .collect()
}

/// The stream index of the budget subset: EOF's own range of the
/// [`Domain::FEATURE_MAP`] index space (family tag `0xE0F` in the top 16
/// bits, clear of the crate's other map families).
const SUBSET_STREAM: u64 = 0xE0F << 48;

/// A uniformly random `keep`-subset of `total` candidate functions (the
/// last shell for [`super::spec::EofSubset::Nested`], the whole level for
/// [`super::spec::EofSubset::Uniform`]), as a bitmap with a rank directory:
/// membership, the rank of a member and the members in a range in `O(1)`
/// bit operations.
#[derive(Clone, Debug)]
pub(super) struct Subset {
    words: Vec<u64>,
    /// Members before each word.
    ranks: Vec<u32>,
    /// Members in all.
    members: u64,
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
        Subset { words, ranks, members: keep }
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

    /// Members before position `p ≤ total`.
    #[inline]
    fn members_before(&self, p: u64) -> u64 {
        let w = (p >> 6) as usize;
        match self.words.get(w) {
            Some(&word) => self.ranks[w] as u64 + (word & ((1u64 << (p & 63)) - 1)).count_ones() as u64,
            None => self.members,
        }
    }

    /// How many of the positions `start..start + len` are members
    /// (`start + len ≤ total`).
    pub(super) fn count_in(&self, start: u64, len: u64) -> u64 {
        self.members_before(start + len) - self.members_before(start)
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
        for basis in [EofBasis::Centred, EofBasis::Boundary, EofBasis::Paper] {
            for (d, n) in [(1, 1), (1, 6), (2, 5), (3, 4), (4, 3), (5, 2)] {
                let lv = Levels::new(basis, n);
                let top = lv.top.unwrap();
                let blocks = enumerate(d, lv);
                let mut want = brute(d, top);
                assert_eq!(blocks.len(), want.len(), "{basis:?} d={d} n={n}");
                assert_eq!(count_blocks(d, lv), want.len() as u128);
                let mut got: Vec<Vec<u32>> = (0..blocks.len()).map(|b| levels(&blocks, b, d, top)).collect();
                for (b, blk) in blocks.iter().enumerate() {
                    assert_eq!(blk.shell as u32, got[b].iter().sum::<u32>());
                    assert_eq!(blk.bits as u32, got[b].iter().map(|&k| lv.width_bits(k)).sum::<u32>());
                    assert!(b == 0 || (blk.parent as usize) < b);
                }
                // Column order: by shell, then lexicographic in the non-zero
                // (dimension, level) pairs; blocks tile the columns.
                let key = |j: &Vec<u32>| {
                    let pairs: Vec<(usize, u32)> = j.iter().copied().enumerate().filter(|p| p.1 > 0).collect();
                    (j.iter().sum::<u32>(), pairs)
                };
                assert!(got.windows(2).all(|w| key(&w[0]) < key(&w[1])), "{basis:?} d={d} n={n}");
                assert!(blocks.windows(2).all(|w| w[0].offset + w[0].size() == w[1].offset));
                got.sort();
                want.sort();
                assert_eq!(got, want);
                let sizes: u64 = want.iter().map(|j| 1u64 << j.iter().map(|&k| lv.width_bits(k)).sum::<u32>()).sum();
                assert_eq!(count_features(d, lv), sizes as u128);
                let last = blocks.last().unwrap();
                assert_eq!(last.offset + last.size(), sizes);
            }
        }
        // The paper set is empty at level 0.
        let empty = Levels::new(EofBasis::Paper, 0);
        assert_eq!((count_blocks(3, empty), count_features(3, empty), enumerate(3, empty).len()), (0, 0, 0));
    }

    #[test]
    fn counts_saturate() {
        let (c, p) = (|n| Levels::new(EofBasis::Boundary, n), |n| Levels::new(EofBasis::Paper, n));
        assert_eq!(count_features(1, c(5)), 17);
        assert_eq!(count_features(1, p(5)), 31);
        assert_eq!(count_blocks(10, c(3)), 286);
        assert_eq!(count_blocks(10, p(4)), 286);
        assert_eq!(count_blocks(usize::MAX, c(32)), u128::MAX);
        assert_eq!(count_features(usize::MAX, c(32)), u128::MAX);
        assert_eq!(count_features(usize::MAX, p(32)), u128::MAX);
        // 2^200 overflows u128 (the shift itself must saturate).
        assert_eq!(count_features(1, p(200)), u128::MAX);
    }

    #[test]
    fn subset_has_the_requested_size_and_ranks_are_dense() {
        for (total, keep) in [(1u64, 1u64), (10, 3), (64, 64), (1000, 999), (4097, 1234)] {
            let s = Subset::sample(total, keep, 9);
            let members: Vec<u64> = (0..total).filter(|&p| s.rank(p).is_some()).collect();
            assert_eq!(members.len() as u64, keep);
            for (r, &p) in members.iter().enumerate() {
                assert_eq!(s.rank(p), Some(r as u32));
            }
            assert_eq!(s.count_in(0, total), keep);
            for a in (0..total).step_by(7) {
                for len in [0, 1, 5, 63, 64, 65, 130] {
                    let len = len.min(total - a);
                    let want = members.iter().filter(|&&p| p >= a && p < a + len).count() as u64;
                    assert_eq!(s.count_in(a, len), want, "{a} + {len}");
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
