//! The controllers' names. Each load uses a prefix (default `pw`), so several independent
//! copies can be registered at once — one per test or per emulation run — as
//! `PREFIX_lia`, `PREFIX_olia`, `PREFIX_balia`, `PREFIX_coupled`, `PREFIX_bmc` and
//! `PREFIX_kv`, pinned under `/sys/fs/bpf/pathweave/PREFIX/`.

use crate::error::KernelError;
use std::fmt;

/// One of the six controllers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// LIA (RFC 6356), kernel arithmetic.
    Lia,
    /// OLIA, kernel arithmetic.
    Olia,
    /// Balia, kernel arithmetic.
    Balia,
    /// Fully coupled: increase 1/W, decrease W/2.
    Coupled,
    /// BMC's weighted AIMD.
    Bmc,
    /// Kelly–Voice, kernel arithmetic (OLIA's with ε = 0).
    Kv,
}

impl Algorithm {
    /// All six, in the order they are registered.
    pub const ALL: [Algorithm; 6] = [
        Algorithm::Lia,
        Algorithm::Olia,
        Algorithm::Balia,
        Algorithm::Coupled,
        Algorithm::Bmc,
        Algorithm::Kv,
    ];

    /// The suffix of the registered name.
    pub const fn suffix(self) -> &'static str {
        match self {
            Algorithm::Lia => "lia",
            Algorithm::Olia => "olia",
            Algorithm::Balia => "balia",
            Algorithm::Coupled => "coupled",
            Algorithm::Bmc => "bmc",
            Algorithm::Kv => "kv",
        }
    }

    /// The id stored in connection entries (`PW_ALGO_*`).
    pub const fn id(self) -> u32 {
        match self {
            Algorithm::Lia => 1,
            Algorithm::Olia => 2,
            Algorithm::Balia => 3,
            Algorithm::Coupled => 4,
            Algorithm::Bmc => 5,
            Algorithm::Kv => 6,
        }
    }

    /// The algorithm with id `id`.
    pub fn from_id(id: u32) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.id() == id)
    }

    /// The algorithm a scenario names (`lia`, `olia`, `balia`, `fully-coupled`, `bmc`,
    /// `kelly-voice`).
    pub fn from_scenario_name(name: &str) -> Option<Algorithm> {
        match name {
            "lia" => Some(Algorithm::Lia),
            "olia" => Some(Algorithm::Olia),
            "balia" => Some(Algorithm::Balia),
            "fully-coupled" | "coupled" => Some(Algorithm::Coupled),
            "bmc" => Some(Algorithm::Bmc),
            "kelly-voice" => Some(Algorithm::Kv),
            _ => None,
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.suffix())
    }
}

/// The most characters a prefix may have: `PREFIX_coupled` must fit the kernel's 15.
pub const MAX_PREFIX_LEN: usize = 7;
/// The prefix used when none is given.
pub const DEFAULT_PREFIX: &str = "pw";
/// Where every load pins its links and maps.
pub const PIN_ROOT: &str = "/sys/fs/bpf/pathweave";

/// A validated prefix: 1 to 7 characters from `a-z`, `0-9`, starting with a letter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prefix(String);

impl Prefix {
    /// Checks `s`.
    pub fn new(s: &str) -> Result<Prefix, KernelError> {
        let ok = !s.is_empty()
            && s.len() <= MAX_PREFIX_LEN
            && s.starts_with(|c: char| c.is_ascii_lowercase())
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        if ok {
            Ok(Prefix(s.to_string()))
        } else {
            Err(KernelError::BadArgument(format!(
                "prefix {s:?} is not valid: use 1 to {MAX_PREFIX_LEN} characters from a-z and \
                 0-9, starting with a letter"
            )))
        }
    }

    /// The prefix as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name `algorithm` registers under, e.g. `pw_lia`.
    pub fn name(&self, algorithm: Algorithm) -> String {
        format!("{}_{}", self.0, algorithm.suffix())
    }

    /// The pin directory of this prefix.
    pub fn pin_dir(&self) -> std::path::PathBuf {
        std::path::Path::new(PIN_ROOT).join(&self.0)
    }
}

impl Default for Prefix {
    fn default() -> Self {
        Prefix(DEFAULT_PREFIX.to_string())
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_fits_the_kernel_limit() {
        let p = Prefix::new("abcdefg").unwrap();
        for a in Algorithm::ALL {
            assert!(p.name(a).len() <= 15, "{}", p.name(a));
            assert_eq!(Algorithm::from_id(a.id()), Some(a));
        }
        assert_eq!(Prefix::default().name(Algorithm::Lia), "pw_lia");
    }

    #[test]
    fn bad_prefixes_are_refused_with_what_is_allowed() {
        for bad in ["", "abcdefgh", "Pw", "1pw", "pw-x", "p w"] {
            let e = Prefix::new(bad).unwrap_err().to_string();
            assert!(e.contains("a-z"), "{e}");
        }
    }

    #[test]
    fn scenario_names_map_to_controllers() {
        assert_eq!(
            Algorithm::from_scenario_name("fully-coupled"),
            Some(Algorithm::Coupled)
        );
        assert_eq!(
            Algorithm::from_scenario_name("kelly-voice"),
            Some(Algorithm::Kv)
        );
        assert_eq!(Algorithm::from_scenario_name("reno"), None);
    }
}
