//! Canonical JSON, byte for byte what avo's Python encoder writes.
//!
//! The Python twin is `json.JSONEncoder(sort_keys=True, separators=(",", ":"))`
//! with `ensure_ascii=True`, `allow_nan=True` and no circular-reference check.
//! Only the exact built-in JSON types are written here: `dict` with `str`
//! keys, `list`, `tuple`, `str`, `int`, `float`, `bool` and `None`. Anything
//! else (a subclass, a non-string key, an object the encoder's `default=str`
//! would stringify, a string holding a lone surrogate, nesting deeper than
//! `MAX_DEPTH`) makes the writer give up with `Unsupported`, and the caller
//! hands the value to the Python twin, so its result (or its error) is the
//! Python one by construction.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// Nesting the writer recurses into before leaving the value to Python.
pub const MAX_DEPTH: u32 = 200;

/// Why the writer stopped: the value is for the Python twin.
pub struct Unsupported;

pub type Written = Result<(), Unsupported>;

const HEX: &[u8; 16] = b"0123456789abcdef";

fn push_u16_escape(out: &mut String, unit: u32) {
    out.push_str("\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[((unit >> shift) & 0xF) as usize] as char);
    }
}

/// A JSON string literal with every non-printable-ASCII character escaped.
pub fn write_str(out: &mut String, text: &str) {
    out.reserve(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            ' '..='~' => out.push(ch),
            _ => {
                let code = ch as u32;
                if code >= 0x10000 {
                    let v = code - 0x10000;
                    push_u16_escape(out, 0xD800 | (v >> 10));
                    push_u16_escape(out, 0xDC00 | (v & 0x3FF));
                } else {
                    push_u16_escape(out, code);
                }
            }
        }
    }
    out.push('"');
}

/// The shortest round-trip digits of a finite, non-zero `x` (no sign) and
/// where the decimal point goes, counted in digits from the left.
///
/// `ryu` picks, among the shortest digit strings that read back as `x`, the
/// one nearest to `x`, ties to even: what Python's `repr` (David Gay's
/// shortest mode) picks. Rust's own `{:e}` breaks exact ties upward
/// (`64.870635986328125` is written `...813`, Python writes `...812`), so it
/// is not used. Only the layout of ryu's text differs from Python's; it is
/// reduced to digits and a point position here and laid out below.
fn shortest_digits(x: f64) -> (String, i32) {
    let mut buffer = ryu::Buffer::new();
    let text = buffer.format_finite(x.abs());
    let (mantissa, exponent) = match text.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i32>().expect("ryu writes a decimal exponent")),
        None => (text, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits: String = int_part.chars().chain(frac_part.chars()).collect();
    let mut decpt = int_part.len() as i32 + exponent;
    let leading = digits.len() - digits.trim_start_matches('0').len();
    digits.drain(..leading);
    decpt -= leading as i32;
    let kept = digits.trim_end_matches('0').len();
    digits.truncate(kept);
    (digits, decpt)
}

/// `float.__repr__` as the JSON encoder writes it (`NaN`, `Infinity`, `-Infinity`).
pub fn write_float(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("NaN");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    if x.is_sign_negative() {
        out.push('-');
    }
    if x == 0.0 {
        out.push_str("0.0");
        return;
    }
    let (digits, decpt) = shortest_digits(x);
    let exponent = decpt - 1;
    if decpt <= -4 || decpt > 16 {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exponent < 0 { '-' } else { '+' });
        let magnitude = exponent.unsigned_abs();
        if magnitude < 10 {
            out.push('0');
        }
        out.push_str(&magnitude.to_string());
    } else if decpt <= 0 {
        out.push_str("0.");
        for _ in 0..(-decpt) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let point = decpt as usize;
        if point >= digits.len() {
            out.push_str(&digits);
            for _ in digits.len()..point {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            out.push_str(&digits[..point]);
            out.push('.');
            out.push_str(&digits[point..]);
        }
    }
}

fn write_int(out: &mut String, value: &Bound<'_, PyAny>) -> Written {
    if let Ok(small) = value.extract::<i64>() {
        out.push_str(&small.to_string());
        return Ok(());
    }
    // Beyond 64 bits: int.__repr__ (which also enforces Python's digit limit).
    match value.repr() {
        Ok(text) => match text.to_str() {
            Ok(digits) => {
                out.push_str(digits);
                Ok(())
            }
            Err(_) => Err(Unsupported),
        },
        Err(_) => Err(Unsupported),
    }
}

/// Append the canonical JSON of `value` to `out`, or give up with `Unsupported`.
pub fn write_value(out: &mut String, value: &Bound<'_, PyAny>, depth: u32) -> Written {
    if value.is_none() {
        out.push_str("null");
    } else if let Ok(text) = value.downcast_exact::<PyString>() {
        write_str(out, text.to_str().map_err(|_| Unsupported)?);
    } else if let Ok(flag) = value.downcast_exact::<PyBool>() {
        out.push_str(if flag.is_true() { "true" } else { "false" });
    } else if value.is_exact_instance_of::<PyInt>() {
        write_int(out, value)?;
    } else if let Ok(number) = value.downcast_exact::<PyFloat>() {
        write_float(out, number.value());
    } else if let Ok(mapping) = value.downcast_exact::<PyDict>() {
        if depth >= MAX_DEPTH {
            return Err(Unsupported);
        }
        write_dict(out, mapping, depth + 1)?;
    } else if let Ok(items) = value.downcast_exact::<PyList>() {
        if depth >= MAX_DEPTH {
            return Err(Unsupported);
        }
        out.push('[');
        for (index, item) in items.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            write_value(out, &item, depth + 1)?;
        }
        out.push(']');
    } else if let Ok(items) = value.downcast_exact::<PyTuple>() {
        if depth >= MAX_DEPTH {
            return Err(Unsupported);
        }
        out.push('[');
        for (index, item) in items.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            write_value(out, &item, depth + 1)?;
        }
        out.push(']');
    } else {
        return Err(Unsupported);
    }
    Ok(())
}

fn write_dict(out: &mut String, mapping: &Bound<'_, PyDict>, depth: u32) -> Written {
    let mut entries: Vec<(Bound<'_, PyString>, Bound<'_, PyAny>)> = Vec::with_capacity(mapping.len());
    for (key, item) in mapping.iter() {
        match key.downcast_exact::<PyString>() {
            Ok(text) => entries.push((text.clone(), item)),
            Err(_) => return Err(Unsupported),
        }
    }
    let mut keyed: Vec<(&str, &Bound<'_, PyAny>)> = Vec::with_capacity(entries.len());
    for (key, item) in &entries {
        keyed.push((key.to_str().map_err(|_| Unsupported)?, item));
    }
    // Byte order of UTF-8 is code-point order: Python's order for str keys.
    keyed.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push('{');
    for (index, (key, item)) in keyed.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_str(out, key);
        out.push(':');
        write_value(out, item, depth)?;
    }
    out.push('}');
    Ok(())
}

/// The canonical JSON of `value`, or None when it is the Python twin's to write.
pub fn canonical(value: &Bound<'_, PyAny>) -> Option<String> {
    let mut out = String::with_capacity(64);
    write_value(&mut out, value, 0).ok().map(|_| out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn float(x: f64) -> String {
        let mut out = String::new();
        write_float(&mut out, x);
        out
    }

    #[test]
    fn floats_are_laid_out_like_repr() {
        assert_eq!(float(0.0), "0.0");
        assert_eq!(float(-0.0), "-0.0");
        assert_eq!(float(1.5), "1.5");
        assert_eq!(float(123.0), "123.0");
        assert_eq!(float(0.0001), "0.0001");
        assert_eq!(float(0.00001), "1e-05");
        assert_eq!(float(1e15), "1000000000000000.0");
        assert_eq!(float(1e16), "1e+16");
        assert_eq!(float(1.5e300), "1.5e+300");
        assert_eq!(float(5e-324), "5e-324");
        assert_eq!(float(f64::NAN), "NaN");
        assert_eq!(float(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(float(64.870635986328125), "64.87063598632812"); // a tie: to even
        assert_eq!(float(1e22), "1e+22");
        assert_eq!(float(123456789012345680.0), "1.2345678901234568e+17");
        assert_eq!(float(-1.5e-7), "-1.5e-07");
        assert_eq!(float(1.7976931348623157e308), "1.7976931348623157e+308");
    }

    #[test]
    fn strings_escape_everything_outside_printable_ascii() {
        let mut out = String::new();
        write_str(&mut out, "a\"\\\n\u{7f}é😀\u{1}");
        assert_eq!(out, "\"a\\\"\\\\\\n\\u007f\\u00e9\\ud83d\\ude00\\u0001\"");
    }
}
