//! The string walk behind the redactor's "nothing to mask here" check.
//!
//! Python twin: `avo.redaction._collect_strings` followed by `"\n".join`. The
//! walk visits containers in the same last-in-first-out order, so the joined
//! text is identical, and stops at the first non-empty value under a
//! secret-named key (decided by the `is_secret_key` callable it is given, the
//! Python function itself, so key matching cannot drift).

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// What the walk found.
pub enum Walk {
    /// Every string, joined with newlines, in the Python twin's order.
    Joined(String),
    /// A non-empty value under a secret-named key, or a value of a type the
    /// walk leaves to Python: the Python twin decides.
    Undecided,
}

fn is_scalar(value: &Bound<'_, PyAny>) -> bool {
    value.is_exact_instance_of::<PyInt>()
        || value.is_exact_instance_of::<PyFloat>()
        || value.is_exact_instance_of::<PyBool>()
}

/// One child of a container: strings are collected, scalars and None
/// skipped, containers pushed; anything else ends the walk (undecided).
fn visit<'py>(
    sub: Bound<'py, PyAny>,
    parts: &mut Vec<Bound<'py, PyString>>,
    stack: &mut Vec<Bound<'py, PyAny>>,
) -> bool {
    if let Ok(text) = sub.downcast_exact::<PyString>() {
        parts.push(text.clone());
    } else if sub.is_none() || is_scalar(&sub) {
    } else if sub.is_exact_instance_of::<PyDict>()
        || sub.is_exact_instance_of::<PyList>()
        || sub.is_exact_instance_of::<PyTuple>()
    {
        stack.push(sub);
    } else {
        return false;
    }
    true
}

/// Walk `value`; `is_secret_key(key)` is asked about each string key with a
/// value that is neither None nor "".
pub fn joined_strings(value: &Bound<'_, PyAny>, is_secret_key: &Bound<'_, PyAny>) -> PyResult<Walk> {
    let mut parts: Vec<Bound<'_, PyString>> = Vec::new();
    let mut stack: Vec<Bound<'_, PyAny>> = vec![value.clone()];
    while let Some(item) = stack.pop() {
        if let Ok(text) = item.downcast_exact::<PyString>() {
            parts.push(text.clone());
        } else if let Ok(mapping) = item.downcast_exact::<PyDict>() {
            for (key, sub) in mapping.iter() {
                if key.is_exact_instance_of::<PyString>() && !sub.is_none() {
                    let empty = match sub.downcast_exact::<PyString>() {
                        Ok(text) => text.to_str().map(str::is_empty).unwrap_or(false),
                        Err(_) => false,
                    };
                    if !empty {
                        if !(is_scalar(&sub)
                            || sub.is_exact_instance_of::<PyString>()
                            || sub.is_exact_instance_of::<PyDict>()
                            || sub.is_exact_instance_of::<PyList>()
                            || sub.is_exact_instance_of::<PyTuple>())
                        {
                            return Ok(Walk::Undecided); // its `!= ""` is Python's to run
                        }
                        if is_secret_key.call1((&key,))?.is_truthy()? {
                            return Ok(Walk::Undecided);
                        }
                    }
                }
                if !visit(sub, &mut parts, &mut stack) {
                    return Ok(Walk::Undecided);
                }
            }
        } else if let Ok(items) = item.downcast_exact::<PyList>() {
            for sub in items.iter() {
                if !visit(sub, &mut parts, &mut stack) {
                    return Ok(Walk::Undecided);
                }
            }
        } else if let Ok(items) = item.downcast_exact::<PyTuple>() {
            for sub in items.iter() {
                if !visit(sub, &mut parts, &mut stack) {
                    return Ok(Walk::Undecided);
                }
            }
        } else {
            return Ok(Walk::Undecided);
        }
    }
    let mut total = parts.len();
    let mut texts: Vec<&str> = Vec::with_capacity(parts.len());
    for part in &parts {
        match part.to_str() {
            Ok(text) => {
                total += text.len();
                texts.push(text);
            }
            Err(_) => return Ok(Walk::Undecided), // a lone surrogate: Python joins it
        }
    }
    let mut joined = String::with_capacity(total);
    for (index, text) in texts.iter().enumerate() {
        if index > 0 {
            joined.push('\n');
        }
        joined.push_str(text);
    }
    Ok(Walk::Joined(joined))
}
