//! Integration tests of kapprox-io, one module per area.

mod convert;
mod output;
mod reader;
mod real_data;
mod util;
mod writer;
