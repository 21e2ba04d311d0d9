//! `convert`, `split` and `generate`: datasets in, datasets out.

use super::print_json;
use crate::args::{ConvertArgs, FormatArg, GenerateArgs, SplitArgs};
use crate::bars::Bars;
use crate::validate::{compression, convert_nan_policy, split_config};
use anyhow::{Result, bail};
use kapprox::generate::GenerateConfig;
use kapprox::io::{ConvertOptions, Delimiter, InputFormat, LabelSpec};
use std::time::Instant;

/// `kapprox convert`.
pub(crate) fn convert(a: &ConvertArgs, bars: &Bars) -> Result<()> {
    let delimiter = match a.delimiter {
        Some(d) if !d.is_ascii() => bail!("--delimiter: {d:?} is not a single ASCII character"),
        Some(d) => Some(Delimiter::Byte(d as u8)),
        None => None,
    };
    let opts = ConvertOptions::new()
        .with_format(a.format.map(|f| match f {
            FormatArg::Csv => InputFormat::Csv,
            FormatArg::Tsv => InputFormat::Tsv,
            FormatArg::Libsvm => InputFormat::Libsvm,
            FormatArg::Idx => InputFormat::Idx,
        }))
        .with_delimiter(delimiter)
        .with_header(a.header)
        .with_label(match a.label.as_str() {
            "last" => LabelSpec::Last,
            name => LabelSpec::Name(name.to_string()),
        })
        .with_labels_path(a.labels.clone())
        .with_n_features(a.n_features)
        .with_rows_per_shard(a.rows_per_shard as u64)
        .with_nan_policy(convert_nan_policy(a.nan))
        .with_compression(compression(&a.written.compression)?)
        .with_overwrite(a.overwrite);
    // The library stages the output and keeps it apart from the input and
    // the labels file (the same mechanism as every other output).
    let out = &a.out;
    let bar = bars.bar(0, "convert");
    let report = kapprox::io::convert(&a.input, out, &opts, &mut |rows| bar.set_position(rows))?;
    bar.finish_and_clear();
    if a.json {
        print_json(&report)?;
    } else {
        eprintln!(
            "wrote {} rows x {} features into {} shard(s) under {}{}",
            report.rows_written,
            report.columns.len() - usize::from(report.label.is_some()),
            report.shards.len(),
            out.display(),
            if report.rows_skipped > 0 {
                format!(" ({} rows with NaN/Inf skipped)", report.rows_skipped)
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

/// `kapprox split`.
pub(crate) fn split(a: &SplitArgs, bars: &Bars) -> Result<()> {
    // Staged by the library, each output apart from the input and the other output.
    let cfg = split_config(a);
    let r = kapprox::split::split(&cfg, bars)?;
    eprintln!(
        "wrote {} training rows to {} and {} test rows to {}",
        r.train_rows,
        cfg.train.display(),
        r.test_rows,
        cfg.test.display()
    );
    Ok(())
}

/// `kapprox generate`.
pub(crate) fn generate(a: &GenerateArgs, bars: &Bars) -> Result<()> {
    let cfg = GenerateConfig {
        rows: a.rows,
        features: a.features,
        classes: a.classes,
        rows_per_shard: a.rows_per_shard,
        seed: a.seed,
        overwrite: a.overwrite,
    };
    let out = &a.out;
    let t = Instant::now();
    let n = kapprox::generate::generate(&cfg, out, bars)?;
    eprintln!("wrote {n} rows x {} features to {} in {:.1} s", a.features, out.display(), t.elapsed().as_secs_f64());
    Ok(())
}
