//! Integration tests of kapprox-io, one module per area.

mod convert;
mod interop;
mod python;
mod reader;
mod real_data;
mod s3;
mod util;
mod writer;
