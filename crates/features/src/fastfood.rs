//! Fastfood (Le, Sarlós, Smola, ICML 2013; paper 003 §4).
//!
//! Per block of `D` frequencies (`D` = the input dimension padded to a
//! power of two), `V = (1/(σ√D))·S H G Π H B`: `B` random signs, `H` the
//! unnormalised Walsh–Hadamard transform (never a matrix: the in-place
//! `O(D log D)` transform of [`kapprox_core::fwht`]), `Π` a random
//! permutation, `G` a Gaussian diagonal and `S` the row lengths. Rows of
//! `H G Π H B` all have length `‖G‖_F·√D`, so
//! `S_ii = s_i/‖G‖_F` with `s_i ~ χ(D)` makes each row of `V` a
//! `N(0, σ⁻² I)` vector in distribution (the paper's exponent −1/2 on
//! `‖G‖_F` in its eq. 35 is a typo). For Matérn, `s_i` is the length of a
//! multivariate Student-t vector instead (§4.4: "changing the spectrum").
//! Blocks are independent; the last one is cut to the number of
//! frequencies asked for.

use crate::error::Result;
use crate::fourier::{Real, Trig, apply_rows, check_shapes, for_each_tile};
use crate::kernel::Kernel;
use crate::map::FeatureMap;
use crate::orf::check_isotropic;
use crate::rff::check_fourier;
use crate::sampling::{self, Family};
use crate::spec::{Form, MapSpec, Tensors};
use crate::stored;
use crate::structured::{load_signed, permute_scale, store_scaled, tile_rows};
use kapprox_core::fwht::fwht_rows;
use ndarray::{Array2, ArrayView2, ArrayViewMut2};
use rand::Rng;
use rand_distr::StandardNormal;

/// The random diagonals and permutation of one block.
#[derive(Clone, Debug)]
struct Block<T> {
    /// `B`: ±1, length `D`.
    sign: Vec<T>,
    /// `Π`: `(Πv)_k = v[perm[k]]`, length `D`.
    perm: Vec<u32>,
    /// `G`, length `D`.
    gauss: Vec<T>,
    /// `S_kk/(σ√D)` including the radius `s_k/σ`, one per frequency kept.
    scale: Vec<T>,
}

impl Block<f64> {
    fn to_f32(&self) -> Block<f32> {
        let c = |v: &[f64]| v.iter().map(|&a| a as f32).collect();
        Block { sign: c(&self.sign), perm: self.perm.clone(), gauss: c(&self.gauss), scale: c(&self.scale) }
    }
}

/// A Fastfood map for the isotropic kernels (Gaussian, Matérn).
///
/// Cost per row: `2·(l_f/D)` Walsh–Hadamard transforms of length `D`
/// (`2 l_f log2 D` additions) plus `O(l_f)` for the diagonals, and `l`
/// sines/cosines; compare `d·l_f` multiply-adds for [`crate::rff::Rff`].
/// Parameter memory: `O(l_f)` (four length-`D` vectors per block), never
/// `O(l·d)`.
#[derive(Clone, Debug)]
pub struct Fastfood {
    kernel: Kernel,
    form: Form,
    n_input: usize,
    n_components: usize,
    seed: u64,
    d_pad: usize,
    blocks: Vec<Block<f64>>,
    blocks32: Vec<Block<f32>>,
    trig: Trig,
}

trait Blocks<T> {
    fn blocks(&self) -> &[Block<T>];
}

impl Blocks<f64> for Fastfood {
    fn blocks(&self) -> &[Block<f64>] {
        &self.blocks
    }
}

impl Blocks<f32> for Fastfood {
    fn blocks(&self) -> &[Block<f32>] {
        &self.blocks32
    }
}

impl Fastfood {
    /// Draws the blocks for `kernel` from `seed`.
    ///
    /// # Errors
    /// A non-isotropic kernel (Laplacian, Cauchy); invalid σ or ν; odd
    /// `n_components` in the pairs form; zero sizes.
    pub fn new(kernel: Kernel, form: Form, n_input: usize, n_components: usize, seed: u64) -> Result<Self> {
        check_fourier(&kernel, form, n_input, n_components)?;
        check_isotropic("fastfood", &kernel)?;
        let trig = Trig::new(form, n_components, seed);
        let n_freq = trig.n_freq();
        let d_pad = n_input.next_power_of_two();
        let blocks: Vec<Block<f64>> = (0..n_freq.div_ceil(d_pad))
            .map(|b| {
                let mut r = sampling::stream(seed, Family::Fastfood, b as u64);
                let sign: Vec<f64> = (0..d_pad).map(|_| if r.random::<bool>() { 1.0 } else { -1.0 }).collect();
                let mut perm: Vec<u32> = (0..d_pad as u32).collect();
                for i in (1..d_pad).rev() {
                    perm.swap(i, r.random_range(0..=i));
                }
                let gauss: Vec<f64> = (0..d_pad).map(|_| r.sample(StandardNormal)).collect();
                let g_norm = gauss.iter().map(|g| g * g).sum::<f64>().sqrt();
                let keep = d_pad.min(n_freq - b * d_pad);
                let radii: Vec<f64> = (0..d_pad).map(|_| sampling::sample_radius(&kernel, d_pad, &mut r)).collect();
                let norm = 1.0 / ((d_pad as f64).sqrt() * g_norm);
                let scale = radii[..keep].iter().map(|s| s * norm).collect();
                Block { sign, perm, gauss, scale }
            })
            .collect();
        let blocks32 = blocks.iter().map(Block::to_f32).collect();
        Ok(Fastfood { kernel, form, n_input, n_components, seed, d_pad, blocks, blocks32, trig })
    }

    /// The map of [`Fastfood::new`] from its stored parameters
    /// ([`FeatureMap::random_parameters`]) when `tensors` has any, else
    /// regenerated from `seed`.
    ///
    /// # Errors
    /// As [`Fastfood::new`]; stored parameters missing, mis-shaped, not
    /// finite, signs other than ±1, or rows of `permutation` that are not
    /// permutations of `0..D`.
    pub fn restore(
        kernel: Kernel,
        form: Form,
        n_input: usize,
        n_components: usize,
        seed: u64,
        tensors: &Tensors,
    ) -> Result<Self> {
        if tensors.is_empty() {
            return Fastfood::new(kernel, form, n_input, n_components, seed);
        }
        check_fourier(&kernel, form, n_input, n_components)?;
        check_isotropic("fastfood", &kernel)?;
        let trig = Trig::restore(form, n_components, tensors, "fastfood")?;
        let n_freq = trig.n_freq();
        let d_pad = n_input.next_power_of_two();
        let n_blocks = n_freq.div_ceil(d_pad);
        let get = |name| stored::get(tensors, "fastfood", name, (n_blocks, d_pad));
        let (sign, gauss) = (get(stored::SIGN)?, get(stored::GAUSS)?);
        stored::check_signs(stored::SIGN, sign)?;
        let perms = stored::permutations(stored::PERMUTATION, get(stored::PERMUTATION)?)?;
        let scale = stored::get(tensors, "fastfood", stored::SCALE, (1, n_freq))?;
        let blocks: Vec<Block<f64>> = perms
            .into_iter()
            .enumerate()
            .map(|(b, perm)| Block {
                sign: sign.row(b).to_vec(),
                perm,
                gauss: gauss.row(b).to_vec(),
                scale: scale.row(0).iter().skip(b * d_pad).take(d_pad).copied().collect(),
            })
            .collect();
        let blocks32 = blocks.iter().map(Block::to_f32).collect();
        Ok(Fastfood { kernel, form, n_input, n_components, seed, d_pad, blocks, blocks32, trig })
    }

    /// The input dimension padded to a power of two, `D`.
    pub fn padded_input(&self) -> usize {
        self.d_pad
    }

    /// The equivalent frequency matrix `V` restricted to the input
    /// coordinates, shape `(n_input, n_freq)` (for tests and inspection;
    /// cost `O(d · l_f log D)`).
    pub fn frequencies(&self) -> Array2<f64> {
        let d = self.n_input;
        let n_freq = self.trig.n_freq();
        let eye = Array2::<f64>::eye(d);
        let mut v = Array2::zeros((d, n_freq));
        let (mut buf, mut tmp) = (Vec::new(), Vec::new());
        self.project(eye.view(), v.view_mut(), &mut buf, &mut tmp);
        v
    }

    /// `proj = X Vᵀ`, the projections before the output stage, into the
    /// first `n_freq` columns of `out` (contiguous rows). `buf` and `tmp`
    /// are scratch, grown to `x.nrows() · D`.
    fn project<T: Real>(&self, x: ArrayView2<'_, T>, mut out: ArrayViewMut2<'_, T>, buf: &mut Vec<T>, tmp: &mut Vec<T>)
    where
        Self: Blocks<T>,
    {
        let dp = self.d_pad;
        let n = x.nrows();
        buf.resize(n * dp, T::zero());
        tmp.resize(n * dp, T::zero());
        let (buf, tmp) = (&mut buf[..n * dp], &mut tmp[..n * dp]);
        for (b, blk) in Blocks::<T>::blocks(self).iter().enumerate() {
            load_signed(x, &blk.sign, buf, dp);
            fwht_rows(buf, dp);
            permute_scale(buf, tmp, &blk.perm, &blk.gauss, dp);
            fwht_rows(tmp, dp);
            store_scaled(tmp, dp, &blk.scale, &mut out, b * dp);
        }
    }

    fn run<T: Real>(&self, x: ArrayView2<'_, T>, out: ArrayViewMut2<'_, T>)
    where
        Self: Blocks<T>,
    {
        check_shapes(self.n_input, self.n_components, x.dim(), out.dim());
        let rows = tile_rows(self.d_pad);
        let mut buf = Vec::with_capacity(rows * self.d_pad);
        let mut tmp = Vec::with_capacity(rows * self.d_pad);
        for_each_tile(x, out, rows, |xt, mut ot| {
            self.project(xt, ot.view_mut(), &mut buf, &mut tmp);
            apply_rows(&self.trig, ot);
        });
    }
}

impl FeatureMap for Fastfood {
    fn n_input(&self) -> usize {
        self.n_input
    }

    fn n_output(&self) -> usize {
        self.n_components
    }

    fn transform_into(&self, x: ArrayView2<'_, f64>, out: ArrayViewMut2<'_, f64>) {
        self.run(x, out);
    }

    fn transform_into_f32(&self, x: ArrayView2<'_, f32>, out: ArrayViewMut2<'_, f32>) {
        self.run(x, out);
    }

    fn spec(&self) -> MapSpec {
        MapSpec::Fastfood {
            kernel: self.kernel,
            form: self.form,
            n_input: self.n_input,
            n_components: self.n_components,
            seed: self.seed,
        }
    }

    fn random_parameters(&self) -> Tensors {
        let rows = |f: &dyn Fn(&Block<f64>) -> Vec<f64>| {
            let v: Vec<f64> = self.blocks.iter().flat_map(f).collect();
            Array2::from_shape_vec((self.blocks.len(), self.d_pad), v).expect("one row of D per block")
        };
        let scale: Vec<f64> = self.blocks.iter().flat_map(|b| b.scale.iter().copied()).collect();
        let mut t = Tensors::from([
            (stored::SIGN.to_string(), rows(&|b| b.sign.clone())),
            (stored::PERMUTATION.to_string(), rows(&|b| b.perm.iter().map(|&p| f64::from(p)).collect())),
            (stored::GAUSS.to_string(), rows(&|b| b.gauss.clone())),
            (stored::SCALE.to_string(), stored::row(&scale)),
        ]);
        self.trig.store(&mut t);
        t
    }

    fn parameter_bytes(&self) -> usize {
        let per = |b: &Block<f64>| b.sign.len() * 12 + b.perm.len() * 4 + b.gauss.len() * 12 + b.scale.len() * 12;
        self.blocks.iter().map(per).sum::<usize>() + self.trig.parameter_bytes()
    }
}
