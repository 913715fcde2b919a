//! Reading a scenario file: only a regular file, and no more than a size limit.
//!
//! The kind and size are checked from the file's metadata before it is opened, so a named pipe
//! or a device is refused at once instead of blocking or streaming without end, and an
//! oversized file is refused without reading it. The size is checked again while reading, in
//! case the file grows in between.

use super::ScenarioError;
use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;

/// The largest scenario file read unless a caller allows more: 4 MiB. The largest shipped
/// scenario is a few kilobytes; a generated one with thousands of links and flows fits easily.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The text of the scenario file at `path`: a regular file of at most `max_bytes` bytes of
/// UTF-8. Every error names the file once.
pub fn read_scenario_file(path: &Path, max_bytes: u64) -> Result<String, ScenarioError> {
    let file_name = path.display().to_string();
    let fail = |message: String| ScenarioError::Io {
        file: file_name.clone(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| fail(e.to_string()))?;
    check_kind(&meta).map_err(&fail)?;
    check_size(meta.len(), max_bytes).map_err(&fail)?;
    let file = File::open(path).map_err(|e| fail(e.to_string()))?;
    // Replaced between the two checks: look again at what was opened.
    let opened = file.metadata().map_err(|e| fail(e.to_string()))?;
    check_kind(&opened).map_err(&fail)?;
    let mut bytes = Vec::with_capacity(usize::try_from(opened.len()).unwrap_or(0));
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| fail(e.to_string()))?;
    check_size(bytes.len() as u64, max_bytes).map_err(&fail)?;
    String::from_utf8(bytes).map_err(|e| {
        fail(format!(
            "not UTF-8 text (invalid byte at offset {}); a scenario is a TOML text file",
            e.utf8_error().valid_up_to()
        ))
    })
}

fn check_kind(meta: &Metadata) -> Result<(), String> {
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(());
    }
    let what = if kind.is_dir() {
        "a directory"
    } else {
        special_kind(&kind)
    };
    Err(format!(
        "{what}, not a regular file; a scenario is a TOML file"
    ))
}

#[cfg(unix)]
fn special_kind(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a named pipe"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
fn special_kind(_kind: &std::fs::FileType) -> &'static str {
    "a special file"
}

fn check_size(len: u64, max_bytes: u64) -> Result<(), String> {
    if len <= max_bytes {
        return Ok(());
    }
    Err(format!(
        "{} bytes; scenario files are limited to {} bytes (PATHWEAVE_MAX_SCENARIO_BYTES raises \
         the limit)",
        len, max_bytes
    ))
}
