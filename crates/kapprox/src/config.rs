//! Validated configurations built from the raw command-line arguments.
//!
//! Parsing errors are reported here, before any data is touched, with the
//! flag and the offending value.

use crate::cli::{MapArgs, NanArg, ReadArgs, ScaleArg};
use anyhow::{Result, bail};
use kapprox_features::{Form, Kernel, MapSpec};
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

/// The feature-map part of a command line, validated except for σ.
#[derive(Clone, Debug)]
pub struct MapConfig {
    /// Canonical map name.
    pub name: String,
    /// Kernel name.
    pub kernel: String,
    /// Matérn ν.
    pub nu: f64,
    /// RFF form.
    pub form: Form,
    /// Output features l.
    pub n_components: usize,
    /// Seed.
    pub seed: u64,
}

impl MapConfig {
    /// Validates `--map`, `--kernel`, `--form`.
    pub fn from_args(a: &MapArgs) -> Result<Self> {
        let name = match a.map.as_str() {
            "rff" | "rff-gaussian" => "rff",
            other => bail!("--map: unknown map {other:?} (expected rff)"),
        };
        let form = match a.form.as_str() {
            "pairs" => Form::Pairs,
            "phase" => Form::Phase,
            other => bail!("--form: {other:?} is not pairs or phase"),
        };
        if a.features == 0 {
            bail!("--features: must be at least 1");
        }
        Ok(MapConfig {
            name: name.into(),
            kernel: a.kernel.clone(),
            nu: a.nu,
            form,
            n_components: a.features,
            seed: a.seed,
        })
    }

    /// The map spec for one bandwidth on `n_input` columns.
    pub fn spec(&self, sigma: f64, n_input: usize) -> Result<MapSpec> {
        let kernel = match self.kernel.as_str() {
            "gaussian" => Kernel::Gaussian { sigma },
            "laplacian" => Kernel::Laplacian { sigma },
            "cauchy" => Kernel::Cauchy { sigma },
            "matern" => Kernel::Matern { nu: self.nu, sigma },
            other => bail!("--kernel: unknown kernel {other:?} (expected gaussian, laplacian, cauchy or matern)"),
        };
        Ok(MapSpec::rff(kernel, self.form, n_input, self.n_components, self.seed))
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

/// Which scaler to build from the column statistics.
pub fn scale_kind(a: ScaleArg) -> ScaleArg {
    a
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
