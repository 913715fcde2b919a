//! Values and their units: numbers, quantities with units (`"60Mbps"`, `"20ms"`), arithmetic
//! expressions, names, tables, and `count` expansion with `{i}`/`{n}` substitution. Every
//! reader here names the field and the value it refuses.

use super::{Reader, ScenarioError, MAX_RATE_BPS, MAX_SIZE_BYTES, MAX_TIME, R};
use crate::quantity::{clip, eval, parse_with_units, RATE_UNITS, SIZE_UNITS, TIME_UNITS};
use pathweave_cc::{Bandwidth, Duration};
use toml::{Table, Value};

/// A value as an error repeats it: tables elided, long arrays counted, at most
/// [`MAX_ECHO_CHARS`](crate::quantity::MAX_ECHO_CHARS) characters.
fn show(v: &Value) -> String {
    match v {
        Value::Table(_) => "{…}".into(),
        Value::Array(a) if a.len() > 6 => format!("[… {} items]", a.len()),
        other => clip(&other.to_string()),
    }
}

/// `e` with the other forms the field takes (`alternatives`) added to what it allows: a
/// field that holds a quantity or a boolean says so when neither was given.
pub(super) fn or_also(e: ScenarioError, alternatives: &str) -> ScenarioError {
    amend(e, |message| format!("{message}; or {alternatives}"))
}

/// `e` with its message rewritten by `f`, for the errors about a field (a missing or a bad
/// value); errors of the file as a whole pass unchanged.
fn amend(e: ScenarioError, f: impl FnOnce(String) -> String) -> ScenarioError {
    match e {
        ScenarioError::Invalid {
            file,
            field,
            value,
            message,
        } => ScenarioError::Invalid {
            file,
            field,
            value,
            message: f(message),
        },
        ScenarioError::Missing {
            file,
            field,
            message,
        } => ScenarioError::Missing {
            file,
            field,
            message: f(message),
        },
        other => other,
    }
}

pub(super) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

pub(super) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Replace `{i}` and `{n}` in every string of `v`, in place (`i` and `n` are the copy's
/// index and index + 1, already formatted). A clone of the template is edited rather than
/// rebuilt, so its tables keep their hashed keys and only strings that name a placeholder
/// are rewritten.
fn substitute(v: &mut Value, i: &str, n: &str) {
    match v {
        Value::String(s) if s.contains('{') => *s = s.replace("{i}", i).replace("{n}", n),
        Value::Array(a) => a.iter_mut().for_each(|x| substitute(x, i, n)),
        Value::Table(t) => t.iter_mut().for_each(|(_, x)| substitute(x, i, n)),
        _ => {}
    }
}

impl Reader<'_> {
    pub(super) fn invalid(
        &self,
        field: &str,
        v: &Value,
        message: impl Into<String>,
    ) -> ScenarioError {
        ScenarioError::Invalid {
            file: self.file.to_string(),
            field: field.to_string(),
            value: show(v),
            message: message.into(),
        }
    }

    pub(super) fn missing(&self, field: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError::Missing {
            file: self.file.to_string(),
            field: field.to_string(),
            message: message.into(),
        }
    }

    pub(super) fn check_keys(&self, t: &Table, path: &str, allowed: &[&str]) -> R<()> {
        for (k, v) in t {
            if !allowed.contains(&k.as_str()) {
                return Err(self.invalid(
                    &join(path, &clip(k)),
                    v,
                    format!("unknown field (allowed here: {})", allowed.join(", ")),
                ));
            }
        }
        Ok(())
    }

    pub(super) fn number(&self, field: &str, v: &Value) -> R<f64> {
        match v {
            Value::Integer(i) => Ok(*i as f64),
            Value::Float(f) if !f.is_finite() => Err(self.invalid(
                field,
                v,
                "expected a finite number (inf and nan are not allowed)",
            )),
            Value::Float(f) => Ok(*f),
            Value::String(s) => eval(s).map_err(|e| {
                self.invalid(
                    field,
                    v,
                    format!("{e}; expected a number or an arithmetic expression such as \"1/3\""),
                )
            }),
            _ => Err(self.invalid(
                field,
                v,
                format!("expected a number, found {}", type_name(v)),
            )),
        }
    }

    pub(super) fn quantity(
        &self,
        field: &str,
        v: &Value,
        units: &[(&str, f64)],
        what: &str,
    ) -> R<f64> {
        match v {
            Value::String(s) => parse_with_units(s, units)
                .map_err(|e| self.invalid(field, v, format!("{e}; expected {what}"))),
            _ => Err(self.invalid(
                field,
                v,
                format!(
                    "expected {what} as a string with a unit, found {}",
                    type_name(v)
                ),
            )),
        }
    }

    pub(super) fn time(&self, field: &str, v: &Value) -> R<Duration> {
        let ns = self.quantity(field, v, TIME_UNITS, "a time such as \"20ms\"")?;
        if ns < 0.0 {
            return Err(self.invalid(field, v, "a time cannot be negative"));
        }
        let ns = ns.round();
        if ns > MAX_TIME.0 as f64 {
            return Err(self.invalid(
                field,
                v,
                "a time must be at most 10000000s (10^7 s, about 116 days)",
            ));
        }
        Ok(Duration(ns as u64))
    }

    pub(super) fn positive_time(&self, field: &str, v: &Value) -> R<Duration> {
        let d = self.time(field, v)?;
        if d == Duration::ZERO {
            return Err(self.invalid(field, v, "must be greater than zero"));
        }
        Ok(d)
    }

    pub(super) fn rate(&self, field: &str, v: &Value) -> R<Bandwidth> {
        let bps = self.quantity(field, v, RATE_UNITS, "a rate such as \"60Mbps\"")?;
        if bps < 1.0 {
            return Err(self.invalid(field, v, "a rate must be positive (at least 1bps)"));
        }
        let bps = bps.round();
        if bps > MAX_RATE_BPS as f64 {
            return Err(self.invalid(field, v, "a rate must be at most 10Tbps"));
        }
        Ok(Bandwidth::from_bps(bps as u64))
    }

    pub(super) fn size(&self, field: &str, v: &Value) -> R<u64> {
        let b = self.quantity(
            field,
            v,
            SIZE_UNITS,
            "a size such as \"1000B\" or \"1.5MB\"",
        )?;
        if b < 1.0 {
            return Err(self.invalid(field, v, "a size must be at least 1B"));
        }
        let b = b.round();
        if b > MAX_SIZE_BYTES as f64 {
            return Err(self.invalid(field, v, "a size must be at most 1000GB (10^12 bytes)"));
        }
        Ok(b as u64)
    }

    pub(super) fn small_size(&self, field: &str, v: &Value, max: u64) -> R<u32> {
        let b = self.size(field, v)?;
        if b > max {
            return Err(self.invalid(field, v, format!("must be at most {max}B")));
        }
        Ok(b as u32)
    }

    pub(super) fn whole(&self, field: &str, v: &Value, min: u64, max: u64) -> R<u64> {
        let x = self.number(field, v)?;
        if x.fract() != 0.0 || x < min as f64 || x > max as f64 {
            return Err(self.invalid(
                field,
                v,
                format!("expected a whole number from {min} to {max}"),
            ));
        }
        Ok(x as u64)
    }

    /// A number, or the string "auto" (`None`): a RED setting ns-2.35 can derive itself.
    pub(super) fn number_or_auto(&self, field: &str, v: &Value, what: &str) -> R<Option<f64>> {
        match v {
            Value::String(s) if s.trim() == "auto" => Ok(None),
            Value::String(s) => eval(s).map(Some).map_err(|e| {
                self.invalid(
                    field,
                    v,
                    format!("{e}; expected {what} or \"auto\" (ns-2.35's automatic rule)"),
                )
            }),
            Value::Integer(i) => Ok(Some(*i as f64)),
            Value::Float(f) if !f.is_finite() => Err(self.invalid(
                field,
                v,
                format!(
                    "expected {what} (a finite number; inf and nan are not allowed) or \"auto\""
                ),
            )),
            Value::Float(f) => Ok(Some(*f)),
            _ => Err(self.invalid(
                field,
                v,
                format!(
                    "expected {what} or \"auto\" (ns-2.35's automatic rule), found {}",
                    type_name(v)
                ),
            )),
        }
    }

    pub(super) fn probability(&self, field: &str, v: &Value) -> R<f64> {
        let p = self.number(field, v)?;
        if !(0.0..=1.0).contains(&p) {
            return Err(self.invalid(field, v, "a probability must be between 0 and 1"));
        }
        Ok(p)
    }

    pub(super) fn boolean(&self, field: &str, v: &Value) -> R<bool> {
        v.as_bool().ok_or_else(|| {
            self.invalid(
                field,
                v,
                format!("expected true or false, found {}", type_name(v)),
            )
        })
    }

    pub(super) fn string<'v>(&self, field: &str, v: &'v Value) -> R<&'v str> {
        v.as_str().ok_or_else(|| {
            self.invalid(
                field,
                v,
                format!("expected a string, found {}", type_name(v)),
            )
        })
    }

    pub(super) fn name(&self, field: &str, v: &Value) -> R<String> {
        let s = self.string(field, v)?;
        if s.is_empty()
            || s.starts_with('~')
            || s.chars().any(|c| c.is_whitespace() || c == '{' || c == '}')
        {
            return Err(self.invalid(
                field,
                v,
                "a name must be non-empty, without spaces or braces, and not start with '~'",
            ));
        }
        Ok(s.to_string())
    }

    pub(super) fn table<'v>(&self, field: &str, v: &'v Value) -> R<&'v Table> {
        v.as_table().ok_or_else(|| {
            self.invalid(
                field,
                v,
                format!("expected a table, found {}", type_name(v)),
            )
        })
    }

    pub(super) fn array_of_tables<'v>(&self, root: &'v Table, key: &str) -> R<Vec<&'v Table>> {
        match root.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, v)| self.table(&format!("{key}[{i}]"), v))
                .collect(),
            Some(v) => Err(self.invalid(key, v, format!("expected [[{key}]] tables"))),
        }
    }

    /// Expand `count`: the copies of an item, each with `{i}`/`{n}` substituted, beside the
    /// copy's index (`None` for an item without `count`), which `TableCopy::name_in` puts
    /// into the errors of that copy.
    pub(super) fn expand(&self, t: &Table, path: &str) -> R<Box<dyn Iterator<Item = TableCopy>>> {
        let Some(cv) = t.get("count") else {
            return Ok(Box::new(std::iter::once(TableCopy {
                table: t.clone(),
                index: None,
            })));
        };
        let field = join(path, "count");
        let count = self.whole(&field, cv, 1, 100_000)? as usize;
        let name = t.get("name").and_then(Value::as_str).unwrap_or("");
        if count > 1 && !name.contains("{i}") && !name.contains("{n}") {
            return Err(self.invalid(
                &field,
                cv,
                format!("with count > 1 the name (\"{}\") must contain {{i}} or {{n}} so each copy is unique", clip(name)),
            ));
        }
        let mut base = t.clone();
        base.remove("count");
        // One copy at a time, as the caller reads it: a small item with a large count must not
        // hold every copy's table at once (each is dropped once read into its spec).
        Ok(Box::new((0..count).map(move |k| {
            let mut table = base.clone();
            let (i, n) = (k.to_string(), (k + 1).to_string());
            table.iter_mut().for_each(|(_, x)| substitute(x, &i, &n));
            TableCopy {
                table,
                index: Some((k, count)),
            }
        })))
    }
}

/// One copy of a `[[link]]` or `[[flow]]` table, as `Reader::expand` makes it.
pub(super) struct TableCopy {
    /// The table with `{i}` and `{n}` substituted.
    pub(super) table: Table,
    /// Which copy (`i`) of how many (`count`); `None` for a table without `count`.
    pub(super) index: Option<(usize, usize)>,
}

impl TableCopy {
    /// Say in `e` which copy it came from: the field's path names the table (`flow[0]`), and
    /// without this a bad value in one of 10,000 copies would not say which.
    pub(super) fn name_in(&self, e: ScenarioError) -> ScenarioError {
        let Some((i, count)) = self.index else {
            return e;
        };
        let named = match self.table.get("name").and_then(Value::as_str) {
            Some(name) => format!(", named \"{}\"", clip(name)),
            None => String::new(),
        };
        let place = format!(" (in the copy with i = {i}{named}, of count = {count})");
        amend(e, |message| message + &place)
    }
}
