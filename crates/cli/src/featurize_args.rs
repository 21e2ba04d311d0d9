//! `featurize`'s own outputs besides the features: the map file and the
//! JSON report.

use clap::Args;
use std::path::PathBuf;

/// `featurize`: where the fitted map goes, and how the report is printed.
#[derive(Debug, Args, Clone)]
pub(crate) struct FeaturizeOutputArgs {
    /// Also write the map fitted here (input columns, scaling statistics, σ, map spec) to this
    /// file; `featurize --model FILE` applies the same map to other data. Not with --model.
    #[arg(long, value_name = "FILE", conflicts_with = "model")]
    pub(crate) save_map: Option<PathBuf>,
    /// Storing the map's random parameters in the --save-map file.
    #[command(flatten)]
    pub(crate) store: crate::store_map_args::StoreMapArgs,
    /// Print the report (with the peak memory) as one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}
