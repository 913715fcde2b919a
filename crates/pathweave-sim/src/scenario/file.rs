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
    let fail = |message: String| ScenarioError::Io {
        file: path.display().to_string(),
        message,
    };
    let too_large = |len: u64| {
        format!(
            "{len} bytes; scenario files are limited to {max_bytes} bytes \
             (PATHWEAVE_MAX_SCENARIO_BYTES raises the limit)"
        )
    };
    let bytes =
        read_regular_file(path, max_bytes, "a scenario is a TOML file", too_large).map_err(fail)?;
    String::from_utf8(bytes).map_err(|e| {
        fail(format!(
            "not UTF-8 text (invalid byte at offset {}); a scenario is a TOML text file",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// The bytes of the file at `path`, which must be a regular file (`kind` says what it should
/// be, for the error) of at most `max_bytes` bytes (`too_large` words the error for a size).
/// The kind and size are checked before the file is opened and again on what was opened; the
/// size once more while reading. The error does not name the file.
pub(crate) fn read_regular_file(
    path: &Path,
    max_bytes: u64,
    kind: &str,
    too_large: impl Fn(u64) -> String,
) -> Result<Vec<u8>, String> {
    let io = |e: std::io::Error| format!("cannot read the file: {e}");
    let check_size = |len: u64| {
        if len <= max_bytes {
            Ok(())
        } else {
            Err(too_large(len))
        }
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    check_kind(&meta, kind)?;
    check_size(meta.len())?;
    let file = File::open(path).map_err(io)?;
    // Replaced between the two checks: look again at what was opened.
    let opened = file.metadata().map_err(io)?;
    check_kind(&opened, kind)?;
    let mut bytes = Vec::with_capacity(usize::try_from(opened.len()).unwrap_or(0));
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    check_size(bytes.len() as u64)?;
    Ok(bytes)
}

fn check_kind(meta: &Metadata, expected: &str) -> Result<(), String> {
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(());
    }
    let what = if kind.is_dir() {
        "a directory"
    } else {
        special_kind(&kind)
    };
    Err(format!("{what}, not a regular file; {expected}"))
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
