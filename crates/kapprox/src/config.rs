//! Validated configurations built from the raw command-line arguments.
//!
//! Parsing errors are reported here, before any data is touched, with the
//! flag and the offending value.

use crate::cli::{MapArgs, NanArg, ReadArgs};
use crate::fit::method::{KernelFamily, Method};
use anyhow::{Result, bail};
use kapprox_features::eof::{EofBasis, EofKernel, EofSize, EofSubset};
use kapprox_features::tefm::{Strategy, TefmKind, choose_strategy};
use kapprox_features::{Form, MapKind};
use kapprox_io::{LabelSpec, NanPolicy};

/// A bandwidth candidate: a number, or a multiple of the median rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SigmaSpec {
    /// σ given explicitly.
    Value(f64),
    /// σ = factor × median pairwise distance of a row sample.
    Auto(f64),
}

impl SigmaSpec {
    /// Resolves against the median distance (when needed).
    pub fn resolve(self, median: Option<f64>) -> f64 {
        match self {
            SigmaSpec::Value(v) => v,
            SigmaSpec::Auto(f) => f * median.expect("median distance computed when auto bandwidths are used"),
        }
    }
}

/// Parses `--sigma`: comma-separated numbers, `auto`, or `auto*F`.
pub fn parse_sigmas(text: &str) -> Result<Vec<SigmaSpec>> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim) {
        let spec = if part == "auto" {
            SigmaSpec::Auto(1.0)
        } else if let Some(f) = part.strip_prefix("auto*") {
            SigmaSpec::Auto(positive(f, "--sigma")?)
        } else {
            SigmaSpec::Value(positive(part, "--sigma")?)
        };
        if out.contains(&spec) {
            bail!("--sigma: {part:?} is listed twice");
        }
        out.push(spec);
    }
    Ok(out)
}

fn positive(text: &str, flag: &str) -> Result<f64> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => bail!("{flag}: {text:?} is not a positive number"),
    }
}

/// Parses a byte size such as `512M`, `4G`, `1.5GiB` or `1000000`.
pub fn parse_bytes(text: &str) -> Result<u64> {
    let t = text.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.trim().parse().map_err(|_| anyhow::anyhow!("--max-memory: {text:?} is not a size like 4G"))?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" | "tib" => 1024.0f64.powi(4),
        _ => bail!("--max-memory: unknown unit {unit:?} in {text:?} (use K, M, G or T)"),
    };
    Ok((v * mult) as u64)
}

/// `--label`.
pub fn label_spec(text: &str) -> LabelSpec {
    match text {
        "last" => LabelSpec::Last,
        "auto" => LabelSpec::Hint,
        name => LabelSpec::Name(name.to_string()),
    }
}

/// `--nan`.
pub fn nan_policy(arg: NanArg) -> NanPolicy {
    match arg {
        NanArg::Refuse => NanPolicy::Refuse,
        NanArg::Skip => NanPolicy::Skip,
    }
}

/// TEFM's one-pass budget when `--max-memory` is not given.
pub const DEFAULT_TEFM_BUDGET: u64 = 8 << 30;

/// Validates the map flags into a [`Method`] (everything but σ).
///
/// `n_targets` and `max_memory` feed TEFM's cost model.
pub fn method_from_args(a: &MapArgs, n_targets: usize, max_memory: Option<u64>) -> Result<Method> {
    if a.features == 0 {
        bail!("--features: must be at least 1");
    }
    let form = match a.form.as_deref() {
        None => None,
        Some("pairs") => Some(Form::Pairs),
        Some("phase") => Some(Form::Phase),
        Some(other) => bail!("--form: {other:?} is not pairs or phase"),
    };
    let name = a.map.to_ascii_lowercase();
    let only = |flag: &str, set: bool, maps: &str| -> Result<()> {
        if set {
            bail!("--{flag} applies to {maps}, not to --map {name}");
        }
        Ok(())
    };
    let tefm_kind = match name.as_str() {
        "tefm-g" | "tefm" => Some(TefmKind::Gaussian),
        "tefm-s" => Some(TefmKind::Srht),
        "tefm-c" => Some(TefmKind::CountSketch),
        _ => None,
    };
    if tefm_kind.is_none() {
        only("sketch-features", a.sketch_features.is_some(), "tefm-g, tefm-s and tefm-c")?;
    }
    if name != "eof" {
        only("level", a.level.is_some(), "eof")?;
        only("eof-basis", a.eof_basis.is_some(), "eof")?;
        only("eof-subset", a.eof_subset.is_some(), "eof")?;
    }
    if let Some(sketch) = tefm_kind {
        let base = match a.base.as_str() {
            "nystrom" | "nystroem" => crate::fit::method::NYSTROM_BASE.to_string(),
            other => {
                let kind: MapKind = other.parse()?;
                if matches!(kind, MapKind::Binning) {
                    bail!("--base: TEFM needs a dense base map, not binning");
                }
                kind.name().to_string()
            }
        };
        let l = a.features;
        let d = a.sketch_features.unwrap_or(4 * l);
        if d < l {
            bail!("--sketch-features: {d} is smaller than --features {l}; TEFM compresses d base features to l");
        }
        let strategy = match a.tefm_strategy.as_str() {
            "one-pass" => Strategy::OnePass,
            "multi-pass" => Strategy::MultiPass,
            "auto" => choose_strategy(d, l, a.power, n_targets, max_memory.unwrap_or(DEFAULT_TEFM_BUDGET)),
            other => bail!("--tefm-strategy: {other:?} is not auto, one-pass or multi-pass"),
        };
        return Ok(Method::Tefm {
            sketch,
            base,
            kernel: KernelFamily::parse(&a.kernel, a.nu)?,
            form,
            n_components: l,
            sketch_features: d,
            power: a.power,
            strategy,
        });
    }
    match name.as_str() {
        "nystrom" | "nystroem" => {
            only("form", form.is_some(), "the Fourier maps")?;
            if !(a.rel_tol >= 0.0 && a.rel_tol < 1.0) {
                bail!("--rel-tol: {} is not in [0, 1)", a.rel_tol);
            }
            Ok(Method::Nystrom {
                kernel: KernelFamily::parse(&a.kernel, a.nu)?,
                n_landmarks: a.features,
                rel_tol: a.rel_tol,
            })
        }
        "eof" => {
            only("form", form.is_some(), "the Fourier maps")?;
            let kernel = match a.kernel.as_str() {
                "laplacian" | "laplace" | "gaussian" => EofKernel::Laplace,
                "sobolev" => EofKernel::Sobolev,
                other => bail!("--kernel: eof supports laplacian and sobolev, not {other:?}"),
            };
            let size = match a.level {
                Some(n) => EofSize::Level(n),
                None => EofSize::Budget(a.features),
            };
            let basis = match a.eof_basis.as_deref() {
                None | Some("centred") => EofBasis::Centred,
                Some("boundary") => EofBasis::Boundary,
                Some(_) => EofBasis::Paper,
            };
            let subset = match a.eof_subset.as_deref() {
                Some("uniform") => EofSubset::Uniform,
                _ => EofSubset::Nested,
            };
            Ok(Method::Eof { kernel, size, basis, subset })
        }
        _ => {
            let kind: MapKind = name.parse()?;
            Ok(Method::Independent {
                kind: kind.name().to_string(),
                kernel: KernelFamily::parse(&a.kernel, a.nu)?,
                form,
                n_components: a.features,
                grids: a.grids,
                inner: a.inner,
            })
        }
    }
}

/// Reading options common to every command.
#[derive(Clone, Debug)]
pub struct ReadConfig {
    /// Label column choice.
    pub label: LabelSpec,
    /// Rows per chunk.
    pub chunk_rows: usize,
    /// NaN policy.
    pub nan: NanPolicy,
}

impl ReadConfig {
    /// Validates the shared reading flags.
    pub fn from_args(a: &ReadArgs) -> Result<Self> {
        if a.chunk_rows == 0 {
            bail!("--chunk-rows: must be at least 1");
        }
        Ok(ReadConfig { label: label_spec(&a.label), chunk_rows: a.chunk_rows, nan: nan_policy(a.nan) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigma_lists() {
        assert_eq!(
            parse_sigmas("auto*0.5, auto,2").unwrap(),
            vec![SigmaSpec::Auto(0.5), SigmaSpec::Auto(1.0), SigmaSpec::Value(2.0)]
        );
        assert!(parse_sigmas("0").unwrap_err().to_string().contains("\"0\" is not a positive number"));
        assert!(parse_sigmas("auto*x").is_err());
        assert!(parse_sigmas("1,1").is_err());
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_bytes("4G").unwrap(), 4 << 30);
        assert_eq!(parse_bytes("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_bytes("1000").unwrap(), 1000);
        assert!(parse_bytes("4Q").is_err());
    }
}
