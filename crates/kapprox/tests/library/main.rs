//! The library at its seam: what a front end calls, checked without the
//! command line. One module per area:
//!
//! - `architecture`: the crate graph and the rules of ARCHITECTURE.md.
//! - `fit`: the plan of passes, a fit driven pass by pass over shard
//!   subsets (in memory and through part files) against the local fit.
//! - `model`: model files round-trip, and files written by earlier
//!   versions still load and predict the same.
//! - `predict`: streamed predictions and featurized shards against the map
//!   and weights applied directly.
//! - `precision`: `--precision f32` against the f64 fit, within its bound.
//! - `observer`: progress reports cover every row of every pass.
//! - `pipeline`: decoded chunks kept by one pass and replayed by the next.
//! - `readme`: the README's library snippets are excerpts of the examples.
//! - `select`: classification selection from the statistics against
//!   explicit solves on the rows.

mod architecture;
mod fit;
mod model;
mod observer;
mod pipeline;
mod precision;
mod predict;
mod readme;
mod select;
mod util;
