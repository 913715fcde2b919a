//! Units as newtypes: [`Instant`] and [`Duration`] count nanoseconds, [`Bytes`] counts octets,
//! [`Bandwidth`] counts bits per second. Arithmetic between them is explicit, so a rate can
//! never be added to a size by accident.

use core::fmt;
use core::ops::{Add, AddAssign, Sub, SubAssign};

/// A point in simulated (or transport) time, in nanoseconds since an arbitrary epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(pub u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub u64);

/// A number of bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

/// A rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bandwidth {
    bits_per_sec: u64,
}

const NANOS_PER_SEC: u64 = 1_000_000_000;

impl Instant {
    /// The epoch.
    pub const ZERO: Instant = Instant(0);
    /// A time later than any a simulation reaches.
    pub const MAX: Instant = Instant(u64::MAX);

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds since the epoch.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NANOS_PER_SEC as f64
    }
    /// Time elapsed since `earlier`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Duration {
    /// Zero length.
    pub const ZERO: Duration = Duration(0);

    /// From whole nanoseconds.
    pub const fn from_nanos(n: u64) -> Self {
        Duration(n)
    }
    /// From whole microseconds.
    pub const fn from_micros(us: u64) -> Self {
        Duration(us * 1_000)
    }
    /// From whole milliseconds.
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    /// From whole seconds.
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * NANOS_PER_SEC)
    }
    /// From seconds, rounded to the nearest nanosecond.
    pub fn from_secs_f64(s: f64) -> Self {
        Duration((s * NANOS_PER_SEC as f64).round() as u64)
    }
    /// Nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds as a float.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NANOS_PER_SEC as f64
    }
    /// `self * k`, saturating.
    pub const fn saturating_mul(self, k: u64) -> Self {
        Duration(self.0.saturating_mul(k))
    }
}

impl Bytes {
    /// Zero bytes.
    pub const ZERO: Bytes = Bytes(0);
    /// The count as u64.
    pub const fn get(self) -> u64 {
        self.0
    }
    /// Subtraction that stops at zero.
    pub const fn saturating_sub(self, other: Bytes) -> Bytes {
        Bytes(self.0.saturating_sub(other.0))
    }
}

impl Bandwidth {
    /// From bits per second.
    pub const fn from_bps(bits_per_sec: u64) -> Self {
        Bandwidth { bits_per_sec }
    }
    /// Bits per second.
    pub const fn bps(self) -> u64 {
        self.bits_per_sec
    }
    /// Time to serialise `size` at this rate, rounded up to the next nanosecond so a link
    /// never runs faster than its rate. `None` for a zero rate.
    pub fn transmission_time(self, size: Bytes) -> Option<Duration> {
        if self.bits_per_sec == 0 {
            return None;
        }
        let bits = size.0 as u128 * 8 * NANOS_PER_SEC as u128;
        let bps = self.bits_per_sec as u128;
        Some(Duration(bits.div_ceil(bps) as u64))
    }
    /// The bandwidth-delay product: how many bytes fit in `rtt` at this rate.
    pub fn bdp(self, rtt: Duration) -> Bytes {
        Bytes((self.bits_per_sec as u128 * rtt.0 as u128 / (8 * NANOS_PER_SEC as u128)) as u64)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}
impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, o: Instant) -> Duration {
        self.saturating_since(o)
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}
impl Sub for Duration {
    type Output = Duration;
    fn sub(self, d: Duration) -> Duration {
        Duration(self.0.saturating_sub(d.0))
    }
}
impl Add for Bytes {
    type Output = Bytes;
    fn add(self, b: Bytes) -> Bytes {
        Bytes(self.0 + b.0)
    }
}
impl AddAssign for Bytes {
    fn add_assign(&mut self, b: Bytes) {
        self.0 += b.0;
    }
}
impl Sub for Bytes {
    type Output = Bytes;
    fn sub(self, b: Bytes) -> Bytes {
        Bytes(self.0 - b.0)
    }
}
impl SubAssign for Bytes {
    fn sub_assign(&mut self, b: Bytes) {
        self.0 -= b.0;
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.as_secs_f64())
    }
}
impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.as_secs_f64())
    }
}
impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}B", self.0)
    }
}
impl fmt::Display for Bandwidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}bps", self.bits_per_sec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transmission_time_rounds_up() {
        // 1040 bytes at 60 Mbps = 8320 bits / 6e7 = 138.666… µs.
        let t = Bandwidth::from_bps(60_000_000)
            .transmission_time(Bytes(1040))
            .unwrap();
        assert_eq!(t, Duration(138_667));
        assert!(Bandwidth::from_bps(0).transmission_time(Bytes(1)).is_none());
    }

    #[test]
    fn bdp_of_60mbps_over_40ms_is_300kb() {
        let b = Bandwidth::from_bps(60_000_000).bdp(Duration::from_millis(40));
        assert_eq!(b, Bytes(300_000));
    }
}
