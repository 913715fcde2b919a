//! `[[link]]`: rate, delay, queue (drop-tail or RED), scheduled changes and outages.

use super::values::join;
use super::{Reader, MAX_SIZE_BYTES, R};
use crate::link::{LinkDirSpec, LossModel, QueueSpec, Trace};
use crate::quantity::{eval, split_unit, unknown_unit, SIZE_UNITS};
use crate::red::RedParams;
use pathweave_cc::{Bandwidth, Duration, Instant};
use std::sync::Arc;
use toml::{Table, Value};

/// A link's rate as written: a constant, or a trace per direction.
struct Rates {
    forward: Bandwidth,
    reverse: Bandwidth,
    forward_trace: Option<Arc<Trace>>,
    reverse_trace: Option<Arc<Trace>>,
}

/// One hop of a path: a link, traversed forward or (with a `~` prefix) in reverse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    /// Index into [`Scenario::links`](super::Scenario::links).
    pub link: usize,
    /// Traverse the link's reverse direction.
    pub reverse: bool,
}

/// A change to a link at a given time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LinkChange {
    /// New rate.
    Rate(Bandwidth),
    /// New propagation delay.
    Delay(Duration),
    /// Outage starts.
    Down,
    /// Outage ends.
    Up,
}

/// A scheduled link change (applies to both directions).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkEvent {
    /// When.
    pub at: Instant,
    /// What.
    pub change: LinkChange,
}

/// An outage as read, for the check that one link's outages do not overlap.
pub(super) struct Outage {
    from: Instant,
    to: Instant,
    /// The event's field path.
    path: String,
    /// Its `at` as written.
    at: Value,
}

/// A duplex link.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    /// Unique name.
    pub name: String,
    /// The direction paths traverse forward.
    pub forward: LinkDirSpec,
    /// The other direction (ACKs of forward flows).
    pub reverse: LinkDirSpec,
    /// Scheduled changes, in time order.
    pub events: Vec<LinkEvent>,
}

impl Reader<'_> {
    pub(super) fn queue(
        &self,
        v: &Value,
        path: &str,
        rate: Bandwidth,
        delay: Duration,
    ) -> R<QueueSpec> {
        let t = self.table(path, v)?;
        let kind = match t.get("type") {
            Some(k) => self.string(&join(path, "type"), k)?,
            None => {
                return Err(self.missing(&join(path, "type"), "give type = \"droptail\" or \"red\""))
            }
        };
        match kind {
            "droptail" => {
                self.check_keys(t, path, &["type", "limit"])?;
                let limit = match t.get("limit") {
                    Some(v) => self.limit(&join(path, "limit"), v)?,
                    None => crate::link::Limit::Packets(50),
                };
                Ok(QueueSpec::DropTail(limit))
            }
            "red" => {
                self.check_keys(
                    t,
                    path,
                    &[
                        "type",
                        "limit",
                        "min_th",
                        "max_th",
                        "max_p",
                        "w_q",
                        "gentle",
                        "wait",
                        "mode",
                        "mean_pkt_size",
                        "target_delay",
                    ],
                )?;
                let mut p = RedParams::default();
                if let Some(v) = t.get("limit") {
                    match self.limit(&join(path, "limit"), v)? {
                        crate::link::Limit::Packets(n) => p.limit = n,
                        crate::link::Limit::Bytes(_) => {
                            return Err(self.invalid(
                                &join(path, "limit"),
                                v,
                                "RED's limit is a number of packets (\"50pkt\"); with mode = \"bytes\" \
                                 it counts units of mean_pkt_size, as ns-2's does",
                            ))
                        }
                    }
                }
                // `None` stands for "auto": ns-2.35's rule, resolved below from this link's
                // rate and delay once mean_pkt_size is known (see red.rs).
                let threshold = |key: &str, default: f64| -> R<Option<f64>> {
                    match t.get(key) {
                        Some(v) => self.number_or_auto(&join(path, key), v, "a number of packets"),
                        None => Ok(Some(default)),
                    }
                };
                let min_th = threshold("min_th", p.min_th)?;
                let max_th = threshold("max_th", p.max_th)?;
                if let Some(v) = t.get("max_p") {
                    p.max_p = self.probability(&join(path, "max_p"), v)?;
                }
                let w_q = match t.get("w_q") {
                    Some(v) => {
                        let w = self.number_or_auto(&join(path, "w_q"), v, "a weight in (0, 1]")?;
                        if w.is_some_and(|w| !(w > 0.0 && w <= 1.0)) {
                            return Err(self.invalid(
                                &join(path, "w_q"),
                                v,
                                "w_q must be in (0, 1], or \"auto\" for ns-2.35's rule",
                            ));
                        }
                        w
                    }
                    None => Some(p.w_q),
                };
                let mut target_delay = crate::red::NS2_TARGET_DELAY;
                if let Some(v) = t.get("target_delay") {
                    target_delay = self.positive_time(&join(path, "target_delay"), v)?;
                    if min_th.is_some() {
                        return Err(self.invalid(
                            &join(path, "target_delay"),
                            v,
                            "target_delay only sets min_th = \"auto\" (ns-2.35's targetdelay_); \
                             give min_th = \"auto\" or drop target_delay",
                        ));
                    }
                }
                if let Some(v) = t.get("gentle") {
                    p.gentle = self.boolean(&join(path, "gentle"), v)?;
                }
                if let Some(v) = t.get("wait") {
                    p.wait = self.boolean(&join(path, "wait"), v)?;
                }
                if let Some(v) = t.get("mode") {
                    p.bytes = match self.string(&join(path, "mode"), v)? {
                        "packets" => false,
                        "bytes" => true,
                        _ => {
                            return Err(self.invalid(
                                &join(path, "mode"),
                                v,
                                "allowed: \"packets\", \"bytes\"",
                            ))
                        }
                    };
                }
                if let Some(v) = t.get("mean_pkt_size") {
                    p.mean_pktsize = self.small_size(&join(path, "mean_pkt_size"), v, 65_535)?;
                }
                p.min_th = min_th
                    .unwrap_or_else(|| crate::red::auto_min_th(rate, p.mean_pktsize, target_delay));
                p.max_th = max_th.unwrap_or_else(|| crate::red::auto_max_th(p.min_th));
                p.w_q = w_q.unwrap_or_else(|| crate::red::auto_w_q(rate, p.mean_pktsize, delay));
                if !(p.min_th >= 0.0 && p.max_th > p.min_th) {
                    // The field at fault: max_th when it was given as a number and min_th is
                    // not negative; otherwise min_th (the default max_th, or "auto", which
                    // follows min_th, is not at fault).
                    let max_given = max_th.is_some() && t.contains_key("max_th");
                    let (key, value) = if p.min_th >= 0.0 && max_given {
                        ("max_th", p.max_th)
                    } else {
                        ("min_th", p.min_th)
                    };
                    let v = t.get(key).cloned().unwrap_or(Value::Float(value));
                    let how = |key: &str, auto: bool| {
                        if auto {
                            "\"auto\" resolved for this link"
                        } else if t.contains_key(key) {
                            "given"
                        } else {
                            "the default"
                        }
                    };
                    let fix = if key == "max_th" {
                        "max_th must be greater than min_th"
                    } else if max_th.is_none() {
                        "min_th must be greater than 0 (max_th = \"auto\" is 3 × min_th)"
                    } else if p.min_th < 0.0 {
                        "min_th must be at least 0"
                    } else if min_th.is_none() {
                        "min_th must be less than max_th: give a larger max_th (or max_th = \
                         \"auto\"), or a number for min_th below max_th"
                    } else {
                        "min_th must be less than max_th: lower it or give a larger max_th"
                    };
                    let allowed = format!(
                        "need 0 ≤ min_th < max_th (min_th = {} ({}), max_th = {} ({})); {fix}",
                        p.min_th,
                        how("min_th", min_th.is_none()),
                        p.max_th,
                        how("max_th", max_th.is_none()),
                    );
                    return Err(self.invalid(&join(path, key), &v, allowed));
                }
                Ok(QueueSpec::Red(p))
            }
            _ => Err(self.invalid(
                &join(path, "type"),
                &Value::String(kind.into()),
                "allowed: \"droptail\", \"red\"",
            )),
        }
    }

    fn limit(&self, field: &str, v: &Value) -> R<crate::link::Limit> {
        if let Value::String(s) = v {
            if let Some(n) = s.trim().strip_suffix("pkt") {
                let x = eval(n).map_err(|e| self.invalid(field, v, e))?;
                if x.fract() != 0.0 || !(1.0..=1e9).contains(&x) {
                    return Err(self.invalid(
                        field,
                        v,
                        "a packet limit must be a whole number ≥ 1, e.g. \"100pkt\"",
                    ));
                }
                return Ok(crate::link::Limit::Packets(x as u32));
            }
        }
        const WHAT: &str = "a buffer size such as \"100pkt\" or \"150KB\"";
        if let Value::String(s) = v {
            // Packets are a unit here too, so an unknown unit's list names them.
            let (_, unit) = split_unit(s);
            if !unit.is_empty() && !SIZE_UNITS.iter().any(|(u, _)| *u == unit) {
                let units: Vec<&str> = ["pkt"]
                    .into_iter()
                    .chain(SIZE_UNITS.iter().map(|(u, _)| *u))
                    .collect();
                let e = unknown_unit(unit, &units.join(", "));
                return Err(self.invalid(field, v, format!("{e}; expected {WHAT}")));
            }
        }
        let b = self.quantity(field, v, SIZE_UNITS, WHAT)?;
        if b < 1.0 {
            return Err(self.invalid(field, v, "a buffer must hold at least 1B"));
        }
        let b = b.round();
        if b > MAX_SIZE_BYTES as f64 {
            return Err(self.invalid(
                field,
                v,
                "a buffer must hold at most 1000GB (10^12 bytes), or give packets (\"100pkt\")",
            ));
        }
        Ok(crate::link::Limit::Bytes(b as u64))
    }

    /// A link's `rate`: a quantity, or `{ trace = "FILE" }` (both directions replay it) with
    /// an optional `reverse_trace = "FILE"` for the reverse direction. A trace's rate is its
    /// mean rate.
    fn rates(&self, v: &Value, path: &str) -> R<Rates> {
        let Value::Table(t) = v else {
            let r = self.rate(path, v)?;
            return Ok(Rates {
                forward: r,
                reverse: r,
                forward_trace: None,
                reverse_trace: None,
            });
        };
        self.check_keys(t, path, &["trace", "reverse_trace"])?;
        let forward = match t.get("trace") {
            Some(v) => self.trace(&join(path, "trace"), v)?,
            None => {
                return Err(self.missing(
                    &join(path, "trace"),
                    "give rate = { trace = \"FILE\" }, a Mahimahi trace (one line per \
                     1504-byte delivery opportunity, an integer millisecond each)",
                ))
            }
        };
        let reverse = match t.get("reverse_trace") {
            Some(v) => self.trace(&join(path, "reverse_trace"), v)?,
            None => Arc::clone(&forward),
        };
        Ok(Rates {
            forward: forward.mean_rate(),
            reverse: reverse.mean_rate(),
            forward_trace: Some(forward),
            reverse_trace: Some(reverse),
        })
    }

    /// The trace file named by `v`, relative to the scenario file's directory, read once per
    /// scenario however many link directions replay it.
    fn trace(&self, field: &str, v: &Value) -> R<Arc<Trace>> {
        let name = self.string(field, v)?;
        if name.is_empty() {
            return Err(self.invalid(field, v, "the name of a trace file is empty"));
        }
        let path = self.dir.join(name);
        if let Some(t) = self.traces.borrow().get(&path) {
            return Ok(Arc::clone(t));
        }
        let trace = Trace::load(&path)
            .map_err(|e| self.invalid(field, v, format!("{}: {e}", path.display())))?;
        let trace = Arc::new(trace);
        self.traces.borrow_mut().insert(path, Arc::clone(&trace));
        Ok(trace)
    }

    /// One `[[link.event]]` table (its keys already checked) into `events`; an outage is
    /// also returned, to be checked against the link's others.
    pub(super) fn link_event(
        &self,
        et: &Table,
        epath: &str,
        duration: Duration,
        traced: bool,
        events: &mut Vec<LinkEvent>,
    ) -> R<Option<Outage>> {
        let at = match et.get("at") {
            Some(v) => self.time(&join(epath, "at"), v)?,
            None => return Err(self.missing(&join(epath, "at"), "give the time of the change")),
        };
        if at > duration {
            let v = et.get("at").cloned().unwrap_or(Value::Integer(0));
            return Err(self.invalid(&join(epath, "at"), &v, "is after the end of the simulation"));
        }
        let at = Instant(at.as_nanos());
        let mut any = false;
        let mut outage = None;
        if let Some(v) = et.get("rate") {
            if traced {
                return Err(self.invalid(
                    &join(epath, "rate"),
                    v,
                    "this link's rate comes from a trace (rate = { trace = ... }); \
                     a rate change would replace it: edit the trace instead (delay \
                     changes and outages are allowed)",
                ));
            }
            events.push(LinkEvent {
                at,
                change: LinkChange::Rate(self.rate(&join(epath, "rate"), v)?),
            });
            any = true;
        }
        if let Some(v) = et.get("delay") {
            events.push(LinkEvent {
                at,
                change: LinkChange::Delay(self.time(&join(epath, "delay"), v)?),
            });
            any = true;
        }
        if let Some(v) = et.get("down") {
            let d = self.positive_time(&join(epath, "down"), v)?;
            events.push(LinkEvent {
                at,
                change: LinkChange::Down,
            });
            events.push(LinkEvent {
                at: at + d,
                change: LinkChange::Up,
            });
            outage = Some(Outage {
                from: at,
                to: at + d,
                path: epath.to_string(),
                at: et.get("at").cloned().unwrap_or(Value::Boolean(false)),
            });
            any = true;
        }
        if !any {
            return Err(self.missing(
                epath,
                "an event changes rate, delay, or takes the link down for a time (down = \"2s\")",
            ));
        }
        Ok(outage)
    }

    /// Refuse outages of one link that overlap or touch; `outages` in file order.
    pub(super) fn check_outages(&self, outages: &mut [Outage]) -> R<()> {
        // Stable: equal starts keep file order.
        outages.sort_by_key(|o| o.from);
        for w in outages.windows(2) {
            let (first, next) = (&w[0], &w[1]);
            if next.from <= first.to {
                return Err(self.invalid(
                    &join(&next.path, "at"),
                    &next.at,
                    format!(
                        "this outage starts at {} s, before or as the outage of {} \
                         ({} s to {} s) ends; outages of one link must not overlap or touch \
                         (give one event with the whole down time)",
                        next.from.0 as f64 / 1e9,
                        first.path,
                        first.from.0 as f64 / 1e9,
                        first.to.0 as f64 / 1e9
                    ),
                ));
            }
        }
        Ok(())
    }

    pub(super) fn link(&self, t: &Table, path: &str, duration: Duration) -> R<LinkSpec> {
        self.check_keys(
            t,
            path,
            &[
                "name",
                "rate",
                "delay",
                "jitter",
                "queue",
                "loss",
                "reverse_loss",
                "event",
            ],
        )?;
        let name = match t.get("name") {
            Some(v) => self.name(&join(path, "name"), v)?,
            None => return Err(self.missing(&join(path, "name"), "every link needs a unique name")),
        };
        let rates = match t.get("rate") {
            Some(v) => self.rates(v, &join(path, "rate"))?,
            None => {
                return Err(self.missing(
                    &join(path, "rate"),
                    "give a rate such as \"60Mbps\", or a trace: { trace = \"FILE\" }",
                ))
            }
        };
        let delay = match t.get("delay") {
            Some(v) => self.time(&join(path, "delay"), v)?,
            None => {
                return Err(self.missing(
                    &join(path, "delay"),
                    "give a propagation delay such as \"10ms\"",
                ))
            }
        };
        let jitter = match t.get("jitter") {
            Some(v) => self.time(&join(path, "jitter"), v)?,
            None => Duration::ZERO,
        };
        // RED's automatic parameters follow each direction's rate (a trace's mean rate).
        let queue = |rate: Bandwidth| -> R<QueueSpec> {
            match t.get("queue") {
                Some(v) => self.queue(v, &join(path, "queue"), rate, delay),
                None => Ok(QueueSpec::DropTail(crate::link::Limit::Packets(50))),
            }
        };
        let forward_queue = queue(rates.forward)?;
        let reverse_queue = match rates.reverse == rates.forward {
            true => forward_queue.clone(),
            false => queue(rates.reverse)?,
        };
        let loss = |key: &str| -> R<LossModel> {
            match t.get(key) {
                Some(v) => self.loss_model(v, &join(path, key)),
                None => Ok(LossModel::None),
            }
        };
        let traced = rates.forward_trace.is_some();
        let forward = LinkDirSpec {
            rate: rates.forward,
            trace: rates.forward_trace,
            delay,
            queue: forward_queue,
            loss: loss("loss")?,
            jitter,
        };
        let reverse = LinkDirSpec {
            rate: rates.reverse,
            trace: rates.reverse_trace,
            delay,
            queue: reverse_queue,
            loss: loss("reverse_loss")?,
            jitter,
        };
        let mut events = Vec::new();
        // Outages as (from, to, event path, its `at` as written), to refuse overlapping ones.
        let mut outages: Vec<Outage> = Vec::new();
        if let Some(ev) = t.get("event") {
            let Value::Array(list) = ev else {
                return Err(self.invalid(
                    &join(path, "event"),
                    ev,
                    "expected [[link.event]] tables",
                ));
            };
            for (k, e) in list.iter().enumerate() {
                let epath = format!("{path}.event[{k}]");
                let et = self.table(&epath, e)?;
                self.check_keys(et, &epath, &["at", "rate", "delay", "down"])?;
                if let Some(o) = self.link_event(et, &epath, duration, traced, &mut events)? {
                    outages.push(o);
                }
            }
        }
        self.check_outages(&mut outages)?;
        events.sort_by_key(|e| e.at);
        Ok(LinkSpec {
            name,
            forward,
            reverse,
            events,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::{Scenario, ScenarioError};

    /// The field and value a RED queue's threshold error names.
    fn blamed(queue: &str) -> (String, String, String) {
        let text = format!(
            "duration = \"1s\"\n[[link]]\nname = \"l\"\nrate = \"10Mbps\"\ndelay = \"10ms\"\n\
             queue = {queue}\n[[flow]]\nname = \"f\"\npath = [\"l\"]\n"
        );
        match Scenario::parse(&text, "x.toml", "x") {
            Err(ScenarioError::Invalid {
                field,
                value,
                message,
                ..
            }) => (field, value, message),
            other => panic!("{queue}: {other:?}"),
        }
    }

    #[test]
    fn red_threshold_errors_name_the_threshold_at_fault() {
        // (queue, field at fault, its value as written); the defaults are 5 and 15.
        let cases = [
            (r#"{ type = "red", min_th = 20 }"#, "min_th", "20"),
            (r#"{ type = "red", max_th = 3 }"#, "max_th", "3"),
            (
                r#"{ type = "red", min_th = 20, max_th = 10 }"#,
                "max_th",
                "10",
            ),
            (
                r#"{ type = "red", min_th = -1, max_th = 10 }"#,
                "min_th",
                "-1",
            ),
            (
                r#"{ type = "red", min_th = 0, max_th = "auto" }"#,
                "min_th",
                "0",
            ),
        ];
        for (queue, key, value) in cases {
            let (field, shown, message) = blamed(queue);
            assert_eq!(field, format!("link[0].queue.{key}"), "{queue}: {message}");
            assert_eq!(shown, value, "{queue}: {message}");
            assert!(message.contains(&format!("{key} must be")), "{message}");
        }
    }
}
