//! Integration tests of kapprox-io, one module per area.

mod categorical;
mod convert;
mod interop;
mod output;
mod python;
mod reader;
mod real_data;
mod s3;
mod s3_server;
mod util;
mod writer;
