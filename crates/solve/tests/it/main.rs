//! Integration tests of kapprox-solve against independent references:
//! least squares by QR on explicitly built data matrices, explicit k-fold
//! refits, closed-form metrics, and dense eigensolvers.

mod classify;
mod krr;
mod metrics;
mod ridge;
mod select;
mod util;
