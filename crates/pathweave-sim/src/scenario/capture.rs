//! `[capture]`: which link directions are captured to pcapng files and with what limits, and
//! whether the per-packet queue log is kept (see [`crate::capture`]).

use super::values::type_name;
use super::{LinkSpec, Reader, R};
use crate::capture::pcapng::PcapngWriter;
use crate::capture::{
    CaptureSpec, DEFAULT_MAX_BYTES, DEFAULT_MAX_EVENTS, DEFAULT_SNAPLEN, MAX_MAX_EVENTS,
    MAX_SNAPLEN, MIN_SNAPLEN,
};
use crate::quantity::clip;
use std::collections::{BTreeSet, HashMap};
use toml::Value;

/// The keys `[capture]` accepts.
pub const CAPTURE_KEYS: &[&str] = &[
    "links",
    "directions",
    "snaplen",
    "max_bytes",
    "events",
    "max_events",
];

impl Reader<'_> {
    /// `[capture]`, if present.
    pub(super) fn capture(
        &self,
        v: Option<&Value>,
        links: &[LinkSpec],
        link_index: &HashMap<String, usize>,
    ) -> R<Option<CaptureSpec>> {
        let Some(v) = v else {
            return Ok(None);
        };
        let Value::Table(t) = v else {
            return Err(self.invalid(
                "capture",
                v,
                format!(
                    "expected a [capture] table ({}), found {}",
                    CAPTURE_KEYS.join(", "),
                    type_name(v)
                ),
            ));
        };
        self.check_keys(t, "capture", CAPTURE_KEYS)?;
        let chosen: Vec<usize> = match t.get("links") {
            None => (0..links.len()).collect(),
            Some(v) => {
                let Value::Array(items) = v else {
                    return Err(self.invalid(
                        "capture.links",
                        v,
                        format!("expected a list of link names, found {}", type_name(v)),
                    ));
                };
                let mut out = Vec::with_capacity(items.len());
                for (k, item) in items.iter().enumerate() {
                    let field = format!("capture.links[{k}]");
                    let s = self.string(&field, item)?;
                    let Some(&l) = link_index.get(s) else {
                        let known: Vec<String> =
                            links.iter().take(12).map(|l| clip(&l.name)).collect();
                        let more = if links.len() > 12 { ", …" } else { "" };
                        return Err(self.invalid(
                            &field,
                            item,
                            format!(
                                "no link is called '{}' (links: {}{more})",
                                clip(s),
                                known.join(", ")
                            ),
                        ));
                    };
                    if out.contains(&l) {
                        return Err(self.invalid(&field, item, "listed twice"));
                    }
                    out.push(l);
                }
                out
            }
        };
        let (forward, reverse) = match t.get("directions") {
            None => (true, true),
            Some(v) => match self.string("capture.directions", v)? {
                "both" => (true, true),
                "forward" => (true, false),
                "reverse" => (false, true),
                _ => {
                    return Err(self.invalid(
                        "capture.directions",
                        v,
                        "expected \"both\", \"forward\" or \"reverse\"",
                    ))
                }
            },
        };
        let mut dirs = BTreeSet::new();
        for l in chosen {
            if forward {
                dirs.insert(2 * l as u32);
            }
            if reverse {
                dirs.insert(2 * l as u32 + 1);
            }
        }
        let snaplen = match t.get("snaplen") {
            None => DEFAULT_SNAPLEN,
            Some(v) => {
                let n = self
                    .whole("capture.snaplen", v, 0, u32::MAX as u64)
                    .map_err(|_| {
                        self.invalid(
                            "capture.snaplen",
                            v,
                            format!(
                                "expected a whole number of bytes from {MIN_SNAPLEN} (an IPv4 \
                             header) to {MAX_SNAPLEN}"
                            ),
                        )
                    })?;
                if !(MIN_SNAPLEN as u64..=MAX_SNAPLEN as u64).contains(&n) {
                    return Err(self.invalid(
                        "capture.snaplen",
                        v,
                        format!(
                            "expected a whole number of bytes from {MIN_SNAPLEN} (an IPv4 \
                             header) to {MAX_SNAPLEN}"
                        ),
                    ));
                }
                n as u32
            }
        };
        let max_bytes = match t.get("max_bytes") {
            None => DEFAULT_MAX_BYTES,
            Some(v) => {
                let b = self.size("capture.max_bytes", v)?;
                let min = PcapngWriter::<Vec<u8>>::MIN_BYTES;
                if b < min {
                    return Err(self.invalid(
                        "capture.max_bytes",
                        v,
                        format!("must be at least {min}B (a file's headers and a few packets)"),
                    ));
                }
                b
            }
        };
        let events = match t.get("events") {
            None => false,
            Some(v) => self.boolean("capture.events", v)?,
        };
        let max_events = match t.get("max_events") {
            None => DEFAULT_MAX_EVENTS,
            Some(v) => self.whole("capture.max_events", v, 1, MAX_MAX_EVENTS)?,
        };
        Ok(Some(CaptureSpec {
            dirs: dirs.into_iter().collect(),
            snaplen,
            max_bytes,
            events,
            max_events,
        }))
    }
}
