//! Safe wrappers over `src/bpf/pw_arith.h`, compiled into a userspace C library by build.rs.
//! The BPF programs include the same header, so these functions are the kernel's arithmetic.
//! Windows in packets, RTTs as the kernel's `srtt_us` (8 × µs).
#![allow(unsafe_code)] // FFI into the C library built from the shared header.

/// One subflow as the coupled rules read it (`struct pw_sample`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// Window in packets.
    pub cwnd: u64,
    /// Eight times the smoothed RTT in µs.
    pub srtt_us: u64,
    /// OLIA's ℓ in bytes.
    pub loss_interval: u64,
}

/// `struct pw_balia`: Balia's recalculated values for one path.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Balia {
    /// `⌊max_rate/rate_r⌋`.
    pub alpha: u64,
    /// Shifts of 5 bits applied to the rates.
    pub scale_downs: u64,
    /// ACK events per packet of growth (before the counter's +1).
    pub ai: u64,
    /// Packets a loss removes.
    pub md: u64,
}

/// The most paths the header's loops visit (`PW_MAX_PATHS`).
pub const MAX_PATHS: usize = 8;
/// BMC weight fixed point: `1 << 16` is a weight of 1.
pub const WEIGHT_ONE: u64 = 1 << 16;

mod ffi {
    use super::{Balia, Sample};
    extern "C" {
        pub(super) fn pwx_lia_alpha(p: *const Sample, n: u32, best: *mut u32) -> u64;
        pub(super) fn pwx_lia_threshold(alpha: u64, cwnd: u64) -> u64;
        pub(super) fn pwx_counter_step(cnt: *mut u64, t: u64) -> i32;
        pub(super) fn pwx_reno_ssthresh(cwnd: u64) -> u64;
        pub(super) fn pwx_state_clears_counter(s: u32) -> i32;
        pub(super) fn pwx_mul_cmp(a: u64, b: u64, c: u64, d: u64) -> i64;
        pub(super) fn pwx_olia_epsilon(
            p: *const Sample,
            n: u32,
            r: u32,
            cnt_established: u64,
            num: *mut i64,
            den: *mut u64,
        );
        pub(super) fn pwx_olia_counter_delta(
            p: *const Sample,
            n: u32,
            r: u32,
            num: i64,
            den: u64,
        ) -> i64;
        pub(super) fn pwx_olia_counter_step(cnt: *mut i64, d: i64, cwnd: u64) -> u64;
        pub(super) fn pwx_kv_counter_delta(p: *const Sample, n: u32, r: u32) -> i64;
        pub(super) fn pwx_kv_ssthresh(cwnd: u64) -> u64;
        pub(super) fn pwx_balia_recalc(
            p: *const Sample,
            n: u32,
            r: u32,
            mss: u64,
            out: *mut Balia,
        ) -> i32;
        pub(super) fn pwx_balia_ssthresh(cwnd: u64, md: u64) -> u64;
        pub(super) fn pwx_coupled_step(cnt: *mut u64, total: u64, acked: u64) -> u64;
        pub(super) fn pwx_coupled_ssthresh(own: u64, total: u64) -> u64;
        pub(super) fn pwx_bmc_effective_weight(weights: *const u64, n: u32, r: u32) -> u64;
        pub(super) fn pwx_aimd_step(acc: *mut u64, cwnd: u64, weight: u64, acked: u64) -> u64;
        pub(super) fn pwx_aimd_ssthresh(cwnd: u64) -> u64;
    }
}

fn count(paths: &[Sample]) -> u32 {
    paths.len().min(MAX_PATHS) as u32
}

/// LIA's fixed-point α and the index of the path taken as best; `None` for no paths.
pub fn lia_alpha(paths: &[Sample]) -> Option<(u64, usize)> {
    let mut best = 0u32;
    // SAFETY: the pointer and count describe `paths` (at most MAX_PATHS read); `best` is ours.
    let a = unsafe { ffi::pwx_lia_alpha(paths.as_ptr(), count(paths), &mut best) };
    (a != 0).then_some((a, best as usize))
}

/// LIA's threshold `max(⌊2^12/α⌋, w)`.
pub fn lia_threshold(alpha: u64, cwnd: u64) -> u64 {
    // SAFETY: plain values.
    unsafe { ffi::pwx_lia_threshold(alpha, cwnd) }
}

/// One event of the compare-then-increment counter; true when the window grew.
pub fn counter_step(cnt: &mut u64, t: u64) -> bool {
    // SAFETY: `cnt` is a valid exclusive reference.
    unsafe { ffi::pwx_counter_step(cnt, t) != 0 }
}

/// `tcp_reno_ssthresh` in packets.
pub fn reno_ssthresh(cwnd: u64) -> u64 {
    // SAFETY: plain values.
    unsafe { ffi::pwx_reno_ssthresh(cwnd) }
}

/// Whether entering the kernel's congestion state `s` (`TCP_CA_*`) clears the growth
/// counter of LIA, Balia, fully coupled control and BMC.
pub fn state_clears_counter(s: u32) -> bool {
    // SAFETY: plain values.
    unsafe { ffi::pwx_state_clears_counter(s) != 0 }
}

/// The order of the products `a·b` and `c·d`, compared exactly.
pub fn mul_cmp(a: u64, b: u64, c: u64, d: u64) -> std::cmp::Ordering {
    // SAFETY: plain values.
    unsafe { ffi::pwx_mul_cmp(a, b, c, d) }.cmp(&0)
}

/// OLIA's ε for path `r`: `(num, den)`.
pub fn olia_epsilon(paths: &[Sample], r: usize, cnt_established: u64) -> (i64, u64) {
    let (mut num, mut den) = (0i64, 1u64);
    // SAFETY: the pointer and count describe `paths`; the outputs are ours.
    unsafe {
        ffi::pwx_olia_epsilon(
            paths.as_ptr(),
            count(paths),
            r as u32,
            cnt_established,
            &mut num,
            &mut den,
        )
    };
    (num, den)
}

/// OLIA's counter change per ACK event on path `r` with ε = `num/den`.
pub fn olia_counter_delta(paths: &[Sample], r: usize, num: i64, den: u64) -> i64 {
    // SAFETY: the pointer and count describe `paths`.
    unsafe { ffi::pwx_olia_counter_delta(paths.as_ptr(), count(paths), r as u32, num, den) }
}

/// One OLIA counter event; returns the new window.
pub fn olia_counter_step(cnt: &mut i64, d: i64, cwnd: u64) -> u64 {
    // SAFETY: `cnt` is a valid exclusive reference.
    unsafe { ffi::pwx_olia_counter_step(cnt, d, cwnd) }
}

/// Kelly–Voice's counter change per ACK event on path `r`, in 2^−10 packet:
/// `⌊2^30·w_r/(1 + Σ_k ⌊w_k·2^10·srtt_r/srtt_k⌋)²⌋` (OLIA's increase with ε = 0).
pub fn kv_counter_delta(paths: &[Sample], r: usize) -> i64 {
    // SAFETY: the pointer and count describe `paths`.
    unsafe { ffi::pwx_kv_counter_delta(paths.as_ptr(), count(paths), r as u32) }
}

/// Kelly–Voice's threshold after a loss, `tcp_reno_ssthresh`: `max(⌊w/2⌋, 2)` packets.
pub fn kv_ssthresh(cwnd: u64) -> u64 {
    // SAFETY: plain values.
    unsafe { ffi::pwx_kv_ssthresh(cwnd) }
}

/// Balia's `mptcp_balia_recalc_ai` for path `r` with MSS `mss`; `None` for a missing path.
pub fn balia_recalc(paths: &[Sample], r: usize, mss: u64) -> Option<Balia> {
    let mut out = Balia::default();
    // SAFETY: the pointer and count describe `paths`; `out` is ours.
    let ok =
        unsafe { ffi::pwx_balia_recalc(paths.as_ptr(), count(paths), r as u32, mss, &mut out) };
    (ok != 0).then_some(out)
}

/// Balia's `max(w − md, 1)`.
pub fn balia_ssthresh(cwnd: u64, md: u64) -> u64 {
    // SAFETY: plain values.
    unsafe { ffi::pwx_balia_ssthresh(cwnd, md) }
}

/// The fully coupled increase for `acked` packets with total window `total`; returns growth.
pub fn coupled_step(cnt: &mut u64, total: u64, acked: u64) -> u64 {
    // SAFETY: `cnt` is a valid exclusive reference.
    unsafe { ffi::pwx_coupled_step(cnt, total, acked) }
}

/// The fully coupled threshold `max(w − ⌈W/2⌉, 1)`.
pub fn coupled_ssthresh(own: u64, total: u64) -> u64 {
    // SAFETY: plain values.
    unsafe { ffi::pwx_coupled_ssthresh(own, total) }
}

/// BMC's weight in use for path `r`, `D_r/Σ D` in 2^16 units (0 entries count as equal).
pub fn bmc_effective_weight(weights: &[u64], r: usize) -> u64 {
    let n = weights.len().min(MAX_PATHS) as u32;
    // SAFETY: the pointer and count describe `weights`.
    unsafe { ffi::pwx_bmc_effective_weight(weights.as_ptr(), n, r as u32) }
}

/// One ACK of AIMD(D², ½) for `acked` packets at window `cwnd`; returns growth.
pub fn aimd_step(acc: &mut u64, cwnd: u64, weight: u64, acked: u64) -> u64 {
    // SAFETY: `acc` is a valid exclusive reference.
    unsafe { ffi::pwx_aimd_step(acc, cwnd, weight, acked) }
}

/// AIMD's threshold with b = ½.
pub fn aimd_ssthresh(cwnd: u64) -> u64 {
    // SAFETY: plain values.
    unsafe { ffi::pwx_aimd_ssthresh(cwnd) }
}
