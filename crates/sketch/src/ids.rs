//! Row ids of an update: a contiguous range or an explicit list.

use crate::error::{Result, SketchError};

/// The global row ids of the rows of one update.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ids<'a> {
    /// Rows `first, first + 1, ...`.
    Range(u64),
    /// One id per row.
    List(&'a [u64]),
}

impl Ids<'_> {
    /// Id of row `r` of the update (after [`Ids::check`]).
    #[inline]
    pub(crate) fn get(&self, r: usize) -> u64 {
        match *self {
            Ids::Range(first) => first + r as u64,
            Ids::List(ids) => ids[r],
        }
    }

    /// Validates the ids of an update of `n_rows` rows: one id per row, no
    /// overflow, and (if `increasing`) strictly increasing.
    pub(crate) fn check(&self, n_rows: usize, increasing: bool) -> Result<()> {
        match *self {
            Ids::Range(first) => {
                if n_rows > 0 && first.checked_add(n_rows as u64 - 1).is_none() {
                    return Err(SketchError::RowIdOverflow { first, rows: n_rows });
                }
            }
            Ids::List(ids) => {
                if ids.len() != n_rows {
                    return Err(SketchError::IdCountMismatch { rows: n_rows, ids: ids.len() });
                }
                if increasing && let Some(p) = ids.windows(2).position(|w| w[0] >= w[1]) {
                    return Err(SketchError::IdsNotIncreasing { position: p + 1, previous: ids[p], id: ids[p + 1] });
                }
            }
        }
        Ok(())
    }
}

/// Checks that `rows` has `expected` columns.
pub(crate) fn check_columns(found: usize, expected: usize) -> Result<()> {
    if found == expected { Ok(()) } else { Err(SketchError::ColumnMismatch { expected, found }) }
}

/// Checks that a parameter of two accumulators agrees before merging.
pub(crate) fn check_same(what: &'static str, left: u64, right: u64) -> Result<()> {
    if left == right { Ok(()) } else { Err(SketchError::MergeMismatch { what, left, right }) }
}

/// Which rows of one fixed block of `block_rows` global row ids are
/// buffered. Blocks are aligned to global ids: block `b` holds ids
/// `b·B .. (b+1)·B`, row id `i` sits in slot `i mod B`.
#[derive(Clone, Debug)]
pub(crate) struct PendingBlock {
    pub(crate) block_rows: usize,
    pub(crate) block: Option<u64>,
    pub(crate) filled: Vec<bool>,
    pub(crate) count: usize,
}

impl PendingBlock {
    pub(crate) fn new(block_rows: usize) -> Self {
        PendingBlock { block_rows, block: None, filled: Vec::new(), count: 0 }
    }

    /// `(block, slot)` of a global row id.
    #[inline]
    pub(crate) fn locate(&self, id: u64) -> (u64, usize) {
        let b = self.block_rows as u64;
        (id / b, (id % b) as usize)
    }

    /// Refuses ids that are already buffered in the pending block (ids of
    /// blocks already flushed cannot be checked: that would need O(n)
    /// memory).
    pub(crate) fn check_new(&self, ids: Ids<'_>, n_rows: usize) -> Result<()> {
        let Some(block) = self.block else { return Ok(()) };
        if self.count == 0 {
            return Ok(());
        }
        for r in 0..n_rows {
            let id = ids.get(r);
            let (b, slot) = self.locate(id);
            if b == block && self.filled[slot] {
                return Err(SketchError::DuplicateRow { id });
            }
        }
        Ok(())
    }

    /// Refuses a merge whose pending block overlaps this one.
    pub(crate) fn check_disjoint(&self, other: &PendingBlock) -> Result<()> {
        if self.count == 0 || other.count == 0 || self.block != other.block {
            return Ok(());
        }
        let base = self.block.unwrap_or(0) * self.block_rows as u64;
        match self.filled.iter().zip(&other.filled).position(|(a, b)| *a && *b) {
            Some(slot) => Err(SketchError::DuplicateRow { id: base + slot as u64 }),
            None => Ok(()),
        }
    }

    /// Starts buffering block `b` (the previous block must be flushed).
    pub(crate) fn start(&mut self, b: u64) {
        debug_assert_eq!(self.count, 0);
        if self.filled.len() != self.block_rows {
            self.filled = vec![false; self.block_rows];
        }
        self.block = Some(b);
    }

    /// Marks `slot` filled.
    #[inline]
    pub(crate) fn fill(&mut self, slot: usize) {
        debug_assert!(!self.filled[slot]);
        self.filled[slot] = true;
        self.count += 1;
    }

    /// Forgets the buffered rows.
    pub(crate) fn clear(&mut self) {
        if self.count > 0 {
            self.filled.iter_mut().for_each(|f| *f = false);
        }
        self.count = 0;
        self.block = None;
    }

    pub(crate) fn is_full(&self) -> bool {
        self.count == self.block_rows
    }

    /// Global ids of the buffered rows, ascending.
    pub(crate) fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        let base = self.block.unwrap_or(0) * self.block_rows as u64;
        self.filled.iter().enumerate().filter(|(_, f)| **f).map(move |(s, _)| base + s as u64)
    }
}
