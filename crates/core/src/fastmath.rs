//! `sin`/`cos` over slices, the inner loop of every Fourier feature map.
//!
//! Random Fourier features spend most of their time in `l` cosines per row,
//! so these slice functions are the place to vectorise.

/// `out[i] = cos(x[i])`.
///
/// # Panics
/// `x.len() == out.len()` must hold.
pub fn cos_into(x: &[f64], out: &mut [f64]) {
    assert_eq!(x.len(), out.len());
    for (o, &v) in out.iter_mut().zip(x) {
        *o = v.cos();
    }
}

/// `x[i] = cos(x[i])` in place.
pub fn cos_in_place(x: &mut [f64]) {
    for v in x.iter_mut() {
        *v = v.cos();
    }
}

/// `s[i] = sin(x[i])`, `c[i] = cos(x[i])`.
///
/// # Panics
/// `x.len() == s.len() && x.len() == c.len()` must hold.
pub fn sincos_into(x: &[f64], s: &mut [f64], c: &mut [f64]) {
    assert_eq!(x.len(), s.len());
    assert_eq!(x.len(), c.len());
    for i in 0..x.len() {
        let (si, ci) = x[i].sin_cos();
        s[i] = si;
        c[i] = ci;
    }
}
