//! Quantities written by hand in scenario files: `"60Mbps"`, `"20ms"`, `"1.5MB"`, `"75pkt"`,
//! with an arithmetic expression allowed in front of the unit (`"(2+1)/3 ms"`), so a per-index
//! value such as `"{n}/3 ms"` works once `{n}` has been substituted.

/// The longest expression accepted, in characters (a hand-written value is a few dozen).
pub const MAX_EXPRESSION_CHARS: usize = 256;
/// The deepest nesting accepted: parentheses and unary minus signs, counted together.
pub const MAX_NESTING: usize = 64;
/// The most characters of a value an error message repeats; longer ones end in "…".
pub const MAX_ECHO_CHARS: usize = 80;

/// `s` as an error message repeats it: at most [`MAX_ECHO_CHARS`] characters, then "…".
pub fn clip(s: &str) -> String {
    match s.char_indices().nth(MAX_ECHO_CHARS) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

/// Evaluate `+ - * /` with parentheses over decimal numbers (`1.5`, `.5`, `2e-3`, `2.5E+2`).
/// At most [`MAX_EXPRESSION_CHARS`] characters and [`MAX_NESTING`] levels of parentheses and
/// unary minus signs, so a hostile file cannot exhaust the stack.
pub fn eval(expr: &str) -> Result<f64, String> {
    let len = expr.trim().chars().count();
    if len > MAX_EXPRESSION_CHARS {
        return Err(format!(
            "the expression is {len} characters long (at most {MAX_EXPRESSION_CHARS})"
        ));
    }
    let toks: Vec<char> = expr.chars().filter(|c| !c.is_whitespace()).collect();
    let mut p = Parser {
        t: &toks,
        i: 0,
        depth: 0,
    };
    let v = p.sum()?;
    if p.i != toks.len() {
        return Err(format!(
            "unexpected '{}' in expression '{}'",
            toks[p.i],
            clip(expr.trim())
        ));
    }
    if !v.is_finite() {
        return Err(format!(
            "expression '{}' is not a finite number",
            clip(expr.trim())
        ));
    }
    Ok(v)
}

struct Parser<'a> {
    t: &'a [char],
    i: usize,
    /// Parentheses and unary minus signs open around the current position.
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.t.get(self.i).copied()
    }
    fn peek_at(&self, k: usize) -> Option<char> {
        self.t.get(self.i + k).copied()
    }
    fn sum(&mut self) -> Result<f64, String> {
        let mut v = self.product()?;
        while let Some(c @ ('+' | '-')) = self.peek() {
            self.i += 1;
            let r = self.product()?;
            v = if c == '+' { v + r } else { v - r };
        }
        Ok(v)
    }
    fn product(&mut self) -> Result<f64, String> {
        let mut v = self.atom()?;
        while let Some(c @ ('*' | '/')) = self.peek() {
            self.i += 1;
            let r = self.atom()?;
            v = if c == '*' { v * r } else { v / r };
        }
        Ok(v)
    }
    /// One level deeper (a parenthesis or a unary minus), refused past [`MAX_NESTING`].
    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(format!(
                "the expression is nested too deeply (at most {MAX_NESTING} levels of \
                 parentheses and minus signs)"
            ));
        }
        Ok(())
    }
    fn atom(&mut self) -> Result<f64, String> {
        match self.peek() {
            Some('(') => {
                self.i += 1;
                self.enter()?;
                let v = self.sum()?;
                if self.peek() != Some(')') {
                    return Err("missing ')'".into());
                }
                self.i += 1;
                self.depth -= 1;
                Ok(v)
            }
            Some('-') => {
                self.i += 1;
                self.enter()?;
                let v = -self.atom()?;
                self.depth -= 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() || c == '.' => {
                let s = self.i;
                while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '.') {
                    self.i += 1;
                }
                // An exponent: e or E, an optional sign, then digits. An `e` without digits
                // stays part of the number, which then fails to parse and is named.
                if let Some('e' | 'E') = self.peek() {
                    let signed = matches!(self.peek_at(1), Some('+' | '-'));
                    let digits_at = if signed { 2 } else { 1 };
                    self.i += if self.peek_at(digits_at).is_some_and(|c| c.is_ascii_digit()) {
                        digits_at
                    } else {
                        1
                    };
                    while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                        self.i += 1;
                    }
                }
                let text: String = self.t[s..self.i].iter().collect();
                text.parse::<f64>()
                    .map_err(|_| format!("'{}' is not a number", clip(&text)))
            }
            Some(c) => Err(format!("unexpected '{c}'")),
            None => Err("missing a number".into()),
        }
    }
}

/// Split `"1.5 MB"` into the expression `"1.5"` and the unit `"MB"`.
pub fn split_unit(s: &str) -> (&str, &str) {
    let t = s.trim();
    let cut = t
        .char_indices()
        .rev()
        .find(|&(_, c)| !c.is_ascii_alphabetic() && c != '/')
        .map_or(0, |(i, c)| i + c.len_utf8());
    (t[..cut].trim(), &t[cut..])
}

/// The error for `unit`, not among the comma-separated `allowed` units.
pub fn unknown_unit(unit: &str, allowed: &str) -> String {
    format!("unknown unit '{}' (allowed: {allowed})", clip(unit))
}

/// Parse a value with one of the given units (`(unit, scale)`); a missing unit is an error.
pub fn parse_with_units(s: &str, units: &[(&str, f64)]) -> Result<f64, String> {
    let (num, unit) = split_unit(s);
    let allowed = units.iter().map(|(u, _)| *u).collect::<Vec<_>>().join(", ");
    if unit.is_empty() {
        return Err(format!("a unit is required ({allowed})"));
    }
    let scale = units
        .iter()
        .find(|(u, _)| *u == unit)
        .map(|(_, k)| *k)
        .ok_or_else(|| unknown_unit(unit, &allowed))?;
    if num.is_empty() {
        return Err(format!("a number is required before the unit '{unit}'"));
    }
    Ok(eval(num)? * scale)
}

/// Time units, scaled to nanoseconds.
pub const TIME_UNITS: &[(&str, f64)] = &[
    ("ns", 1.0),
    ("us", 1e3),
    ("ms", 1e6),
    ("s", 1e9),
    ("min", 60e9),
];
/// Rate units, scaled to bits per second (decimal prefixes).
pub const RATE_UNITS: &[(&str, f64)] = &[
    ("bps", 1.0),
    ("Kbps", 1e3),
    ("kbps", 1e3),
    ("Mbps", 1e6),
    ("Gbps", 1e9),
    ("Tbps", 1e12),
];
/// Size units, scaled to bytes (decimal and binary prefixes).
pub const SIZE_UNITS: &[(&str, f64)] = &[
    ("B", 1.0),
    ("KB", 1e3),
    ("kB", 1e3),
    ("MB", 1e6),
    ("GB", 1e9),
    ("KiB", 1024.0),
    ("MiB", 1048576.0),
    ("GiB", 1073741824.0),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_follow_precedence() {
        assert_eq!(eval("1+2*3").unwrap(), 7.0);
        assert_eq!(eval("(1+2)*3").unwrap(), 9.0);
        assert!((eval("2/3").unwrap() - 0.6666666666666666).abs() < 1e-15);
        assert_eq!(eval("-4+1").unwrap(), -3.0);
        assert!(eval("1+").is_err());
        assert!(eval("1/0").is_err());
        assert!(eval("abc").is_err());
    }

    #[test]
    fn scientific_notation_takes_a_signed_exponent() {
        assert_eq!(eval("1e-3").unwrap(), 1e-3);
        assert_eq!(eval("2.5E+2").unwrap(), 250.0);
        assert_eq!(eval("1e3").unwrap(), 1000.0);
        assert!((eval("1e-3-1e-4").unwrap() - 9e-4).abs() < 1e-18);
        assert!((eval("2e-3*(1+1e+0)").unwrap() - 4e-3).abs() < 1e-18);
        assert!(eval("1e").unwrap_err().contains("'1e' is not a number"));
        assert!(eval("1e-").is_err());
        assert!(eval("1e400").is_err());
        assert_eq!(parse_with_units("1e-3 s", TIME_UNITS).unwrap(), 1e6);
        assert_eq!(parse_with_units("2.5E+2 ms", TIME_UNITS).unwrap(), 250e6);
    }

    #[test]
    fn deep_or_long_expressions_are_refused_not_overflowed() {
        let deep = format!("{}1{}", "(".repeat(40_000), ")".repeat(40_000));
        assert!(eval(&deep).unwrap_err().contains("characters long"));
        let minus = format!("{}1", "-".repeat(100_000));
        assert!(eval(&minus).unwrap_err().contains("characters long"));
        let nested = format!("{}1{}", "(".repeat(65), ")".repeat(65));
        assert!(eval(&nested).unwrap_err().contains("nested too deeply"));
        let ok = format!("{}1{}", "(".repeat(64), ")".repeat(64));
        assert_eq!(eval(&ok).unwrap(), 1.0);
        assert!(eval(&format!("{}1", "-".repeat(65)))
            .unwrap_err()
            .contains("nested"));
        assert_eq!(eval(&format!("{}1", "-".repeat(64))).unwrap(), 1.0);
        assert_eq!(clip(&"x".repeat(100)).chars().count(), MAX_ECHO_CHARS + 1);
    }

    #[test]
    fn units_scale_and_unknown_units_are_named() {
        assert_eq!(parse_with_units("60Mbps", RATE_UNITS).unwrap(), 60e6);
        assert_eq!(parse_with_units("1.5 MB", SIZE_UNITS).unwrap(), 1.5e6);
        assert!((parse_with_units("2/3 ms", TIME_UNITS).unwrap() - 666_666.666).abs() < 1.0);
        let e = parse_with_units("5 parsecs", TIME_UNITS).unwrap_err();
        assert!(
            e.contains("unknown unit 'parsecs'") && e.contains("ms"),
            "{e}"
        );
        assert!(parse_with_units("20", TIME_UNITS)
            .unwrap_err()
            .contains("unit is required"));
        // Non-ASCII text is an error, not a panic.
        assert!(parse_with_units("1é", TIME_UNITS).is_err());
        assert!(parse_with_units("é", TIME_UNITS).is_err());
        assert!(parse_with_units("5 µs", TIME_UNITS).is_err());
    }
}
