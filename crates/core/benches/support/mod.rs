//! What every throughput bench of kapprox-core prints: the machine, its
//! measured floating-point peak, and a table of rates as a fraction of it.
//!
//! The peak is measured, not looked up: one thread per core runs
//! independent FMA chains (enough to cover the FMA latency on both pipes)
//! in the widest vector registers this CPU has, picked at run time.

#![allow(dead_code)]

use criterion::{Bencher, Criterion};
use kapprox_core::cpu::{self, Simd};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The machine and its measured f64 FMA peak.
#[derive(Clone, Debug)]
pub(crate) struct Machine {
    pub(crate) cpu: String,
    pub(crate) simd: Simd,
    pub(crate) cores: usize,
    pub(crate) threads: usize,
    /// GFLOP/s of one core.
    pub(crate) peak_core: f64,
    /// GFLOP/s of all cores at once.
    pub(crate) peak_total: f64,
}

/// FMA chains per thread in the peak loop: 2 pipes × latency 4–5 cycles
/// needs at least 10 in flight.
const CHAINS: usize = 12;

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn fma_loop_avx2(iters: u64) -> f64 {
    use std::arch::x86_64::*;
    let mut acc = [_mm256_set1_pd(1.0); CHAINS];
    // Opaque constants: with known ones the chain can reach a fixed point
    // the compiler sees, and it folds the loop away.
    let (a, b) = (_mm256_set1_pd(std::hint::black_box(0.999_9)), _mm256_set1_pd(std::hint::black_box(1e-3)));
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = _mm256_fmadd_pd(*x, a, b);
        }
    }
    let mut out = [0.0; 4];
    // SAFETY: out has 4 doubles.
    unsafe { _mm256_storeu_pd(out.as_mut_ptr(), acc.iter().fold(_mm256_setzero_pd(), |s, &x| _mm256_add_pd(s, x))) };
    out.iter().sum()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn fma_loop_avx512(iters: u64) -> f64 {
    use std::arch::x86_64::*;
    let mut acc = [_mm512_set1_pd(1.0); 2 * CHAINS];
    let (a, b) = (_mm512_set1_pd(std::hint::black_box(0.999_9)), _mm512_set1_pd(std::hint::black_box(1e-3)));
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = _mm512_fmadd_pd(*x, a, b);
        }
    }
    _mm512_reduce_add_pd(acc.iter().fold(_mm512_setzero_pd(), |s, &x| _mm512_add_pd(s, x)))
}

fn fma_loop_portable(iters: u64) -> f64 {
    let mut acc = [1.0f64; CHAINS];
    let (a, b) = (std::hint::black_box(0.999_9), std::hint::black_box(1e-3));
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = x.mul_add(a, b);
        }
    }
    acc.iter().sum()
}

/// Flops per iteration of the peak loop and the loop itself.
fn peak_loop(simd: Simd) -> (f64, fn(u64) -> f64) {
    match simd {
        #[cfg(target_arch = "x86_64")]
        // SAFETY (of the calls): only chosen when the CPU has the feature.
        Simd::Avx512 => ((2 * CHAINS * 8 * 2) as f64, |n| unsafe { fma_loop_avx512(n) }),
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2Fma => ((CHAINS * 4 * 2) as f64, |n| unsafe { fma_loop_avx2(n) }),
        _ => ((CHAINS * 2) as f64, fma_loop_portable),
    }
}

/// GFLOP/s of `threads` threads running the peak loop at once (total).
fn measure_peak(simd: Simd, threads: usize) -> f64 {
    let (per_iter, f) = peak_loop(simd);
    // Calibrate to ~0.3 s per measurement.
    let t = Instant::now();
    std::hint::black_box(f(std::hint::black_box(1_000_000)));
    let iters = (1e6 * 0.3 / t.elapsed().as_secs_f64().max(1e-6)) as u64;
    let mut best: f64 = 0.0;
    for _ in 0..3 {
        let t = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| std::hint::black_box(f(std::hint::black_box(iters))));
            }
        });
        best = best.max(per_iter * iters as f64 * threads as f64 / t.elapsed().as_secs_f64() / 1e9);
    }
    best
}

/// Measures the peak and prints the machine.
pub(crate) fn machine() -> Machine {
    let simd = Simd::detect();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu = cpu::brand().unwrap_or_else(|| "unknown CPU".to_string());
    let peak_core = measure_peak(simd, 1);
    let peak_total = measure_peak(simd, cores);
    let threads = rayon::current_num_threads();
    let m = Machine { cpu, simd, cores, threads, peak_core, peak_total };
    println!(
        "machine: {}, {} cores, SIMD {} ({} f64 lanes), rayon threads {}",
        m.cpu,
        m.cores,
        simd.name(),
        simd.f64_lanes(),
        m.threads
    );
    println!(
        "measured f64 FMA peak: {:.1} GFLOP/s per core, {:.1} GFLOP/s on {} cores",
        m.peak_core, m.peak_total, m.cores
    );
    m
}

struct Record {
    name: String,
    flops: f64,
    threads: usize,
    /// Single-precision flops: measured against twice the f64 peak (every
    /// SIMD level has twice the f32 lanes per FMA).
    single: bool,
    seconds: Vec<f64>,
}

static RECORDS: Mutex<Vec<Record>> = Mutex::new(Vec::new());

/// Times `routine` through criterion's `iter_custom` and keeps the
/// per-iteration times for the final table (`flops` per iteration, run on
/// `threads` threads).
pub(crate) fn timed(b: &mut Bencher<'_>, name: &str, flops: f64, threads: usize, routine: impl FnMut()) {
    timed_as(b, name, flops, threads, false, routine);
}

/// [`timed`] for single-precision flops.
pub(crate) fn timed_f32(b: &mut Bencher<'_>, name: &str, flops: f64, threads: usize, routine: impl FnMut()) {
    timed_as(b, name, flops, threads, true, routine);
}

fn timed_as(b: &mut Bencher<'_>, name: &str, flops: f64, threads: usize, single: bool, mut routine: impl FnMut()) {
    b.iter_custom(|iters| {
        let t = Instant::now();
        for _ in 0..iters {
            routine();
        }
        let e: Duration = t.elapsed();
        let mut r = RECORDS.lock().unwrap();
        let per = e.as_secs_f64() / iters as f64;
        match r.iter_mut().find(|x| x.name == name) {
            Some(x) => x.seconds.push(per),
            None => r.push(Record { name: name.to_string(), flops, threads, single, seconds: vec![per] }),
        }
        e
    });
}

/// The median per-iteration time of a recorded product, in seconds.
pub(crate) fn median_seconds(name: &str) -> Option<f64> {
    let r = RECORDS.lock().unwrap();
    let x = r.iter().find(|x| x.name == name)?;
    let mut s = x.seconds.clone();
    s.sort_by(f64::total_cmp);
    Some(s[s.len() / 2])
}

/// A bench's `main`: measures the machine, runs `benches` with criterion's
/// command-line settings, then prints the table of rates.
pub(crate) fn main(benches: impl FnOnce(&mut Criterion)) {
    let machine = machine();
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
    table(&machine);
}

/// Prints the table of median rates against the peak of the threads used.
///
/// The peak is measured again first and the larger of the two measurements
/// is used: other load on the machine lowers a measurement, and a peak
/// measured too low would overstate the fraction of it.
pub(crate) fn table(m: &Machine) {
    let again = (measure_peak(m.simd, 1), measure_peak(m.simd, m.cores));
    let m = &Machine { peak_core: m.peak_core.max(again.0), peak_total: m.peak_total.max(again.1), ..m.clone() };
    println!(
        "f64 FMA peak measured again: {:.1} GFLOP/s per core, {:.1} on {} cores; using {:.1} and {:.1}",
        again.0, again.1, m.cores, m.peak_core, m.peak_total
    );
    let r = RECORDS.lock().unwrap();
    if r.is_empty() {
        return;
    }
    println!();
    println!("{:<44} {:>8} {:>10} {:>8}", "product", "threads", "GFLOP/s", "of peak");
    println!("(f32 rows: of twice the f64 peak, the f32 FMA rate)");
    for x in r.iter() {
        let mut s = x.seconds.clone();
        s.sort_by(f64::total_cmp);
        let median = s[s.len() / 2];
        let rate = x.flops / median / 1e9;
        let peak = if x.threads >= m.cores { m.peak_total } else { m.peak_core * x.threads as f64 };
        let peak = if x.single { 2.0 * peak } else { peak };
        println!("{:<44} {:>8} {:>10.1} {:>7.0}%", x.name, x.threads, rate, 100.0 * rate / peak);
    }
}
