//! Gaussian random Fourier features and Fastfood on a small in-memory array,
//! with kapprox-features alone: `z(x)ᵀz(y)` approaches `k(x, y)`.

use kapprox_features::{Kernel, MapKind, MapParams};
use ndarray::Array2;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let kernel = Kernel::Gaussian { sigma: 1.5 };
    let x = Array2::from_shape_fn((6, 8), |(i, j)| ((i * 8 + j) as f64 * 0.37).sin());
    for kind in [MapKind::Rff, MapKind::Fastfood] {
        let spec = MapParams::new(kind, kernel, 8, 4096).with_seed(7).check()?;
        let map = spec.build(&Default::default())?;
        let z = map.transform(x.view()); // (6, 4096)
        let gram = z.dot(&z.t());
        let mut worst: f64 = 0.0;
        for i in 0..6 {
            for j in 0..6 {
                worst = worst.max((gram[[i, j]] - kernel.eval(x.row(i), x.row(j))).abs());
            }
        }
        println!("{kind}: {} features, largest kernel error {worst:.4}", z.ncols());
        // The error of l features is about 1/√l (here 0.016).
        assert!(worst < 0.1, "{kind}: {worst}");
    }
    Ok(())
}

#[test]
fn runs() {
    main().unwrap();
}
