//! Round-trip-time estimation and the retransmission timeout, per RFC 6298.
//!
//! Invariant: `rto()` is always within `[min_rto, max_rto]`, and the backoff multiplier only
//! grows through [`RttEstimator::back_off`] and is reset by the next valid sample (Karn's rule
//! is the caller's job: it must not feed samples taken from retransmitted segments).

use crate::units::Duration;

/// Configuration of the RTO computation.
#[derive(Clone, Copy, Debug)]
pub struct RtoConfig {
    /// Lower bound on the RTO. RFC 6298 (2.4) says 1 s; Linux and most simulators use 200 ms.
    pub min_rto: Duration,
    /// Upper bound on the RTO, including backoff. RFC 6298 (2.5) allows 60 s or more.
    pub max_rto: Duration,
    /// Clock granularity G of RFC 6298 (2.2–2.3).
    pub granularity: Duration,
    /// RTO before the first sample. RFC 6298 (2.1): 1 s.
    pub initial_rto: Duration,
    /// How the RTO follows from the estimates.
    pub rule: RtoRule,
}

/// How the RTO follows from the smoothed RTT and its variance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RtoRule {
    /// RFC 6298 (2.3)-(2.4): `max(min_rto, SRTT + max(G, 4·RTTVAR))`.
    #[default]
    Rfc6298,
    /// Linux (`tcp_rtt_estimator`, `__tcp_set_rto`): `SRTT + max(min_rto, 4·RTTVAR)`. Linux
    /// floors the variance term, not the sum, at `tcp_rto_min` (its `rttvar_us` never falls
    /// below it), so the timer runs at least `min_rto` beyond the smoothed RTT: 400 ms on a
    /// 200 ms path where RFC 6298 gives about 200 ms. Linux also keeps that term at the
    /// largest 4·mdev of the last round trip and lets it fall by a quarter per round trip;
    /// the current 4·RTTVAR stands in for it here, the same whenever it is below `min_rto`.
    Linux,
}

impl Default for RtoConfig {
    fn default() -> Self {
        RtoConfig {
            min_rto: Duration::from_millis(200),
            max_rto: Duration::from_secs(60),
            granularity: Duration::from_millis(1),
            initial_rto: Duration::from_secs(1),
            rule: RtoRule::Rfc6298,
        }
    }
}

/// Smoothed RTT, RTT variance, minimum RTT and the (backed-off) RTO of one path.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    cfg: RtoConfig,
    srtt: Option<Duration>,
    rttvar: Duration,
    min_rtt: Option<Duration>,
    latest: Option<Duration>,
    backoff: u32,
}

impl RttEstimator {
    /// A fresh estimator with no samples.
    pub fn new(cfg: RtoConfig) -> Self {
        RttEstimator {
            cfg,
            srtt: None,
            rttvar: Duration::ZERO,
            min_rtt: None,
            latest: None,
            backoff: 0,
        }
    }

    /// Feed one RTT measurement (RFC 6298 §2.2–2.3) and clear any backoff (§5.7 and Karn).
    pub fn on_sample(&mut self, r: Duration) {
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        match self.srtt {
            None => {
                // (2.2) SRTT <- R, RTTVAR <- R/2
                self.srtt = Some(r);
                self.rttvar = Duration(r.0 / 2);
            }
            Some(s) => {
                // (2.3) RTTVAR <- 3/4 RTTVAR + 1/4 |SRTT - R'|; SRTT <- 7/8 SRTT + 1/8 R'
                let diff = s.0.abs_diff(r.0);
                self.rttvar = Duration((3 * self.rttvar.0 + diff) / 4);
                self.srtt = Some(Duration((7 * s.0 + r.0) / 8));
            }
        }
        self.backoff = 0;
    }

    /// Double the RTO after a timeout (RFC 6298 §5.5).
    pub fn back_off(&mut self) {
        self.backoff = self.backoff.saturating_add(1).min(30);
    }

    /// How many times the timer has been backed off since the last valid sample.
    pub fn backoff_count(&self) -> u32 {
        self.backoff
    }

    /// Forget the minimum RTT (Westwood+ does this after a timeout).
    pub fn reset_min_rtt(&mut self) {
        self.min_rtt = self.latest;
    }

    /// The current retransmission timeout, including backoff.
    pub fn rto(&self) -> Duration {
        let base = match (self.srtt, self.cfg.rule) {
            (None, _) => self.cfg.initial_rto,
            // (2.3) RTO <- SRTT + max(G, K*RTTVAR), K = 4
            (Some(s), RtoRule::Rfc6298) => {
                s + Duration(self.cfg.granularity.0.max(4 * self.rttvar.0))
            }
            (Some(s), RtoRule::Linux) => s + Duration(self.cfg.min_rto.0.max(4 * self.rttvar.0)),
        };
        let base = base.max(self.cfg.min_rto); // (2.4)
        base.saturating_mul(1u64 << self.backoff)
            .min(self.cfg.max_rto) // (5.5), (2.5)
    }

    /// How the RTO follows from the estimates.
    pub fn rule(&self) -> RtoRule {
        self.cfg.rule
    }

    /// The smoothed RTT, `None` before the first sample.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
    /// The RTT variance estimate.
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }
    /// The smallest sample seen.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }
    /// The most recent sample.
    pub fn latest(&self) -> Option<Duration> {
        self.latest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    /// Linux floors the variance term at `min_rto`, RFC 6298 the sum: on a steady 200 ms
    /// path the first gives SRTT + 200 ms, the second about SRTT; with a variance term above
    /// `min_rto` the two agree.
    #[test]
    fn the_linux_rule_floors_the_variance_term_not_the_sum() {
        let linux = RtoConfig {
            rule: RtoRule::Linux,
            ..RtoConfig::default()
        };
        let (mut a, mut b) = (
            RttEstimator::new(RtoConfig::default()),
            RttEstimator::new(linux),
        );
        for _ in 0..60 {
            a.on_sample(ms(200));
            b.on_sample(ms(200));
        }
        assert_eq!(b.srtt(), Some(ms(200)));
        assert!(4 * b.rttvar().0 < ms(1).0, "{:?}", b.rttvar());
        assert_eq!(b.rto(), ms(400));
        assert!(a.rto() < ms(202), "{:?}", a.rto());
        // A variance term of 4 x 100 ms: both SRTT + 4 RTTVAR.
        let (mut a, mut b) = (
            RttEstimator::new(RtoConfig::default()),
            RttEstimator::new(linux),
        );
        a.on_sample(ms(200));
        b.on_sample(ms(200));
        assert_eq!(a.rto(), ms(600));
        assert_eq!(b.rto(), ms(600));
        // Backoff doubles either.
        b.back_off();
        assert_eq!(b.rto(), ms(1200));
    }

    #[test]
    fn first_sample_sets_srtt_and_half_variance() {
        let mut e = RttEstimator::new(RtoConfig::default());
        assert_eq!(e.rto(), Duration::from_secs(1));
        e.on_sample(ms(100));
        assert_eq!(e.srtt(), Some(ms(100)));
        assert_eq!(e.rttvar(), ms(50));
        // 100 + 4*50 = 300 ms
        assert_eq!(e.rto(), ms(300));
    }

    #[test]
    fn second_sample_uses_the_ewma_gains() {
        let mut e = RttEstimator::new(RtoConfig::default());
        e.on_sample(ms(100));
        e.on_sample(ms(200));
        // rttvar = 3/4*50 + 1/4*100 = 62.5; srtt = 7/8*100 + 1/8*200 = 112.5
        assert_eq!(e.rttvar(), Duration(62_500_000));
        assert_eq!(e.srtt(), Some(Duration(112_500_000)));
    }

    #[test]
    fn min_rto_floors_and_backoff_doubles_until_the_cap() {
        let mut e = RttEstimator::new(RtoConfig::default());
        for _ in 0..20 {
            e.on_sample(ms(10));
        }
        assert_eq!(e.rto(), ms(200));
        e.back_off();
        assert_eq!(e.rto(), ms(400));
        for _ in 0..20 {
            e.back_off();
        }
        assert_eq!(e.rto(), Duration::from_secs(60));
        e.on_sample(ms(10));
        assert_eq!(e.backoff_count(), 0);
        assert_eq!(e.rto(), ms(200));
    }
}
