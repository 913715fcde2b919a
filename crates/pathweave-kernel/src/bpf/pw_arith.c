/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * pw_arith.c — exports pw_arith.h to userspace so the Rust tests can call, through FFI, the
 * very arithmetic the BPF programs run. Each function is a thin wrapper; no logic lives here.
 */
#include "pw_arith.h"

pw_u64 pwx_lia_alpha(const struct pw_samples *p, pw_u32 n, pw_u32 *best)
{
	return pw_lia_alpha(p, n, best);
}

pw_u64 pwx_lia_threshold(pw_u64 alpha, pw_u64 cwnd) { return pw_lia_threshold(alpha, cwnd); }

int pwx_counter_step(pw_u64 *cnt, pw_u64 t) { return pw_counter_step(cnt, t); }

pw_u64 pwx_reno_ssthresh(pw_u64 cwnd) { return pw_reno_ssthresh(cwnd); }

int pwx_state_clears_counter(pw_u32 s) { return pw_state_clears_counter(s); }

pw_s64 pwx_mul_cmp(pw_u64 a, pw_u64 b, pw_u64 c, pw_u64 d) { return pw_mul_cmp(a, b, c, d); }

void pwx_olia_epsilon(const struct pw_samples *p, pw_u32 n, pw_u32 r, pw_u64 cnt_established,
		      pw_s64 *num, pw_u64 *den)
{
	*num = pw_olia_epsilon(p, n, r, cnt_established, den);
}

pw_s64 pwx_olia_counter_delta(const struct pw_samples *p, pw_u32 n, pw_u32 r, pw_s64 num,
			      pw_u64 den)
{
	return pw_olia_counter_delta(p, n, r, num, den);
}

pw_u64 pwx_olia_counter_step(pw_s64 *cnt, pw_s64 d, pw_u64 cwnd)
{
	return pw_olia_counter_step(cnt, d, cwnd);
}

pw_s64 pwx_kv_counter_delta(const struct pw_samples *p, pw_u32 n, pw_u32 r)
{
	return pw_kv_counter_delta(p, n, r);
}

pw_u64 pwx_kv_ssthresh(pw_u64 cwnd) { return pw_kv_ssthresh(cwnd); }

int pwx_balia_recalc(const struct pw_samples *p, pw_u32 n, pw_u32 r, pw_u64 mss,
		     struct pw_balia *out)
{
	return pw_balia_recalc(p, n, r, mss, out);
}

pw_u64 pwx_balia_ssthresh(pw_u64 cwnd, pw_u64 md) { return pw_balia_ssthresh(cwnd, md); }

pw_u64 pwx_coupled_step(pw_u64 *cnt, pw_u64 total, pw_u64 acked)
{
	return pw_coupled_step(cnt, total, acked);
}

pw_u64 pwx_coupled_ssthresh(pw_u64 own, pw_u64 total) { return pw_coupled_ssthresh(own, total); }

pw_u64 pwx_bmc_effective_weight(const struct pw_weight_list *weights, pw_u32 n, pw_u32 r)
{
	return pw_bmc_effective_weight(weights, n, r);
}

pw_u64 pwx_aimd_step(pw_u64 *acc, pw_u64 cwnd, pw_u64 weight, pw_u64 acked)
{
	return pw_aimd_step(acc, cwnd, weight, acked);
}

pw_u64 pwx_aimd_ssthresh(pw_u64 cwnd) { return pw_aimd_ssthresh(cwnd); }
