//! avo-native: optional accelerators for avo's kernel.
//!
//! Every function here has a pure-Python twin in the kernel that is the
//! authority: results are identical byte for byte, and a function that meets
//! a value it does not handle returns `None` so the caller uses the twin (the
//! twin's result, or its error, is then the answer). See native/README.md.

use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

mod canonical;
mod digest;
mod strings;

/// `avo.prompt_cache.cache_key_hash`: hex SHA-256 over the length-prefixed
/// parts `run_id`, `str(step)`, then each of `messages_json`.
#[pyfunction]
fn cache_key_hash(run_id: &str, step: &Bound<'_, PyAny>, messages_json: Vec<String>) -> PyResult<String> {
    // str(step), as the twin writes it, for any int (or anything else it is given).
    let step_text = step.str()?;
    let step_text = step_text.to_str()?;
    let parts = std::iter::once(run_id.as_bytes())
        .chain(std::iter::once(step_text.as_bytes()))
        .chain(messages_json.iter().map(|m| m.as_bytes()));
    Ok(digest::framed_hex(parts))
}

/// `avo.tools.canonical_json`, or None when the value is the twin's to write.
#[pyfunction]
fn canonical_json(value: &Bound<'_, PyAny>) -> Option<String> {
    canonical::canonical(value)
}

/// `avo.tools.canonical_fingerprint`: SHA-256 hex of the canonical JSON, or None.
#[pyfunction]
fn canonical_fingerprint(value: &Bound<'_, PyAny>) -> Option<String> {
    canonical::canonical(value).map(|text| digest::sha256_hex(text.as_bytes()))
}

/// `hashlib.sha256(text.encode()).hexdigest()`, or None for a lone surrogate.
#[pyfunction]
fn sha256_hex(text: &Bound<'_, PyString>) -> Option<String> {
    text.to_str().ok().map(|t| digest::sha256_hex(t.as_bytes()))
}

/// `avo.tools.tool_result_fingerprint` from the result's four fields, or None.
#[pyfunction]
fn tool_result_fingerprint(
    tool_name: &Bound<'_, PyAny>,
    success: &Bound<'_, PyAny>,
    output: &Bound<'_, PyAny>,
    error: &Bound<'_, PyAny>,
) -> Option<String> {
    // canonical_json({"tool_name", "success", "output", "error"}), keys in sorted order.
    let mut out = String::with_capacity(96);
    let fields: [(&str, &Bound<'_, PyAny>); 4] = [
        ("{\"error\":", error),
        (",\"output\":", output),
        (",\"success\":", success),
        (",\"tool_name\":", tool_name),
    ];
    for (label, value) in fields {
        out.push_str(label);
        canonical::write_value(&mut out, value, 1).ok()?;
    }
    out.push('}');
    Some(digest::sha256_hex(out.as_bytes()))
}

/// `"\n".join` of every string the redactor's clean check collects, or None
/// when the twin must decide (a secret-named key, or a value it walks itself).
#[pyfunction]
fn joined_strings(value: &Bound<'_, PyAny>, is_secret_key: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    Ok(match strings::joined_strings(value, is_secret_key)? {
        strings::Walk::Joined(text) => Some(text),
        strings::Walk::Undecided => None,
    })
}

/// The crate's version.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The names of the accelerated functions this build exports.
#[pyfunction]
fn functions<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, FUNCTIONS)
}

const FUNCTIONS: [&str; 6] = [
    "cache_key_hash",
    "canonical_json",
    "canonical_fingerprint",
    "sha256_hex",
    "tool_result_fingerprint",
    "joined_strings",
];

#[pymodule]
fn avo_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cache_key_hash, m)?)?;
    m.add_function(wrap_pyfunction!(canonical_json, m)?)?;
    m.add_function(wrap_pyfunction!(canonical_fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(sha256_hex, m)?)?;
    m.add_function(wrap_pyfunction!(tool_result_fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(joined_strings, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(functions, m)?)?;
    Ok(())
}
