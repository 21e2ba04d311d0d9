//! What all Fourier maps share: the output stage (pairs or phase form), the
//! scalar abstraction of the f64 and f32 paths, and the row tiling of a
//! transform call.

use crate::error::Result;
use crate::sampling;
use crate::spec::{Form, Tensors};
use crate::stored;
use kapprox_core::{Par, dense, fastmath};
use ndarray::{Array2, ArrayView2, ArrayViewMut2, Axis, s};
use num_traits::Float;

/// The two scalar types a map transforms, with the kernels that differ.
pub(crate) trait Real: Float + Default + Send + Sync + std::fmt::Debug + 'static {
    /// `c = a · b` (sequential: the pipeline parallelises over row blocks).
    fn gemm(c: ArrayViewMut2<'_, Self>, a: ArrayView2<'_, Self>, b: ArrayView2<'_, Self>);
    /// The pairs form in place (see [`fastmath::sincos_scaled_in_place`]).
    fn sincos_scaled(c: &mut [Self], s: &mut [Self], scale: f64);
    /// The phase form in place (see [`fastmath::cos_shifted_scaled_in_place`]).
    fn cos_shifted_scaled(x: &mut [Self], shift: &[f64], scale: f64);
}

impl Real for f64 {
    fn gemm(c: ArrayViewMut2<'_, f64>, a: ArrayView2<'_, f64>, b: ArrayView2<'_, f64>) {
        dense::matmul_into(c, a, b, 1.0, false, Par::Seq);
    }
    fn sincos_scaled(c: &mut [f64], s: &mut [f64], scale: f64) {
        fastmath::sincos_scaled_in_place(c, s, scale);
    }
    fn cos_shifted_scaled(x: &mut [f64], shift: &[f64], scale: f64) {
        fastmath::cos_shifted_scaled_in_place(x, shift, scale);
    }
}

impl Real for f32 {
    fn gemm(c: ArrayViewMut2<'_, f32>, a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>) {
        gemm_f32(c, a, b);
    }
    fn sincos_scaled(c: &mut [f32], s: &mut [f32], scale: f64) {
        fastmath::sincos_scaled_in_place_f32(c, s, scale);
    }
    fn cos_shifted_scaled(x: &mut [f32], shift: &[f64], scale: f64) {
        fastmath::cos_shifted_scaled_in_place_f32(x, shift, scale);
    }
}

/// Single-precision GEMM through faer (kapprox-core's wrappers are f64).
fn gemm_f32(mut c: ArrayViewMut2<'_, f32>, a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>) {
    assert_eq!(a.ncols(), b.nrows(), "gemm: inner dimensions {} and {}", a.ncols(), b.nrows());
    assert_eq!((c.nrows(), c.ncols()), (a.nrows(), b.ncols()), "gemm: output shape");
    let (sa, sb) = (a.strides(), b.strides());
    let sc = c.strides().to_vec();
    // SAFETY: pointers, shapes and strides come from live ndarray views that
    // outlive the faer views; the mutable view is borrowed exclusively.
    let (fa, fb, fc) = unsafe {
        (
            faer::MatRef::from_raw_parts(a.as_ptr(), a.nrows(), a.ncols(), sa[0], sa[1]),
            faer::MatRef::from_raw_parts(b.as_ptr(), b.nrows(), b.ncols(), sb[0], sb[1]),
            faer::MatMut::from_raw_parts_mut(c.as_mut_ptr(), c.nrows(), c.ncols(), sc[0], sc[1]),
        )
    };
    faer::linalg::matmul::matmul(fc, faer::Accum::Replace, fa, fb, 1.0f32, Par::Seq);
}

/// The output stage of a Fourier map: turns `n_freq` projections `w·x`
/// into `l` features.
///
/// - pairs: `z = √(2/l)·[cos(Wx), sin(Wx)]`, `n_freq = l/2`;
/// - phase: `z = √(2/l)·cos(Wx + b)`, `n_freq = l`.
#[derive(Clone, Debug)]
pub(crate) struct Trig {
    form: Form,
    n_components: usize,
    scale: f64,
    phase: Vec<f64>,
}

impl Trig {
    /// `n_components` must be positive (and even for pairs; callers check).
    pub(crate) fn new(form: Form, n_components: usize, seed: u64) -> Self {
        let scale = (2.0 / n_components as f64).sqrt();
        let phase = match form {
            Form::Pairs => Vec::new(),
            Form::Phase => (0..n_components).map(|j| sampling::phase(seed, j)).collect(),
        };
        Trig { form, n_components, scale, phase }
    }

    /// The output stage with stored phases (see [`crate::stored`]).
    ///
    /// # Errors
    /// Phases that are not one finite number per feature in the phase form.
    pub(crate) fn restore(form: Form, n_components: usize, tensors: &Tensors, map: &'static str) -> Result<Self> {
        let scale = (2.0 / n_components as f64).sqrt();
        let phase = stored::phases(tensors, map, n_components, form == Form::Phase)?;
        Ok(Trig { form, n_components, scale, phase })
    }

    /// Adds the phases of the phase form to `out` (nothing for pairs).
    pub(crate) fn store(&self, out: &mut Tensors) {
        if self.form == Form::Phase {
            out.insert(stored::PHASES.to_string(), stored::row(&self.phase));
        }
    }

    pub(crate) fn n_freq(&self) -> usize {
        match self.form {
            Form::Pairs => self.n_components / 2,
            Form::Phase => self.n_components,
        }
    }

    pub(crate) fn parameter_bytes(&self) -> usize {
        self.phase.len() * 8
    }

    /// `row` (length `l`) holds the projections in its first `n_freq`
    /// entries; on return it holds the features.
    #[inline]
    pub(crate) fn apply<T: Real>(&self, row: &mut [T]) {
        debug_assert_eq!(row.len(), self.n_components);
        match self.form {
            Form::Pairs => {
                let (c, s) = row.split_at_mut(self.n_components / 2);
                T::sincos_scaled(c, s, self.scale);
            }
            Form::Phase => T::cos_shifted_scaled(row, &self.phase, self.scale),
        }
    }
}

/// Calls `f(x_tile, out_tile)` on consecutive tiles of at most `tile_rows`
/// rows, where `out_tile` always has contiguous rows (unit column stride).
/// If `out` does not, the tiles go through one scratch buffer per call.
pub(crate) fn for_each_tile<T: Real>(
    x: ArrayView2<'_, T>,
    mut out: ArrayViewMut2<'_, T>,
    tile_rows: usize,
    mut f: impl FnMut(ArrayView2<'_, T>, ArrayViewMut2<'_, T>),
) {
    let n = x.nrows();
    let tile_rows = tile_rows.max(1);
    let contiguous = out.ncols() <= 1 || out.strides()[1] == 1;
    let mut scratch = if contiguous { None } else { Some(Array2::<T>::zeros((tile_rows.min(n), out.ncols()))) };
    let mut r0 = 0;
    while r0 < n {
        let r1 = (r0 + tile_rows).min(n);
        let xt = x.slice(s![r0..r1, ..]);
        match scratch.as_mut() {
            None => f(xt, out.slice_mut(s![r0..r1, ..])),
            Some(buf) => {
                let mut bt = buf.slice_mut(s![0..r1 - r0, ..]);
                f(xt, bt.view_mut());
                out.slice_mut(s![r0..r1, ..]).assign(&bt);
            }
        }
        r0 = r1;
    }
}

/// Applies the output stage to every row of a tile with contiguous rows.
pub(crate) fn apply_rows<T: Real>(trig: &Trig, mut out: ArrayViewMut2<'_, T>) {
    for mut row in out.axis_iter_mut(Axis(0)) {
        trig.apply(row.as_slice_mut().expect("tiles have contiguous rows"));
    }
}

/// Defines a function generic over [`Real`] whose body is compiled for
/// AVX-512, AVX2+FMA and the baseline, picked at run time: kapprox is not
/// built with `target-cpu=native`, and the element-wise loops of the
/// structured maps (signs, permutation gathers, scaling, hashing) only
/// vectorise well with the wider sets. What the body calls must be
/// `#[inline(always)]` to be compiled into the wrappers.
macro_rules! multiversion {
    ($(#[$meta:meta])* $vis:vis fn $name:ident<$t:ident: Real>($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$meta])*
        $vis fn $name<$t: $crate::fourier::Real>($($arg: $ty),*) {
            #[inline(always)]
            fn imp<$t: $crate::fourier::Real>($($arg: $ty),*) $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512dq")]
                fn v4<$t: $crate::fourier::Real>($($arg: $ty),*) {
                    imp($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn v3<$t: $crate::fourier::Real>($($arg: $ty),*) {
                    imp($($arg),*)
                }
                match $crate::fourier::simd_level() {
                    // SAFETY: the CPU supports the features v4 is compiled for.
                    $crate::fourier::SimdLevel::V4 => return unsafe { v4($($arg),*) },
                    // SAFETY: as above.
                    $crate::fourier::SimdLevel::V3 => return unsafe { v3($($arg),*) },
                    $crate::fourier::SimdLevel::Baseline => {}
                }
            }
            imp($($arg),*)
        }
    };
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) {
            #[inline(always)]
            fn imp($($arg: $ty),*) $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512dq")]
                fn v4($($arg: $ty),*) {
                    imp($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn v3($($arg: $ty),*) {
                    imp($($arg),*)
                }
                match $crate::fourier::simd_level() {
                    // SAFETY: the CPU supports the features v4 is compiled for.
                    $crate::fourier::SimdLevel::V4 => return unsafe { v4($($arg),*) },
                    // SAFETY: as above.
                    $crate::fourier::SimdLevel::V3 => return unsafe { v3($($arg),*) },
                    $crate::fourier::SimdLevel::Baseline => {}
                }
            }
            imp($($arg),*)
        }
    };
}
pub(crate) use multiversion;

/// The instruction sets [`multiversion`] picks from.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SimdLevel {
    /// AVX-512 F and DQ (64-bit integer multiply and conversions).
    V4,
    /// AVX2 and FMA.
    V3,
    /// The x86-64 baseline (SSE2).
    Baseline,
}

/// The best [`SimdLevel`] of this CPU (detection is cached by std).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn simd_level() -> SimdLevel {
    if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512dq") {
        SimdLevel::V4
    } else if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        SimdLevel::V3
    } else {
        SimdLevel::Baseline
    }
}

/// Checks the shapes of a transform call.
#[track_caller]
pub(crate) fn check_shapes(n_input: usize, n_output: usize, x: (usize, usize), out: (usize, usize)) {
    assert_eq!(x.1, n_input, "transform: x has {} columns, the map takes {n_input}", x.1);
    assert_eq!(out, (x.0, n_output), "transform: out has shape {out:?}, expected ({}, {n_output})", x.0);
}
