//! NumPy `.npy` files: host tensors read from format versions 1.0, 2.0 and 3.0, and written
//! as version 1.0, little-endian and in C order; arrays of strings (for models that take or
//! give them) read and written apart, as shapes and strings.
//!
//! The dtypes are those with an element type here: `<f2` (f16), `<f4` (f32), `<f8` (f64),
//! `|i1` (i8), `<i4` (i32), `<i8` (i64) and `|b1` (i1). bf16 has no NumPy dtype of its own:
//! `np.save` of an `ml_dtypes.bfloat16` array writes the two-byte void dtype `<V2` (read as
//! bf16, as is `|V2` and a `bfloat16` descr), and bf16 tensors are written as `<V2`; NumPy
//! reads them back with `np.load(path).view(ml_dtypes.bfloat16)`.

use crate::exec::bytes::{self, element_bytes};
use crate::exec::tensor::{Tensor, TensorData};
use crate::types::{ElementType, TensorType};
use std::fmt;

/// The magic string that starts every `.npy` file.
const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// The header (with the preamble before it) is padded to a multiple of this many bytes.
const ALIGN: usize = 64;

/// The dtypes read and written, with their element types.
const DTYPES: [(&str, ElementType); 15] = [
    ("<f2", ElementType::F16),
    ("<f4", ElementType::F32),
    ("<f8", ElementType::F64),
    ("|i1", ElementType::I8),
    ("<i2", ElementType::I16),
    ("<i4", ElementType::I32),
    ("<i8", ElementType::I64),
    ("|u1", ElementType::U8),
    ("<u2", ElementType::U16),
    ("<u4", ElementType::U32),
    ("<u8", ElementType::U64),
    ("|b1", ElementType::I1),
    ("<V2", ElementType::BF16),
    ("|V2", ElementType::BF16),
    ("bfloat16", ElementType::BF16),
];

/// The supported dtypes, for messages.
const SUPPORTED: &str = "'<f2' (f16), '<f4' (f32), '<f8' (f64), '|i1' (i8), '<i2' (i16), '<i4' (i32), '<i8' (i64), '|u1' (ui8), '<u2' (ui16), '<u4' (ui32), '<u8' (ui64), '|b1' (bool), '<V2' (bf16, as ml_dtypes writes it), '<V1' and '<f1' (for a parameter of an 8-, 4- or 2-bit type, as ml_dtypes writes them)";

/// Why bytes are not a readable `.npy` file, or a tensor cannot be written as one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NpyError {
    /// The bytes do not start with `\x93NUMPY`.
    #[error("not an .npy file: it does not start with the magic string \\x93NUMPY")]
    BadMagic,
    /// A format version other than 1.0, 2.0 and 3.0.
    #[error(
        "unsupported .npy format version {major}.{minor}: versions 1.0, 2.0 and 3.0 are supported"
    )]
    UnsupportedVersion {
        /// The major version byte.
        major: u8,
        /// The minor version byte.
        minor: u8,
    },
    /// The header is cut short or is not the dictionary NumPy writes.
    #[error("malformed .npy header: {0}")]
    MalformedHeader(String),
    /// The array is stored in Fortran (column-major) order.
    #[error("fortran_order is True: only C-order arrays are supported")]
    FortranOrder,
    /// A dtype without an element type here (big-endian, unsigned, complex, structured, ...).
    #[error("unsupported dtype {0}: supported are {SUPPORTED}")]
    UnsupportedDtype(String),
    /// Fewer data bytes than the shape and dtype need.
    #[error("truncated data: expected {expected} bytes, found {found}")]
    Truncated {
        /// Bytes the shape and dtype need.
        expected: u64,
        /// Bytes after the header.
        found: u64,
    },
    /// More data bytes than the shape and dtype need.
    #[error("unexpected data after the array: expected {expected} bytes, found {found}")]
    TrailingData {
        /// Bytes the shape and dtype need.
        expected: u64,
        /// Bytes after the header.
        found: u64,
    },
    /// A dimension, the element count or the byte count does not fit in 63 bits.
    #[error("shape {0} is too large: dimensions and element counts must fit in i64")]
    ShapeOverflow(String),
    /// A `|b1` byte other than 0 and 1.
    #[error("element {index} of a bool array is the byte {byte:#04x}, not 0 or 1")]
    InvalidBool {
        /// The element's row-major index.
        index: usize,
        /// Its byte.
        byte: u8,
    },
    /// A string element that is not valid UTF-32 or UTF-8.
    #[error("element {index} of a string array is not valid text")]
    InvalidString {
        /// The element's row-major index.
        index: usize,
    },
    /// Writing a tensor whose elements do not fit its type.
    #[error("the tensor cannot be written: it {0}")]
    InvalidTensor(String),
}

/// The dtype ml_dtypes writes a storage-only type's bytes with (one byte per element):
/// `<f1` for float8_e5m2, `<V1` (raw bytes) for the others.
fn storage_descr(element: ElementType) -> &'static str {
    match element {
        ElementType::F8E5M2 => "<f1",
        _ => "<V1",
    }
}

/// Reads a `.npy` file (format 1.0, 2.0 or 3.0) of one of the supported dtypes, in C order.
pub fn read_npy(bytes: &[u8]) -> Result<Tensor, NpyError> {
    read_npy_expecting(bytes, None)
}

/// [`read_npy`] for a tensor expected to have elements of `expected`: one-byte raw elements
/// (`<V1`, `|V1`, `<f1`, `|f1`: how ml_dtypes writes its 8-, 4- and 2-bit types, which the
/// dtype alone does not tell apart) are read as `expected` when it is a storage-only type.
pub fn read_npy_expecting(bytes: &[u8], expected: Option<ElementType>) -> Result<Tensor, NpyError> {
    let (header, data) = split(bytes)?;
    let (dtype, shape) = parse_header(&header, expected.filter(|e| e.is_storage_only()))?;
    let Dtype::Element(element) = dtype else {
        return Err(NpyError::UnsupportedDtype(format!(
            "'{}' (strings, where numbers are expected)",
            dtype.descr()
        )));
    };
    let ty = TensorType::new(shape, element);
    let count = ty
        .num_elements()
        .filter(|&n| n <= i64::MAX as u64 && ty.shape.iter().all(|&d| d <= i64::MAX as u64));
    let expected = count
        .and_then(|n| n.checked_mul(item_size(element)))
        .filter(|&n| n <= i64::MAX as u64)
        .ok_or_else(|| NpyError::ShapeOverflow(shape_tuple(&ty.shape)))?;
    check_length(data, expected)?;
    let data = decode(element, data)?;
    Ok(Tensor { ty, data })
}

/// That `data` holds exactly `expected` bytes.
fn check_length(data: &[u8], expected: u64) -> Result<(), NpyError> {
    let found = data.len() as u64;
    if found < expected {
        return Err(NpyError::Truncated { expected, found });
    }
    if found > expected {
        return Err(NpyError::TrailingData { expected, found });
    }
    Ok(())
}

/// A `.npy` file's header (its dictionary's text) and the data after it.
fn split(bytes: &[u8]) -> Result<(String, &[u8]), NpyError> {
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(NpyError::BadMagic);
    }
    let (major, minor) = match bytes.get(6..8) {
        Some(&[major, minor]) => (major, minor),
        _ => return Err(malformed("the file ends before the format version")),
    };
    let length_size = match (major, minor) {
        (1, 0) => 2,
        (2, 0) | (3, 0) => 4,
        _ => return Err(NpyError::UnsupportedVersion { major, minor }),
    };
    let header_start = 8 + length_size;
    let length_bytes = bytes
        .get(8..header_start)
        .ok_or_else(|| malformed("the file ends inside the header length"))?;
    let header_len = length_bytes
        .iter()
        .rev()
        .fold(0usize, |n, &b| (n << 8) | usize::from(b));
    let header_bytes = bytes
        .get(header_start..header_start + header_len)
        .ok_or_else(|| {
            malformed(format!(
                "the header length is {header_len} bytes, but only {} follow",
                bytes.len() - header_start
            ))
        })?;
    let header: String = if major == 3 {
        std::str::from_utf8(header_bytes)
            .map_err(|_| malformed("the header is not UTF-8"))?
            .to_string()
    } else {
        // Versions 1.0 and 2.0 are Latin-1: every byte is the code point of its value.
        header_bytes.iter().map(|&b| char::from(b)).collect()
    };
    Ok((header, &bytes[header_start + header_len..]))
}

/// Reads a `.npy` file of strings (`<U` or `>U`: UTF-32 code points, `|S`: bytes, taken as
/// UTF-8; each of fixed width, NUL-padded), in C order: its shape and strings.
pub fn read_npy_strings(bytes: &[u8]) -> Result<(Vec<u64>, Vec<String>), NpyError> {
    let (header, data) = split(bytes)?;
    let (dtype, shape) = parse_header(&header, None)?;
    let width = match dtype {
        Dtype::Unicode(chars, _) => chars * 4,
        Dtype::Bytes(width) => width,
        Dtype::Element(element) => {
            return Err(NpyError::UnsupportedDtype(format!(
                "'{}' (numbers, where strings are expected: '<U' or '|S')",
                Dtype::Element(element).descr()
            )))
        }
    };
    let count = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
    let expected = count
        .and_then(|n| n.checked_mul(width as u64))
        .filter(|&n| n <= i64::MAX as u64)
        .ok_or_else(|| NpyError::ShapeOverflow(shape_tuple(&shape)))?;
    check_length(data, expected)?;
    if width == 0 {
        return Ok((shape, vec![String::new(); count.unwrap_or(0) as usize]));
    }
    let strings = data
        .chunks(width)
        .enumerate()
        .map(|(index, item)| match dtype {
            Dtype::Unicode(_, big_endian) => item
                .chunks(4)
                .map(|c| {
                    let bytes = [c[0], c[1], c[2], c[3]];
                    let code = if big_endian {
                        u32::from_be_bytes(bytes)
                    } else {
                        u32::from_le_bytes(bytes)
                    };
                    char::from_u32(code).ok_or(NpyError::InvalidString { index })
                })
                .collect::<Result<String, _>>()
                .map(|s| s.trim_end_matches('\0').to_string()),
            _ => {
                let end = item.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
                String::from_utf8(item[..end].to_vec())
                    .map_err(|_| NpyError::InvalidString { index })
            }
        })
        .collect::<Result<Vec<String>, _>>()?;
    Ok((shape, strings))
}

/// Writes strings of `shape` (row-major) as a `.npy` file of dtype `<U` (UTF-32, as NumPy
/// keeps `str` arrays), as wide as the longest string.
pub fn write_npy_strings(shape: &[u64], strings: &[String]) -> Vec<u8> {
    let chars = strings
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0)
        .max(1);
    let mut data = Vec::with_capacity(strings.len() * chars * 4);
    for s in strings {
        let mut n = 0;
        for c in s.chars() {
            data.extend_from_slice(&u32::from(c).to_le_bytes());
            n += 1;
        }
        data.resize(data.len() + (chars - n) * 4, 0);
    }
    with_header(&format!("<U{chars}"), shape, data)
}

/// Writes `tensor` as a `.npy` file of format 1.0 (2.0 when the header exceeds 65535 bytes,
/// as NumPy does), little-endian, C order, the header padded with spaces to a multiple of 64
/// bytes and ended by a newline.
pub fn write_npy(tensor: &Tensor) -> Result<Vec<u8>, NpyError> {
    let element = tensor.ty.element;
    let descr = DTYPES
        .iter()
        .find(|(_, e)| *e == element)
        .map(|(d, _)| *d)
        .unwrap_or_else(|| storage_descr(element));
    if let Some(problem) = tensor.inconsistency() {
        return Err(NpyError::InvalidTensor(problem));
    }
    Ok(with_header(descr, &tensor.ty.shape, bytes::encode(tensor)))
}

/// A `.npy` file of dtype `descr` and `shape` holding `data`: format 1.0 (2.0 when the header
/// exceeds 65535 bytes, as NumPy does), C order, the header padded with spaces to a multiple
/// of 64 bytes and ended by a newline.
fn with_header(descr: &str, shape: &[u64], data: Vec<u8>) -> Vec<u8> {
    let dict = format!(
        "{{'descr': '{descr}', 'fortran_order': False, 'shape': {}, }}",
        shape_tuple(shape)
    );
    // The header (dictionary, spaces, newline) after the preamble (magic, version, length).
    let header_len = |preamble: usize| {
        let unpadded = preamble + dict.len() + 1;
        dict.len() + (ALIGN - unpadded % ALIGN) % ALIGN + 1
    };
    let (version, length_size) = if header_len(10) <= usize::from(u16::MAX) {
        (1, 2)
    } else {
        (2, 4)
    };
    let header_len = header_len(MAGIC.len() + 2 + length_size);
    let padding = header_len - dict.len() - 1;
    let mut out = Vec::with_capacity(MAGIC.len() + 2 + length_size + header_len + data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    out.extend_from_slice(&header_len.to_le_bytes()[..length_size]);
    out.extend_from_slice(dict.as_bytes());
    out.resize(out.len() + padding, b' ');
    out.push(b'\n');
    out.extend(data);
    out
}

/// A [`NpyError::MalformedHeader`].
fn malformed(message: impl Into<String>) -> NpyError {
    NpyError::MalformedHeader(message.into())
}

/// Bytes per element of `element` in a `.npy` file.
fn item_size(element: ElementType) -> u64 {
    element_bytes(element) as u64
}

/// A shape as Python writes a tuple: `()`, `(5,)`, `(2, 3)`.
fn shape_tuple(shape: &[u64]) -> String {
    match shape {
        [] => "()".into(),
        [d] => format!("({d},)"),
        _ => {
            let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
            format!("({})", dims.join(", "))
        }
    }
}

/// Little-endian elements of `element` to host data (lengths already checked); a boolean
/// byte other than 0 or 1 is an error.
fn decode(element: ElementType, data: &[u8]) -> Result<TensorData, NpyError> {
    if element != ElementType::I1 {
        let count = (data.len() / element_bytes(element)) as u64;
        return Ok(bytes::decode(&TensorType::new(vec![count], element), data).data);
    }
    Ok(TensorData::Bool(
        data.iter()
            .enumerate()
            .map(|(index, &byte)| match byte {
                0 => Ok(false),
                1 => Ok(true),
                _ => Err(NpyError::InvalidBool { index, byte }),
            })
            .collect::<Result<_, _>>()?,
    ))
}

/// A value of the Python literal that a header holds.
#[derive(Clone, Debug, PartialEq)]
enum Literal {
    Str(String),
    Bool(bool),
    Int(u64),
    Tuple(Vec<Literal>),
    List(Vec<Literal>),
    Dict(Vec<(Literal, Literal)>),
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items = |f: &mut fmt::Formatter<'_>, items: &[Literal]| {
            let texts: Vec<String> = items.iter().map(Literal::to_string).collect();
            f.write_str(&texts.join(", "))
        };
        match self {
            Literal::Str(s) => write!(f, "'{s}'"),
            Literal::Bool(true) => f.write_str("True"),
            Literal::Bool(false) => f.write_str("False"),
            Literal::Int(v) => write!(f, "{v}"),
            Literal::Tuple(values) => {
                f.write_str("(")?;
                items(f, values)?;
                f.write_str(if values.len() == 1 { ",)" } else { ")" })
            }
            Literal::List(values) => {
                f.write_str("[")?;
                items(f, values)?;
                f.write_str("]")
            }
            Literal::Dict(entries) => {
                let texts: Vec<String> = entries.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                write!(f, "{{{}}}", texts.join(", "))
            }
        }
    }
}

/// The element type and shape a header describes.
fn parse_header(header: &str, storage: Option<ElementType>) -> Result<(Dtype, Vec<u64>), NpyError> {
    let mut parser = LiteralParser {
        chars: header.chars().collect(),
        at: 0,
    };
    let Literal::Dict(entries) = parser.value()? else {
        return Err(malformed("the header is not a dictionary"));
    };
    parser.skip_space();
    if parser.at != parser.chars.len() {
        return Err(malformed("unexpected text after the header dictionary"));
    }
    let mut descr = None;
    let mut fortran_order = None;
    let mut shape = None;
    for (key, value) in entries {
        let slot = match &key {
            Literal::Str(k) if k == "descr" => &mut descr,
            Literal::Str(k) if k == "fortran_order" => &mut fortran_order,
            Literal::Str(k) if k == "shape" => &mut shape,
            _ => {
                return Err(malformed(format!(
                    "unexpected key {key}: the keys are 'descr', 'fortran_order' and 'shape'"
                )))
            }
        };
        if slot.replace(value).is_some() {
            return Err(malformed(format!("key {key} appears twice")));
        }
    }
    let missing = |name: &str| malformed(format!("key '{name}' is missing"));
    let descr = descr.ok_or_else(|| missing("descr"))?;
    let fortran_order = fortran_order.ok_or_else(|| missing("fortran_order"))?;
    let shape = shape.ok_or_else(|| missing("shape"))?;
    match fortran_order {
        Literal::Bool(false) => {}
        Literal::Bool(true) => return Err(NpyError::FortranOrder),
        other => {
            return Err(malformed(format!(
                "'fortran_order' is {other}, not True or False"
            )))
        }
    }
    let width = |d: &str, prefixes: &[&str]| {
        prefixes
            .iter()
            .find_map(|p| d.strip_prefix(p))
            .and_then(|n| n.parse::<usize>().ok())
    };
    let element = match &descr {
        Literal::Str(d) if ["<V1", "|V1", "<f1", "|f1"].contains(&d.as_str()) => {
            storage.map(Dtype::Element)
        }
        Literal::Str(d) => DTYPES
            .iter()
            .find(|(name, _)| name == d)
            .map(|(_, e)| Dtype::Element(*e))
            .or_else(|| width(d, &["<U", "|U"]).map(|n| Dtype::Unicode(n, false)))
            .or_else(|| width(d, &[">U"]).map(|n| Dtype::Unicode(n, true)))
            .or_else(|| width(d, &["|S"]).map(Dtype::Bytes)),
        _ => None,
    }
    .ok_or_else(|| NpyError::UnsupportedDtype(descr.to_string()))?;
    let dims = match &shape {
        Literal::Tuple(dims) => dims
            .iter()
            .map(|d| match d {
                Literal::Int(v) => Some(*v),
                _ => None,
            })
            .collect::<Option<Vec<u64>>>(),
        _ => None,
    }
    .ok_or_else(|| {
        malformed(format!(
            "'shape' is {shape}, not a tuple of non-negative integers"
        ))
    })?;
    Ok((element, dims))
}

/// What a header's `descr` says the elements are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dtype {
    /// Numbers of an element type.
    Element(ElementType),
    /// Strings of this many UTF-32 code points, big-endian when true.
    Unicode(usize, bool),
    /// Strings of this many bytes.
    Bytes(usize),
}

impl Dtype {
    /// The `descr` NumPy writes for it.
    fn descr(self) -> String {
        match self {
            Dtype::Element(element) => DTYPES.iter().find(|(_, e)| *e == element).map_or_else(
                || storage_descr(element).to_string(),
                |(d, _)| d.to_string(),
            ),
            Dtype::Unicode(n, false) => format!("<U{n}"),
            Dtype::Unicode(n, true) => format!(">U{n}"),
            Dtype::Bytes(n) => format!("|S{n}"),
        }
    }
}

/// A recursive-descent parser of the Python literals a header may hold: dictionaries, tuples,
/// lists, strings without escapes, `True`, `False` and non-negative integers.
struct LiteralParser {
    chars: Vec<char>,
    at: usize,
}

/// How deeply literals may nest: a header is flat; this only stops runaway recursion.
const MAX_NESTING: usize = 16;

impl LiteralParser {
    fn skip_space(&mut self) {
        while self.chars.get(self.at).is_some_and(|c| c.is_whitespace()) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_space();
        self.chars.get(self.at).copied()
    }

    fn expect(&mut self, wanted: char) -> Result<(), NpyError> {
        match self.peek() {
            Some(c) if c == wanted => {
                self.at += 1;
                Ok(())
            }
            Some(c) => Err(malformed(format!(
                "expected '{wanted}' at offset {}, found '{c}'",
                self.at
            ))),
            None => Err(malformed(format!(
                "expected '{wanted}', but the header ends"
            ))),
        }
    }

    fn value(&mut self) -> Result<Literal, NpyError> {
        self.nested(0)
    }

    fn nested(&mut self, depth: usize) -> Result<Literal, NpyError> {
        if depth > MAX_NESTING {
            return Err(malformed("literals nest too deeply"));
        }
        match self.peek() {
            Some('{') => {
                let mut entries = Vec::new();
                self.sequence('{', '}', |p| {
                    let key = p.nested(depth + 1)?;
                    p.expect(':')?;
                    entries.push((key, p.nested(depth + 1)?));
                    Ok(())
                })?;
                Ok(Literal::Dict(entries))
            }
            Some(open @ ('(' | '[')) => {
                let close = if open == '(' { ')' } else { ']' };
                let mut items = Vec::new();
                let trailing_comma = self.sequence(open, close, |p| {
                    items.push(p.nested(depth + 1)?);
                    Ok(())
                })?;
                match (open, items.len(), trailing_comma) {
                    // `(5)` is the integer 5 in Python, not a tuple.
                    ('(', 1, false) => Ok(items.remove(0)),
                    ('(', _, _) => Ok(Literal::Tuple(items)),
                    _ => Ok(Literal::List(items)),
                }
            }
            Some(quote @ ('\'' | '"')) => {
                self.at += 1;
                let start = self.at;
                while let Some(&c) = self.chars.get(self.at) {
                    if c == quote {
                        let text: String = self.chars[start..self.at].iter().collect();
                        self.at += 1;
                        return Ok(Literal::Str(text));
                    }
                    if c == '\\' {
                        return Err(malformed("escape sequences in strings are not supported"));
                    }
                    self.at += 1;
                }
                Err(malformed("a string is not closed"))
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.at;
                while self.chars.get(self.at).is_some_and(char::is_ascii_digit) {
                    self.at += 1;
                }
                let digits: String = self.chars[start..self.at].iter().collect();
                // Python 2 wrote long integers with an `L` suffix.
                if self.chars.get(self.at) == Some(&'L') {
                    self.at += 1;
                }
                digits
                    .parse()
                    .map(Literal::Int)
                    .map_err(|_| NpyError::ShapeOverflow(format!("with the dimension {digits}")))
            }
            Some(c) if c.is_alphabetic() => {
                let start = self.at;
                while self.chars.get(self.at).is_some_and(|c| c.is_alphanumeric()) {
                    self.at += 1;
                }
                let word: String = self.chars[start..self.at].iter().collect();
                match word.as_str() {
                    "True" => Ok(Literal::Bool(true)),
                    "False" => Ok(Literal::Bool(false)),
                    _ => Err(malformed(format!("unexpected word '{word}'"))),
                }
            }
            Some(c) => Err(malformed(format!("unexpected '{c}' at offset {}", self.at))),
            None => Err(malformed("the header ends inside a literal")),
        }
    }

    /// Parses `open item (, item)* ,? close`, calling `item` for each; returns whether a comma
    /// followed the last item.
    fn sequence(
        &mut self,
        open: char,
        close: char,
        mut item: impl FnMut(&mut LiteralParser) -> Result<(), NpyError>,
    ) -> Result<bool, NpyError> {
        self.expect(open)?;
        let mut trailing_comma = false;
        loop {
            if self.peek() == Some(close) {
                self.at += 1;
                return Ok(trailing_comma);
            }
            item(self)?;
            trailing_comma = self.peek() == Some(',');
            if trailing_comma {
                self.at += 1;
            } else {
                self.expect(close)?;
                return Ok(false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.npy` file as NumPy lays it out: magic, version 1.0, header length, the dictionary
    /// padded with spaces to a multiple of 64 bytes and ended by a newline, then `data`.
    fn npy_v1(dict: &str, data: &[u8]) -> Vec<u8> {
        let mut header = dict.to_string();
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(data);
        bytes
    }

    /// The same for versions 2.0 and 3.0 (a 4-byte header length).
    fn npy_v2(major: u8, dict: &str, data: &[u8]) -> Vec<u8> {
        let mut header = dict.to_string();
        while (12 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut bytes = vec![0x93, b'N', b'U', b'M', b'P', b'Y', major, 0];
        bytes.extend_from_slice(&(header.len() as u32).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(data);
        bytes
    }

    fn le_f32(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn strings_read_as_numpy_writes_them_and_round_trip() {
        // np.array([["ab", "é"], ["", "xyz"]]) is '<U3': three UTF-32 code points each.
        let utf32 = |s: &str| {
            let mut v: Vec<u8> = s.chars().flat_map(|c| u32::from(c).to_le_bytes()).collect();
            v.resize(12, 0);
            v
        };
        let data: Vec<u8> = ["ab", "é", "", "xyz"]
            .iter()
            .flat_map(|s| utf32(s))
            .collect();
        let bytes = npy_v1(
            "{'descr': '<U3', 'fortran_order': False, 'shape': (2, 2), }",
            &data,
        );
        let (shape, strings) = read_npy_strings(&bytes).expect("valid");
        assert_eq!(shape, [2, 2]);
        assert_eq!(strings, ["ab", "é", "", "xyz"]);
        assert_eq!(write_npy_strings(&shape, &strings), bytes);
        // Bytes strings, NUL-padded.
        let bytes = npy_v1(
            "{'descr': '|S2', 'fortran_order': False, 'shape': (2,), }",
            b"a\0bc",
        );
        assert_eq!(read_npy_strings(&bytes).expect("valid").1, ["a", "bc"]);
        // Numbers where strings are expected, and strings where numbers are, are errors.
        let numbers = npy_v1(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
            &le_f32(&[1.0]),
        );
        assert!(
            matches!(read_npy_strings(&numbers), Err(NpyError::UnsupportedDtype(d)) if d.contains("strings are expected"))
        );
        let text = npy_v1(
            "{'descr': '<U3', 'fortran_order': False, 'shape': (1,), }",
            &utf32("abc"),
        );
        assert!(matches!(
            read_npy(&text),
            Err(NpyError::UnsupportedDtype(d)) if d.contains("where numbers are expected")
        ));
        // A code point past Unicode, or data cut short.
        let bad = npy_v1(
            "{'descr': '<U1', 'fortran_order': False, 'shape': (1,), }",
            &0x11_0000u32.to_le_bytes(),
        );
        assert_eq!(
            read_npy_strings(&bad),
            Err(NpyError::InvalidString { index: 0 })
        );
        let short = npy_v1(
            "{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }",
            &utf32("abc"),
        );
        assert!(matches!(
            read_npy_strings(&short),
            Err(NpyError::Truncated { .. })
        ));
    }

    #[test]
    fn reads_what_numpy_writes() {
        let bytes = npy_v1(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
            &le_f32(&[1.0, 2.5, -3.0, 0.1, 0.0, -0.5]),
        );
        assert_eq!(bytes.len() % 64, 24);
        let t = read_npy(&bytes).expect("valid");
        assert_eq!(t.ty, TensorType::new(vec![2, 3], ElementType::F32));
        assert_eq!(
            t.data,
            TensorData::Float(vec![1.0, 2.5, -3.0, f64::from(0.1f32), 0.0, -0.5])
        );
        // Keys in another order, double quotes, a Python 2 long, no trailing comma.
        let bytes = npy_v1(
            "{\"shape\": (3L,), \"fortran_order\": False, \"descr\": \"<i8\"}",
            &[5i64, -1, i64::MIN]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>(),
        );
        let t = read_npy(&bytes).expect("valid");
        assert_eq!(t.ty, TensorType::new(vec![3], ElementType::I64));
        assert_eq!(t.data, TensorData::Int(vec![5, -1, i64::MIN]));
    }

    #[test]
    fn reads_versions_2_and_3() {
        let dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }";
        let data: Vec<u8> = [7i32, -8].iter().flat_map(|v| v.to_le_bytes()).collect();
        for major in [2, 3] {
            let t = read_npy(&npy_v2(major, dict, &data)).expect("valid");
            assert_eq!(t.ty, TensorType::new(vec![2], ElementType::I32));
            assert_eq!(t.data, TensorData::Int(vec![7, -8]));
        }
    }

    #[test]
    fn reads_rank_0_empty_and_bool_arrays() {
        let scalar = npy_v1(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
            &2.5f64.to_le_bytes(),
        );
        let t = read_npy(&scalar).expect("valid");
        assert_eq!(t.ty, TensorType::new(vec![], ElementType::F64));
        assert_eq!(t.data, TensorData::Float(vec![2.5]));
        let empty = npy_v1(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }",
            &[],
        );
        let t = read_npy(&empty).expect("valid");
        assert_eq!(t.ty, TensorType::new(vec![0, 3], ElementType::F32));
        assert!(t.is_empty());
        let bools = npy_v1(
            "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
            &[1, 0, 1],
        );
        assert_eq!(
            read_npy(&bools).expect("valid").data,
            TensorData::Bool(vec![true, false, true])
        );
    }

    #[test]
    fn round_trips_every_dtype() {
        let f = |shape: Vec<u64>, element, values: Vec<f64>| Tensor {
            ty: TensorType::new(shape, element),
            data: TensorData::Float(values),
        };
        let i = |shape: Vec<u64>, element, values: Vec<i64>| Tensor {
            ty: TensorType::new(shape, element),
            data: TensorData::Int(values),
        };
        let tensors = [
            f(
                vec![3],
                ElementType::F16,
                vec![0.5, -65504.0, 6.103515625e-5],
            ),
            f(
                vec![2, 2],
                ElementType::F32,
                vec![f64::from(0.1f32), -0.0, f64::INFINITY, 3.0],
            ),
            f(vec![2], ElementType::F64, vec![0.1, f64::NEG_INFINITY]),
            f(vec![], ElementType::F32, vec![1.5]),
            f(vec![0], ElementType::F64, vec![]),
            f(vec![2, 0, 3], ElementType::F16, vec![]),
            i(vec![2, 2], ElementType::I8, vec![-128, 127, 0, -1]),
            i(
                vec![2],
                ElementType::I32,
                vec![i64::from(i32::MIN), i64::from(i32::MAX)],
            ),
            i(vec![2], ElementType::I64, vec![i64::MIN, i64::MAX]),
            i(vec![], ElementType::I64, vec![42]),
            i(vec![1, 0], ElementType::I32, vec![]),
            Tensor {
                ty: TensorType::new(vec![2, 1], ElementType::I1),
                data: TensorData::Bool(vec![true, false]),
            },
            Tensor {
                ty: TensorType::new(vec![], ElementType::I1),
                data: TensorData::Bool(vec![true]),
            },
        ];
        for tensor in tensors {
            let bytes = write_npy(&tensor).expect("writable");
            let header_len = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
            assert_eq!((10 + header_len) % 64, 0, "{}", tensor.ty);
            assert_eq!(bytes[10 + header_len - 1], b'\n');
            assert_eq!(read_npy(&bytes).expect("readable"), tensor);
        }
        // NaN survives too (compared by class, since NaN != NaN).
        let nan = f(vec![1], ElementType::F32, vec![f64::NAN]);
        let back = read_npy(&write_npy(&nan).expect("writable")).expect("readable");
        assert!(back.get_f64(0).is_nan());
    }

    #[test]
    fn writes_the_header_numpy_writes() {
        let t = Tensor {
            ty: TensorType::new(vec![2, 3], ElementType::F32),
            data: TensorData::Float(vec![1.0, 2.5, -3.0, f64::from(0.1f32), 0.0, -0.5]),
        };
        let expected = npy_v1(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
            &le_f32(&[1.0, 2.5, -3.0, 0.1, 0.0, -0.5]),
        );
        assert_eq!(write_npy(&t).expect("writable"), expected);
        let v = Tensor {
            ty: TensorType::new(vec![4], ElementType::I1),
            data: TensorData::Bool(vec![false; 4]),
        };
        let expected = npy_v1(
            "{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }",
            &[0; 4],
        );
        assert_eq!(write_npy(&v).expect("writable"), expected);
    }

    #[test]
    fn bf16_is_the_two_byte_void_dtype_ml_dtypes_writes() {
        let values = vec![1.0, -2.5, 0.0078125, f64::INFINITY];
        let tensor = Tensor {
            ty: TensorType::new(vec![4], ElementType::BF16),
            data: TensorData::Float(values.clone()),
        };
        let bytes = write_npy(&tensor).expect("writable");
        let header = String::from_utf8_lossy(&bytes[10..74]).into_owned();
        assert!(header.contains("'descr': '<V2'"), "{header}");
        // 1.0 is 0x3F80 in bf16: the high half of f32's 0x3F800000; the data (8 bytes)
        // ends the file.
        assert_eq!(&bytes[bytes.len() - 8..bytes.len() - 6], &[0x80, 0x3F]);
        assert_eq!(read_npy(&bytes).expect("readable"), tensor);
        let named = npy_v1(
            "{'descr': 'bfloat16', 'fortran_order': False, 'shape': (1,), }",
            &[0x80, 0x3F],
        );
        assert_eq!(
            read_npy(&named).expect("readable").data,
            TensorData::Float(vec![1.0])
        );
    }

    #[test]
    fn refuses_what_it_cannot_write() {
        let out_of_range = Tensor {
            ty: TensorType::new(vec![1], ElementType::I8),
            data: TensorData::Int(vec![300]),
        };
        assert_eq!(
            write_npy(&out_of_range)
                .expect_err("does not fit")
                .to_string(),
            "the tensor cannot be written: it has element 0 (300), which is out of range for i8"
        );
    }

    #[test]
    fn storage_types_are_ml_dtypes_bytes() {
        let ty = TensorType::new(vec![3], ElementType::F8E4M3FN);
        let tensor = Tensor::from_f64(&ty, [1.5, -448.0, 0.015625]);
        let bytes = write_npy(&tensor).expect("writable");
        let header = String::from_utf8_lossy(&bytes[10..60]).to_string();
        assert!(header.contains("'descr': '<V1'"), "{header}");
        // The codes, as ml_dtypes.float8_e4m3fn holds them.
        assert_eq!(bytes[bytes.len() - 3..], [0x3c, 0xfe, 0x08]);
        let back = read_npy_expecting(&bytes, Some(ElementType::F8E4M3FN)).expect("readable");
        assert_eq!(back, tensor);
        // Without a type to read them as, raw bytes are refused.
        assert!(matches!(
            read_npy(&bytes),
            Err(NpyError::UnsupportedDtype(_))
        ));
        let i4 = Tensor::from_numbers(&TensorType::new(vec![2], ElementType::I4), [-8.0, 7.0]);
        let bytes = write_npy(&i4).expect("writable");
        assert_eq!(bytes[bytes.len() - 2..], [0xf8, 0x07]);
        assert_eq!(
            read_npy_expecting(&bytes, Some(ElementType::I4)).expect("readable"),
            i4
        );
    }

    #[test]
    fn names_each_kind_of_bad_input() {
        let dict = |descr: &str, fortran: &str, shape: &str| {
            format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}")
        };
        let read = |bytes: &[u8]| read_npy(bytes).expect_err("invalid").to_string();
        assert_eq!(
            read(b"PK\x03\x04 a zip file"),
            "not an .npy file: it does not start with the magic string \\x93NUMPY"
        );
        assert_eq!(read(b"\x93NUM"), read(b"PK"));
        let mut v4 = npy_v1(&dict("<f4", "False", "(1,)"), &[0; 4]);
        v4[6] = 4;
        assert_eq!(
            read(&v4),
            "unsupported .npy format version 4.0: versions 1.0, 2.0 and 3.0 are supported"
        );
        assert_eq!(
            read(&npy_v1(&dict("<f4", "True", "(2, 2)"), &[0; 16])),
            "fortran_order is True: only C-order arrays are supported"
        );
        assert_eq!(
            read(&npy_v1(&dict(">f4", "False", "(1,)"), &[0; 4])),
            "unsupported dtype '>f4': supported are '<f2' (f16), '<f4' (f32), '<f8' (f64), '|i1' (i8), '<i2' (i16), '<i4' (i32), '<i8' (i64), '|u1' (ui8), '<u2' (ui16), '<u4' (ui32), '<u8' (ui64), '|b1' (bool), '<V2' (bf16, as ml_dtypes writes it), '<V1' and '<f1' (for a parameter of an 8-, 4- or 2-bit type, as ml_dtypes writes them)"
        );
        assert!(read(&npy_v1(&dict("<c8", "False", "(1,)"), &[0; 8])).contains("'<c8'"));
        assert_eq!(
            read(&npy_v1(&dict("<f4", "False", "(2, 3)"), &[0; 20])),
            "truncated data: expected 24 bytes, found 20"
        );
        assert_eq!(
            read(&npy_v1(&dict("<f4", "False", "(1,)"), &[0; 5])),
            "unexpected data after the array: expected 4 bytes, found 5"
        );
        assert_eq!(
            read(&npy_v1(&dict("<f8", "False", "(4294967296, 4294967296)"), &[])),
            "shape (4294967296, 4294967296) is too large: dimensions and element counts must fit in i64"
        );
        assert_eq!(
            read(&npy_v1(&dict("<f8", "False", "(1152921504606846976,)"), &[])),
            "shape (1152921504606846976,) is too large: dimensions and element counts must fit in i64"
        );
        assert_eq!(
            read(&npy_v1(&dict("|b1", "False", "(2,)"), &[1, 2])),
            "element 1 of a bool array is the byte 0x02, not 0 or 1"
        );
    }

    #[test]
    fn names_each_kind_of_malformed_header() {
        let read = |dict: &str| {
            read_npy(&npy_v1(dict, &[]))
                .expect_err("invalid")
                .to_string()
        };
        assert_eq!(
            read("{'descr': '<f4', 'shape': (0,), }"),
            "malformed .npy header: key 'fortran_order' is missing"
        );
        assert_eq!(
            read("{'descr': '<f4', 'fortran_order': False, 'shape': (0,), 'x': 1}"),
            "malformed .npy header: unexpected key 'x': the keys are 'descr', 'fortran_order' and 'shape'"
        );
        assert_eq!(
            read("{'descr': '<f4', 'fortran_order': False, 'shape': (0), }"),
            "malformed .npy header: 'shape' is 0, not a tuple of non-negative integers"
        );
        assert_eq!(
            read("{'descr': '<f4', 'fortran_order': 0, 'shape': (0,), }"),
            "malformed .npy header: 'fortran_order' is 0, not True or False"
        );
        assert_eq!(
            read("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"),
            "malformed .npy header: unexpected '-' at offset 51"
        );
        assert_eq!(
            read("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } x"),
            "malformed .npy header: unexpected text after the header dictionary"
        );
        assert_eq!(
            read("{'descr': '<f4', 'fortran_order': Fals"),
            "malformed .npy header: unexpected word 'Fals'"
        );
        assert_eq!(
            read("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }"),
            "unsupported dtype [('a', '<f4')]: supported are '<f2' (f16), '<f4' (f32), '<f8' (f64), '|i1' (i8), '<i2' (i16), '<i4' (i32), '<i8' (i64), '|u1' (ui8), '<u2' (ui16), '<u4' (ui32), '<u8' (ui64), '|b1' (bool), '<V2' (bf16, as ml_dtypes writes it), '<V1' and '<f1' (for a parameter of an 8-, 4- or 2-bit type, as ml_dtypes writes them)"
        );
        let mut short = npy_v1(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
            &[],
        );
        short.truncate(40);
        assert_eq!(
            read_npy(&short).expect_err("cut").to_string(),
            "malformed .npy header: the header length is 118 bytes, but only 30 follow"
        );
        assert_eq!(
            read_npy(b"\x93NUMPY\x01\x00\x05")
                .expect_err("cut")
                .to_string(),
            "malformed .npy header: the file ends inside the header length"
        );
        let nested = format!("{}1{}", "(".repeat(40), ")".repeat(40));
        assert_eq!(
            read(&nested),
            "malformed .npy header: literals nest too deeply"
        );
    }

    #[test]
    fn never_panics_on_truncations_of_a_valid_file() {
        let t = Tensor {
            ty: TensorType::new(vec![2, 2], ElementType::I32),
            data: TensorData::Int(vec![1, 2, 3, 4]),
        };
        let bytes = write_npy(&t).expect("writable");
        for end in 0..bytes.len() {
            assert!(read_npy(&bytes[..end]).is_err());
        }
    }
}
