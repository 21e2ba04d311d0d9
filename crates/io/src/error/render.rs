//! How the parts of a message are rendered: locations, column lists, and
//! parquet, arrow and object-store errors without their noise.

use arrow::datatypes::DataType;
use std::fmt;

/// Renders `:line` when a line is known.
pub(super) struct AtLine(pub(super) Option<u64>);

impl fmt::Display for AtLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(line) => write!(f, ":{line}"),
            None => Ok(()),
        }
    }
}

/// An object-store error in words a user can act on: what it means for
/// the common cases, the store's own text otherwise.
pub(super) struct StoreProblem<'a>(pub(super) &'a object_store::Error);

impl fmt::Display for StoreProblem<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use object_store::Error as E;
        // The store's text may hold a multi-line XML body: one line.
        let text = self.0.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
        match self.0 {
            E::NotFound { .. } => write!(f, "not found (check the bucket and prefix): {text}"),
            E::PermissionDenied { .. } | E::Unauthenticated { .. } => write!(
                f,
                "access denied (check the credentials, e.g. AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY): {text}"
            ),
            _ if text.contains("NoSuchBucket") => write!(f, "bucket not found: {text}"),
            _ if ["InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "403 Forbidden"]
                .iter()
                .any(|s| text.contains(s)) =>
            {
                write!(
                    f,
                    "access denied (check the credentials, e.g. AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY): {text}"
                )
            }
            _ => f.write_str(&text),
        }
    }
}

pub(super) fn describe_type(t: Option<&DataType>) -> String {
    match t {
        Some(t) => format!("type {t}"),
        None => "no such column".to_string(),
    }
}

/// Renders `, column "x"` when a column is known.
/// A parquet or arrow error without their category prefixes ("Parquet error: ",
/// "External: ", ...): our messages carry their own context, and stacked
/// prefixes read as noise (STYLE.md).
pub(super) struct Bare<'a>(pub(super) &'a dyn fmt::Display);

impl fmt::Display for Bare<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0.to_string();
        let mut rest = text.as_str();
        // Nested errors stack prefixes ("Parquet argument error: External: ...").
        loop {
            let before = rest;
            for prefix in [
                "Parquet error: ",
                "Parquet argument error: ",
                "External error: ",
                "External: ",
                "Arrow error: ",
                "Arrow: ",
                "EOF: ",
            ] {
                rest = rest.strip_prefix(prefix).unwrap_or(rest);
            }
            if rest == before {
                break;
            }
        }
        f.write_str(rest)
    }
}

pub(super) struct InColumn<'a>(pub(super) Option<&'a str>);

impl fmt::Display for InColumn<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(c) => write!(f, ", column {c:?}"),
            None => Ok(()),
        }
    }
}

/// Renders a quoted, comma-separated list, cut after 30 names so that a
/// 784-column dataset does not flood the terminal.
pub(super) struct ColumnList<'a>(pub(super) &'a [String]);

impl fmt::Display for ColumnList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 30;
        for (i, c) in self.0.iter().take(SHOWN).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{c:?}")?;
        }
        if self.0.len() > SHOWN {
            write!(f, ", ... ({} more)", self.0.len() - SHOWN)?;
        }
        if self.0.is_empty() {
            f.write_str("(none)")?;
        }
        Ok(())
    }
}
