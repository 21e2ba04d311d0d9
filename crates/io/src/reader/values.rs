//! Arrow arrays as numbers and categories.
//!
//! Numbers: booleans, every integer width, float16/32/64 are read as they
//! are; decimals (value / 10^scale), dictionaries of numbers, and dates and
//! times (days or time units since the epoch or midnight) are cast first.
//! Categories: strings and dictionaries of strings are read as they are;
//! any other type by its text (`cast` to `Utf8`).

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use arrow::buffer::NullBuffer;
use arrow::compute::{CastOptions, cast_with_options};
use arrow::datatypes::{self as adt, DataType};
use arrow::error::ArrowError;

/// Casts an array to a type [`NumColumn::new`] reads directly.
pub(crate) fn to_numeric(a: &ArrayRef) -> Result<ArrayRef, ArrowError> {
    use DataType::*;
    let target = match a.data_type() {
        Boolean | Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 | Float16 | Float32 | Float64 => {
            return Ok(a.clone());
        }
        Decimal32(..) | Decimal64(..) | Decimal128(..) | Decimal256(..) => Float64,
        Dictionary(_, v) => {
            let values = cast_with_options(a, v, &STRICT)?;
            return to_numeric(&values);
        }
        Date32 | Time32(_) => Int32,
        Date64 | Timestamp(..) | Time64(_) | Duration(_) => Int64,
        other => return Err(ArrowError::CastError(format!("cannot read type {other} as a number"))),
    };
    cast_with_options(a, &target, &STRICT)
}

/// Casts fail instead of producing nulls.
const STRICT: CastOptions<'static> =
    CastOptions { safe: false, format_options: arrow::util::display::FormatOptions::new() };

type F16 = <adt::Float16Type as adt::ArrowPrimitiveType>::Native;

/// A numeric Arrow column, downcast once per batch.
pub(crate) struct NumColumn<'a> {
    values: NumValues<'a>,
    nulls: Option<&'a NullBuffer>,
}

enum NumValues<'a> {
    F64(&'a [f64]),
    F32(&'a [f32]),
    F16(&'a [F16]),
    I8(&'a [i8]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    Bool(&'a BooleanArray),
}

impl<'a> NumColumn<'a> {
    /// Views a column of a type [`to_numeric`] returns; `None` for other
    /// types.
    pub(crate) fn new(a: &'a ArrayRef) -> Option<NumColumn<'a>> {
        use NumValues::*;
        let values = match a.data_type() {
            DataType::Float64 => F64(a.as_primitive::<adt::Float64Type>().values()),
            DataType::Float32 => F32(a.as_primitive::<adt::Float32Type>().values()),
            DataType::Float16 => F16(a.as_primitive::<adt::Float16Type>().values()),
            DataType::Int8 => I8(a.as_primitive::<adt::Int8Type>().values()),
            DataType::Int16 => I16(a.as_primitive::<adt::Int16Type>().values()),
            DataType::Int32 => I32(a.as_primitive::<adt::Int32Type>().values()),
            DataType::Int64 => I64(a.as_primitive::<adt::Int64Type>().values()),
            DataType::UInt8 => U8(a.as_primitive::<adt::UInt8Type>().values()),
            DataType::UInt16 => U16(a.as_primitive::<adt::UInt16Type>().values()),
            DataType::UInt32 => U32(a.as_primitive::<adt::UInt32Type>().values()),
            DataType::UInt64 => U64(a.as_primitive::<adt::UInt64Type>().values()),
            DataType::Boolean => Bool(a.as_boolean()),
            _ => return None,
        };
        Some(NumColumn { values, nulls: a.nulls().filter(|n| n.null_count() > 0) })
    }

    pub(crate) fn is_null(&self, i: usize) -> bool {
        self.nulls.is_some_and(|n| n.is_null(i))
    }

    /// Writes `n` values from row `src` to `out[at], out[at + stride], ...`;
    /// nulls become NaN.
    #[inline]
    pub(crate) fn write(&self, src: usize, n: usize, out: &mut [f64], at: usize, stride: usize) {
        macro_rules! copy {
            ($v:expr, $conv:expr) => {
                for (k, &v) in $v[src..src + n].iter().enumerate() {
                    out[at + k * stride] = $conv(v);
                }
            };
        }
        match &self.values {
            NumValues::F64(v) => copy!(v, |x: f64| x),
            NumValues::F32(v) => copy!(v, |x: f32| x as f64),
            NumValues::F16(v) => copy!(v, f64::from),
            NumValues::I8(v) => copy!(v, |x: i8| x as f64),
            NumValues::I16(v) => copy!(v, |x: i16| x as f64),
            NumValues::I32(v) => copy!(v, |x: i32| x as f64),
            NumValues::I64(v) => copy!(v, |x: i64| x as f64),
            NumValues::U8(v) => copy!(v, |x: u8| x as f64),
            NumValues::U16(v) => copy!(v, |x: u16| x as f64),
            NumValues::U32(v) => copy!(v, |x: u32| x as f64),
            NumValues::U64(v) => copy!(v, |x: u64| x as f64),
            NumValues::Bool(b) => {
                for k in 0..n {
                    out[at + k * stride] = if b.value(src + k) { 1.0 } else { 0.0 };
                }
            }
        }
        if let Some(nulls) = self.nulls {
            for k in 0..n {
                if nulls.is_null(src + k) {
                    out[at + k * stride] = f64::NAN;
                }
            }
        }
    }
}

/// A categorical column of one batch, ready to be looked up.
pub(crate) enum CatColumn {
    /// Strings (any offset width or view).
    Text(ArrayRef),
    /// A dictionary whose values are strings: look each value up once.
    Dictionary { keys: Vec<usize>, values: ArrayRef, nulls: Option<NullBuffer> },
}

impl CatColumn {
    /// Prepares a column of any type: strings and dictionaries of strings
    /// as they are, anything else by its text.
    pub(crate) fn new(a: &ArrayRef) -> Result<CatColumn, ArrowError> {
        use DataType::*;
        match a.data_type() {
            Utf8 | LargeUtf8 | Utf8View => Ok(CatColumn::Text(a.clone())),
            Dictionary(_, v) => {
                let dict = a.as_any_dictionary();
                let values = match v.as_ref() {
                    Utf8 | LargeUtf8 | Utf8View => dict.values().clone(),
                    _ => cast_with_options(dict.values(), &Utf8, &STRICT)?,
                };
                Ok(CatColumn::Dictionary { keys: dict.normalized_keys(), values, nulls: a.logical_nulls() })
            }
            _ => Ok(CatColumn::Text(cast_with_options(a, &Utf8, &STRICT)?)),
        }
    }

    /// Calls `f(k, value)` for rows `off..off + n` (`k` from 0; `None` for
    /// a null). A dictionary's entries are decoded once per call.
    pub(crate) fn for_each(&self, off: usize, n: usize, mut f: impl FnMut(usize, Option<&str>)) {
        match self {
            CatColumn::Text(a) => each_text(a, off, n, &mut f),
            CatColumn::Dictionary { keys, values, nulls } => {
                let mut texts: Vec<Option<String>> = Vec::with_capacity(values.len());
                each_text(values, 0, values.len(), &mut |_, v| texts.push(v.map(str::to_string)));
                for k in 0..n {
                    let r = off + k;
                    if nulls.as_ref().is_some_and(|b| b.is_null(r)) {
                        f(k, None);
                    } else {
                        f(k, texts[keys[r]].as_deref());
                    }
                }
            }
        }
    }
}

fn each_text(a: &ArrayRef, off: usize, n: usize, f: &mut impl FnMut(usize, Option<&str>)) {
    macro_rules! each {
        ($arr:expr) => {{
            let arr = $arr;
            for k in 0..n {
                let r = off + k;
                f(k, (!arr.is_null(r)).then(|| arr.value(r)));
            }
        }};
    }
    match a.data_type() {
        DataType::Utf8 => each!(a.as_string::<i32>()),
        DataType::LargeUtf8 => each!(a.as_string::<i64>()),
        DataType::Utf8View => each!(a.as_string_view()),
        _ => unreachable!("CatColumn holds strings"),
    }
}
