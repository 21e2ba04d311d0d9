//! Large working buffers: written once when allocated, and on Linux backed
//! by transparent huge pages.
//!
//! Why: the statistics, the packed operands of the Gram kernel and the
//! projection's intermediates are matrices of up to a few hundred MB, each
//! streamed by the products many times. With 4 KiB pages a 134 MB matrix is
//! 32 768 pages: the first touch of each page is a fault, and a product
//! that streams several such matrices misses the TLB all along. A zeroed
//! allocation (`calloc`) is worse: it maps the shared zero page, so a
//! product's read-modify-write faults twice per page, the second time with
//! a TLB shootdown on every core. Writing the zeros here makes the first
//! touch a write, and `MADV_HUGEPAGE` asks for 2 MiB pages (honoured when
//! the system's transparent huge pages are `always` or `madvise`, ignored
//! otherwise). On a 2-core AMD EPYC, one projection of the statistics at
//! m = 4096 (`AffineProjection::apply`, a one-off harness) took 1.67–2.09 s
//! with zeroed 4 KiB pages and 1.16–1.34 s with these buffers, the
//! products themselves about 30 % faster; `cargo bench -p kapprox-core
//! --bench ridge_accumulate -- moments_project` measures it (42 % of the
//! peak before, 67 % after, docs/PERFORMANCE.md).
//!
//! The contents and the results do not depend on the page size; only the
//! time does.

use ndarray::{Array2, ShapeBuilder};
use rayon::iter::IndexedParallelIterator;

/// Buffers of at least this many bytes ask for huge pages: one 2 MiB page.
pub const HUGE_PAGE_BYTES: usize = 2 << 20;

/// `n` copies of `value`, in a buffer that asks for huge pages when it
/// holds at least [`HUGE_PAGE_BYTES`] (see the module docs). A buffer of
/// several huge pages, asked for outside the rayon pool, is written by
/// every thread of the pool, a huge page or more each: the first touch of
/// fresh memory costs the kernel a page clear (and, in a virtual machine,
/// the host a fault) that ran at about 0.85 GB/s on one core of the
/// 2-core AMD EPYC, 0.16 s for one 134 MB matrix at l = 4096 while the
/// other core waited. Inside the pool the other threads are busy, and a
/// nested split would let the caller wait on whatever long task it
/// steals, so the caller writes alone.
pub fn filled_vec<T: Clone + Send + Sync>(n: usize, value: T) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    let bytes = n * size_of::<T>();
    advise_huge_pages(v.as_mut_ptr().cast(), bytes);
    if bytes < PARALLEL_FILL_BYTES || rayon::current_thread_index().is_some() {
        v.resize(n, value);
    } else {
        // The capacity is already `n`, so the writes land in the advised
        // allocation (`collect_into_vec` only reserves what is missing).
        let per_task = HUGE_PAGE_BYTES / size_of::<T>().max(1);
        rayon::iter::repeat_n(value, n).with_min_len(per_task.max(1)).collect_into_vec(&mut v);
    }
    v
}

/// Buffers of at least this many bytes are filled in parallel: below it
/// the fork costs more than the pages.
const PARALLEL_FILL_BYTES: usize = 4 * HUGE_PAGE_BYTES;

/// A zero matrix of `shape`, column-major (`f`) or row-major, in a
/// buffer of [`filled_vec`].
pub fn zeros(shape: (usize, usize), column_major: bool) -> Array2<f64> {
    let v = filled_vec(shape.0 * shape.1, 0.0);
    let matrix = if column_major { Array2::from_shape_vec(shape.f(), v) } else { Array2::from_shape_vec(shape, v) };
    matrix.expect("the buffer holds rows × columns values")
}

/// A zero matrix of `shape` in the storage of `used` when it holds
/// enough, else a new one ([`zeros`]): a product's temporary that follows
/// another's then costs a fill of warm memory instead of a round of page
/// faults on fresh memory (0.1 s for 134 MB on the 2-core AMD EPYC).
pub fn zeros_reusing(used: Array2<f64>, shape: (usize, usize), column_major: bool) -> Array2<f64> {
    let n = shape.0 * shape.1;
    let (mut v, _) = used.into_raw_vec_and_offset();
    if v.capacity() < n {
        return zeros(shape, column_major);
    }
    v.clear();
    v.resize(n, 0.0);
    let matrix = if column_major { Array2::from_shape_vec(shape.f(), v) } else { Array2::from_shape_vec(shape, v) };
    matrix.expect("the buffer holds rows × columns values")
}

/// Asks the kernel to back the whole pages of `[start, start + bytes)`
/// with huge pages; nothing happens below [`HUGE_PAGE_BYTES`], off Linux,
/// or when the kernel declines (the advice never changes a value).
#[cfg(target_os = "linux")]
fn advise_huge_pages(start: *mut std::ffi::c_void, bytes: usize) {
    const PAGE: usize = 4096;
    if bytes < HUGE_PAGE_BYTES {
        return;
    }
    // The pages that cover the allocation, partial ones included: for an
    // allocation the allocator mapped on its own (every one this large),
    // that is its whole mapping, which the advice then leaves in one
    // piece. Advising only the whole pages inside split the mapping in
    // three, and `realloc` (`mremap`) cannot grow a split mapping: it
    // fell back to copying (0.33-0.42 s for 537 MB on the 2-core Xeon VM,
    // a scratch harness; 5 ms with the mapping whole).
    let first = (start as usize) / PAGE * PAGE;
    let end = (start as usize + bytes).next_multiple_of(PAGE);
    if end > first {
        // SAFETY: the range covers a live allocation this function's caller
        // owns, and at most parts of the two pages at its ends beyond it,
        // which are mapped memory of this process (an unmapped part makes
        // the call fail, which changes nothing). MADV_HUGEPAGE changes how
        // pages are backed, never their contents, and an error (no THP
        // support) leaves them as they were.
        let _ = unsafe { rustix::mm::madvise(first as *mut _, end - first, rustix::mm::Advice::LinuxHugepage) };
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_start: *mut std::ffi::c_void, _bytes: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_hold_what_was_asked_for_at_every_size() {
        for n in [0, 1, 1000, HUGE_PAGE_BYTES / 8 + 3] {
            let v = filled_vec(n, 1.5f64);
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|&x| x == 1.5));
        }
        let c = zeros((700, 500), true);
        assert_eq!(c.dim(), (700, 500));
        assert_eq!(c.strides(), &[1, 700]);
        assert!(c.iter().all(|&x| x == 0.0));
        let r = zeros((3, 2), false);
        assert_eq!(r.strides(), &[2, 1]);
        // Reused storage holds zeros of the new shape, whatever it held.
        let mut used = zeros((700, 500), true);
        used.fill(3.0);
        let at = used.as_ptr();
        let again = zeros_reusing(used, (500, 600), false);
        assert_eq!((again.dim(), again.strides()), ((500, 600), &[600isize, 1][..]));
        assert!(again.iter().all(|&x| x == 0.0));
        assert_eq!(again.as_ptr(), at, "the storage was not reused");
        let grown = zeros_reusing(again, (800, 800), true);
        assert_eq!(grown.dim(), (800, 800));
        assert!(grown.iter().all(|&x| x == 0.0));
    }

    /// The advice reaches the kernel: the mapping that holds a large
    /// buffer carries the `hg` (MADV_HUGEPAGE) flag in `/proc/self/smaps`,
    /// and a small one is not advised. Whether huge pages then back it is
    /// the system's choice, so that is not asserted.
    #[cfg(target_os = "linux")]
    #[test]
    fn large_buffers_are_advised_to_use_huge_pages() {
        if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists() {
            eprintln!("skipped: this kernel has no transparent huge pages");
            return;
        }
        let flags_at = |addr: usize| -> Option<String> {
            let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
            let mut inside = false;
            for line in smaps.lines() {
                let range = line.split_whitespace().next().and_then(|r| r.split_once('-'));
                let bounds = range
                    .and_then(|(a, b)| Some((usize::from_str_radix(a, 16).ok()?, usize::from_str_radix(b, 16).ok()?)));
                if let Some((a, b)) = bounds {
                    inside = (a..b).contains(&addr);
                } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
                    return Some(flags.to_string());
                }
            }
            None
        };
        let large = filled_vec(4 * HUGE_PAGE_BYTES / 8, 0.0f64);
        let flags = flags_at(large.as_ptr() as usize + HUGE_PAGE_BYTES).expect("the buffer's mapping in smaps");
        assert!(flags.split_whitespace().any(|f| f == "hg"), "no MADV_HUGEPAGE on a large buffer: {flags}");
        let small = filled_vec(1000, 0.0f64);
        let flags = flags_at(small.as_ptr() as usize).expect("the buffer's mapping in smaps");
        assert!(!flags.split_whitespace().any(|f| f == "hg"), "a small buffer was advised: {flags}");
    }
}
