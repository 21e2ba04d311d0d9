//! One schema for shards written by different writers: columns are matched
//! by name, and types of the same kind are reconciled.

use crate::error::{IoError, Result};
use arrow::datatypes::{DataType, Schema};
use std::path::Path;

/// How the reader treats a column type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Read as a number: boolean, every integer width, float16/32/64,
    /// decimal, and dictionaries of these.
    Number,
    /// Date, time, timestamp or duration: read as a number (units since the
    /// epoch or midnight) only when selected explicitly.
    Temporal,
    /// Strings and dictionaries of strings: categorical or excluded.
    Text,
    /// Anything else (lists, structs, binary): excluded or kept only.
    Other,
}

/// The kind of an Arrow type.
pub(crate) fn kind(dt: &DataType) -> Kind {
    use DataType::*;
    match dt {
        Boolean | Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 | Float16 | Float32 | Float64
        | Decimal32(..) | Decimal64(..) | Decimal128(..) | Decimal256(..) => Kind::Number,
        Date32 | Date64 | Timestamp(..) | Time32(_) | Time64(_) | Duration(_) => Kind::Temporal,
        Utf8 | LargeUtf8 | Utf8View => Kind::Text,
        Dictionary(_, v) => match kind(v) {
            Kind::Other => Kind::Other,
            k => k,
        },
        _ => Kind::Other,
    }
}

/// Checks that a shard has the reference shard's columns (in any order)
/// with types of the same kind: `int32` and `int64`, `float` and `double`,
/// `utf8` and a dictionary of strings reconcile; a number and a string do
/// not. Nullability and field metadata may differ.
///
/// # Errors
/// [`IoError::SchemaMismatch`] naming the shard, the reference shard and
/// the first column that is missing, extra or of another kind.
pub(crate) fn reconcile(reference: &Path, expected: &Schema, path: &Path, found: &Schema) -> Result<()> {
    let mismatch = |column: &str, e: Option<&DataType>, f: Option<&DataType>| IoError::SchemaMismatch {
        path: path.to_path_buf(),
        reference: reference.to_path_buf(),
        column: column.to_string(),
        expected: e.cloned(),
        found: f.cloned(),
    };
    for fe in expected.fields() {
        let Ok(ff) = found.field_with_name(fe.name()) else {
            return Err(mismatch(fe.name(), Some(fe.data_type()), None));
        };
        let (ke, kf) = (kind(fe.data_type()), kind(ff.data_type()));
        let same = ke == kf && (ke != Kind::Other || fe.data_type() == ff.data_type());
        if !same {
            return Err(mismatch(fe.name(), Some(fe.data_type()), Some(ff.data_type())));
        }
    }
    if let Some(extra) = found.fields().iter().find(|f| expected.field_with_name(f.name()).is_err()) {
        return Err(mismatch(extra.name(), None, Some(extra.data_type())));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{Field, TimeUnit};

    fn schema(fields: &[(&str, DataType)]) -> Schema {
        Schema::new(fields.iter().map(|(n, t)| Field::new(*n, t.clone(), true)).collect::<Vec<_>>())
    }

    #[test]
    fn kinds() {
        use DataType::*;
        assert_eq!(kind(&Decimal128(10, 2)), Kind::Number);
        assert_eq!(kind(&Dictionary(Box::new(Int32), Box::new(Utf8))), Kind::Text);
        assert_eq!(kind(&Dictionary(Box::new(Int8), Box::new(Float64))), Kind::Number);
        assert_eq!(kind(&Timestamp(TimeUnit::Microsecond, None)), Kind::Temporal);
        assert_eq!(kind(&Binary), Kind::Other);
    }

    #[test]
    fn order_and_widths_reconcile_kinds_do_not() {
        use DataType::*;
        let a = schema(&[("x", Int32), ("s", Utf8), ("y", Float64)]);
        let b = schema(&[("y", Float32), ("x", Int64), ("s", Dictionary(Box::new(Int32), Box::new(LargeUtf8)))]);
        reconcile(Path::new("a"), &a, Path::new("b"), &b).unwrap();
        let c = schema(&[("x", Utf8), ("s", Utf8), ("y", Float64)]);
        let e = reconcile(Path::new("a"), &a, Path::new("c"), &c).unwrap_err().to_string();
        assert!(e.starts_with(r#"c: column "x": expected type Int32 as in a, found type Utf8"#), "{e}");
        let d = schema(&[("x", Int32), ("y", Float64)]);
        let e = reconcile(Path::new("a"), &a, Path::new("d"), &d).unwrap_err().to_string();
        assert!(e.contains(r#"column "s""#) && e.contains("no such column"), "{e}");
        let e = reconcile(Path::new("d"), &d, Path::new("a"), &a).unwrap_err().to_string();
        assert!(e.contains(r#"column "s""#), "{e}");
    }
}
