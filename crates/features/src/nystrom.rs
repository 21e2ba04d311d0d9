//! Placeholder: filled in by the data-dependent maps work.
