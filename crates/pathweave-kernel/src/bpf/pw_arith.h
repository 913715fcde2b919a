/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * pw_arith.h — the integer arithmetic of pathweave's kernel controllers.
 *
 * This one header is compiled into the BPF programs (pw.bpf.c) and into a small userspace
 * library (pw_arith.c) that the Rust tests call, so the code that runs in the kernel is the
 * code checked against shared/reference/vectors.json and against pathweave-cc's `linux`
 * arithmetic. Pure functions of their arguments: no kernel structures, no helpers, no
 * floating point, no signed division (BPF before cpu v4 has none), and every loop bounded by
 * PW_MAX_PATHS so the verifier accepts it.
 *
 * Windows are in packets, RTTs are the kernel's srtt_us (eight times the smoothed RTT in µs),
 * as in the out-of-tree MPTCP kernel the `linux` modes follow (ALGORITHMS.md §1.2, §2.2,
 * §3.2; Kelly–Voice, §1.5, runs on OLIA's arithmetic with ε = 0). Products are computed in
 * 64 bits as that kernel did; where one would overflow it saturates at 2^64 − 1 instead of
 * wrapping (pathweave-cc computes in 128 bits, so the two agree wherever no intermediate
 * value reaches 2^64). OLIA's best-path comparisons, whose ℓ·srtt² products pass 2^64 on
 * long paths with long loss intervals, are exact (pw_mul_cmp), as pathweave-cc's.
 */
#ifndef PW_ARITH_H
#define PW_ARITH_H

#if defined(__bpf__)
typedef __u64 pw_u64;
typedef __u32 pw_u32;
typedef __s64 pw_s64;
typedef __s32 pw_s32;
#else
#include <stdint.h>
typedef uint64_t pw_u64;
typedef uint32_t pw_u32;
typedef int64_t pw_s64;
typedef int32_t pw_s32;
#endif

#define PW_INLINE static inline __attribute__((always_inline))
/*
 * The functions with loops over the paths. In BPF they are global functions, which the
 * verifier checks once on their own instead of at every call site (inlined, their branches
 * multiplied past the verifier's limit); global functions take pointers to fixed-size
 * structures, hence struct pw_samples rather than a bare array.
 */
#if defined(__bpf__)
#define PW_API __attribute__((noinline))
#else
#define PW_API static inline
#endif

/* The most subflows of one connection that take part in the coupled sums. */
#define PW_MAX_PATHS 8
#define PW_U64_MAX (~(pw_u64)0)

/* One subflow as the coupled rules read it. */
struct pw_sample {
	pw_u64 cwnd;          /* snd_cwnd, packets (ssthresh while in recovery where a rule says) */
	pw_u64 srtt_us;       /* srtt_us: 8 × smoothed RTT in µs */
	pw_u64 loss_interval; /* OLIA's ℓ: bytes acknowledged between losses */
};

/* Every subflow of a connection, n of them valid. */
struct pw_samples {
	struct pw_sample s[PW_MAX_PATHS];
};

/* BMC weights per subflow, 2^16 = 1 (0 = the equal share). */
struct pw_weight_list {
	pw_u64 w[PW_MAX_PATHS];
};

PW_INLINE pw_u64 pw_min(pw_u64 a, pw_u64 b) { return a < b ? a : b; }
PW_INLINE pw_u64 pw_max(pw_u64 a, pw_u64 b) { return a > b ? a : b; }

/*
 * Hides a value from the optimiser: without it clang turns the overflow test below into a
 * 128-bit multiplication, which the BPF backend cannot emit.
 */
#define PW_OPAQUE(x) __asm__ volatile("" : "+r"(x))

/* Keeps an index the caller checked below PW_MAX_PATHS provably so for the verifier (the
 * optimiser would drop a plain mask as redundant). */
#define PW_BOUND(x)                                                                            \
	do {                                                                                   \
		PW_OPAQUE(x);                                                                  \
		(x) &= PW_MAX_PATHS - 1;                                                       \
	} while (0)

/* a·b, saturating. (Global in BPF: its branch is then checked once, not at every use.) */
PW_API pw_u64 pw_mul(pw_u64 a, pw_u64 b)
{
	pw_u64 limit;

	if (a == 0)
		return 0;
	limit = PW_U64_MAX / a;
	PW_OPAQUE(limit);
	if (b > limit)
		return PW_U64_MAX;
	return a * b;
}

/*
 * Compares a·b with c·d exactly, for a and c below 2^32 (the kernel's u32 sequence
 * differences): −1, 0 or 1. Each product, below 2^96, is split as hi·2^32 + lo with
 * lo < 2^32; hi = a·b_hi + (a·b_lo >> 32) stays below 2^64. OLIA's best-path test compares
 * ℓ·srtt² products that leave 64 bits for ℓ above about 29 MB at 100 ms (ALGORITHMS.md §2.3
 * item 6), where saturated products would compare equal and put a path wrongly in B. (Global
 * in BPF and light on registers, so that it needs no stack: its callers sit deep in OLIA's
 * call chain, near the 512-byte limit.)
 */
PW_API pw_s64 pw_mul_cmp(pw_u64 a, pw_u64 b, pw_u64 c, pw_u64 d)
{
	const pw_u64 low = 0xffffffffULL;
	pw_u64 lo1 = a * (b & low), hi1 = a * (b >> 32) + (lo1 >> 32);
	pw_u64 lo2 = c * (d & low), hi2 = c * (d >> 32) + (lo2 >> 32);

	if (hi1 != hi2)
		return hi1 < hi2 ? -1 : 1;
	lo1 &= low;
	lo2 &= low;
	if (lo1 != lo2)
		return lo1 < lo2 ? -1 : 1;
	return 0;
}

/* a + b, saturating. */
PW_API pw_u64 pw_add(pw_u64 a, pw_u64 b)
{
	pw_u64 s = a + b;
	return s < a ? PW_U64_MAX : s;
}

/* a / b, 0 for b = 0 (BPF's own rule, made explicit for C). */
PW_INLINE pw_u64 pw_div(pw_u64 a, pw_u64 b) { return b ? a / b : 0; }

/* a · 2^s, saturating. */
PW_API pw_u64 pw_shl(pw_u64 a, pw_u32 s)
{
	if (s >= 64)
		return a ? PW_U64_MAX : 0;
	if (a > (PW_U64_MAX >> s))
		return PW_U64_MAX;
	return a << s;
}

/* tcp_reno_ssthresh: max(⌊w/2⌋, 2) packets (ALGORITHMS.md §0.1). */
PW_INLINE pw_u64 pw_reno_ssthresh(pw_u64 cwnd) { return pw_max(cwnd >> 1, 2); }

/* The kernel's TCP_CA_* congestion states (include/net/tcp.h), as set_state reports them. */
#define PW_CA_OPEN 0
#define PW_CA_DISORDER 1
#define PW_CA_CWR 2
#define PW_CA_RECOVERY 3
#define PW_CA_LOSS 4

/*
 * Whether entering congestion state s clears the growth counter that stands in for the
 * kernel's snd_cwnd_cnt: tcp_init_cwnd_reduction clears it on entering CWR or recovery and
 * tcp_enter_loss on every timeout, so growth after a loss starts from zero (ALGORITHMS.md
 * §0.1). OLIA's counter is private to mptcp_olia, which clears it only in init.
 */
PW_INLINE int pw_state_clears_counter(pw_u32 s)
{
	return s == PW_CA_CWR || s == PW_CA_RECOVERY || s == PW_CA_LOSS;
}

/*
 * The compare-then-increment counter of the MPTCP kernel's LIA and Balia (ALGORITHMS.md
 * §0.1): if cnt ≥ T the window grows by one packet and cnt restarts at 0, otherwise cnt
 * counts the event. One packet of growth therefore takes T + 1 ACK events. Returns 1 when
 * the window grew.
 */
PW_INLINE int pw_counter_step(pw_u64 *cnt, pw_u64 t)
{
	if (*cnt >= t) {
		*cnt = 0;
		return 1;
	}
	*cnt += 1;
	return 0;
}

/*
 * Σ_i ⌊w_i·2^10·srtt_ref/srtt_i⌋: the rate sum, scaled to the reference path's RTT, that LIA's
 * denominator (srtt_ref = the best path's) and OLIA's rate (srtt_ref = the acking path's) square.
 */
PW_API pw_u64 pw_scaled_rate_sum(const struct pw_samples *ps, pw_u32 n, pw_u64 srtt_ref)
{
	pw_u64 sum = 0;
	pw_u32 i;

	if (!ps)
		return 0;
	for (i = 0; i < PW_MAX_PATHS && i < n; i++) {
		pw_u64 scaled = pw_mul(pw_shl(ps->s[i].cwnd, 10), srtt_ref);

		sum = pw_add(sum, pw_div(scaled, pw_max(ps->s[i].srtt_us, 1)));
	}
	return sum;
}

/* ---- LIA (mptcp_coupled.c, ALGORITHMS.md §1.2) ------------------------------------------ */

#define PW_LIA_SCALE_NUM 32
#define PW_LIA_SCALE_DEN 10
#define PW_LIA_SCALE 12

/*
 * mptcp_recalc_alpha: t_i = ⌊w_i·2^32/srtt_i²⌋, best = the last path with the largest t_i
 * (the comparison is ≥, §1.3 item 1); α = ⌊w_b·2^32 / (Σ_i ⌊w_i·2^10·srtt_b/srtt_i⌋)²⌋, and
 * 1 if that is 0. Writes the best path's index to *best. Returns 0 for no paths.
 */
PW_API pw_u64 pw_lia_alpha(const struct pw_samples *ps, pw_u32 n, pw_u32 *best)
{
	pw_u64 max_num = 0, best_rtt, den = 0, a;
	pw_u32 b = PW_MAX_PATHS, i;
	const struct pw_sample *p;

	if (!ps || !best)
		return 0;
	p = ps->s;

	for (i = 0; i < PW_MAX_PATHS && i < n; i++) {
		pw_u64 srtt = pw_max(p[i].srtt_us, 1);
		pw_u64 t = pw_div(pw_shl(p[i].cwnd, PW_LIA_SCALE_NUM), pw_mul(srtt, srtt));

		if (t >= max_num) {
			max_num = t;
			b = i;
		}
	}
	if (b >= PW_MAX_PATHS)
		return 0;
	PW_BOUND(b);
	best_rtt = pw_max(p[b].srtt_us, 1);
	den = pw_scaled_rate_sum(ps, n, best_rtt); /* PW_LIA_SCALE_DEN = 10 */
	den = pw_mul(den, den);
	a = pw_div(pw_shl(p[b].cwnd, PW_LIA_SCALE_NUM), den);
	*best = b;
	return a ? a : 1; /* kernel: if (!alpha) alpha = 1 */
}

/* mptcp_ccc_cong_avoid: T = max(⌊2^12/α⌋, w), the ACK events counted per packet of growth. */
PW_INLINE pw_u64 pw_lia_threshold(pw_u64 alpha, pw_u64 cwnd)
{
	return pw_max(((pw_u64)1 << PW_LIA_SCALE) / pw_max(alpha, 1), cwnd);
}

/* ---- OLIA (mptcp_olia.c, ALGORITHMS.md §2.2) -------------------------------------------- */

#define PW_OLIA_SCALE 10
#define PW_OLIA_LIMIT ((1 << PW_OLIA_SCALE) - 1)

/*
 * Whether path i of ps is in M (bit 0: its window is the largest) and whether its ℓ/srtt²
 * equals the best's exactly (bit 1). A function of its own so that the caller counts the
 * sets with arithmetic instead of branches (which would multiply the verifier's states).
 */
PW_API pw_u64 pw_olia_class(const struct pw_samples *ps, pw_u32 i, pw_u64 max_cwnd,
			    pw_u64 best_int, pw_u64 best_rtt)
{
	const struct pw_sample *p;
	pw_u64 c = 0, sq;

	if (!ps || i >= PW_MAX_PATHS)
		return 0;
	p = &ps->s[i];
	/* The calls first, with four values kept across them (no stack: see pw_mul_cmp). */
	sq = pw_mul(p->srtt_us, p->srtt_us);
	if (pw_mul_cmp(p->loss_interval, best_rtt, best_int, sq) == 0)
		c |= 2;
	if (p->cwnd == max_cwnd)
		c |= 1;
	return c;
}

/*
 * mptcp_get_epsilon for path r: the best path is the last with the largest ℓ/srtt²
 * (cross-multiplied), B\M counts the paths whose window is not the largest and whose
 * ℓ·srtt_best² equals the best's exactly, and the denominators use cnt_established.
 */
PW_API pw_s64 pw_olia_epsilon(const struct pw_samples *ps, pw_u32 n, pw_u32 r,
			      pw_u64 cnt_established, pw_u64 *den)
{
	pw_u64 max_cwnd = 0, best_int = 0, best_rtt = 1, m = 0, b_not_m = 0, me = 0, c;
	pw_u32 i;
	const struct pw_sample *p;

	if (!ps || !den)
		return 0;
	*den = 1;
	p = ps->s;
	if (r >= n || r >= PW_MAX_PATHS)
		return 0;
	for (i = 0; i < PW_MAX_PATHS && i < n; i++) {
		pw_u64 sq = pw_mul(p[i].srtt_us, p[i].srtt_us);

		max_cwnd = pw_max(max_cwnd, p[i].cwnd);
		if (pw_mul_cmp(p[i].loss_interval, best_rtt, best_int, sq) >= 0) {
			best_rtt = sq;
			best_int = p[i].loss_interval;
		}
	}
	for (i = 0; i < PW_MAX_PATHS && i < n; i++) {
		c = pw_olia_class(ps, i, max_cwnd, best_int, best_rtt) & 3;
		m += c & 1;
		b_not_m += (c >> 1) & ~c & 1; /* best, window not the largest */
		if (i == r)
			me = c;
	}
	if (b_not_m == 0)
		return 0;
	if ((me & 3) == 2) { /* r ∈ B\M */
		*den = pw_mul(cnt_established, b_not_m);
		return 1;
	}
	if (me & 1) { /* r ∈ M */
		*den = pw_mul(cnt_established, m);
		return -1;
	}
	return 0;
}

/*
 * mptcp_olia_cong_avoid: the counter change (in 2^−10 packet) of one ACK event on path r,
 * ⌊2^10·(ε_num·rate + ε_den·(w_r·2^10)²) / (ε_den·w_r·rate)⌋ with
 * rate = (1 + Σ_p ⌊w_p·2^10·srtt_r/srtt_p⌋)², the negative case truncated toward zero.
 */
PW_API pw_s64 pw_olia_counter_delta(const struct pw_samples *ps, pw_u32 n, pw_u32 r,
				    pw_s64 eps_num, pw_u64 eps_den)
{
	pw_u64 srtt_r, rate = 1, cs, cs2, den, inc_den, q;
	const struct pw_sample *p;

	if (!ps || r >= n || r >= PW_MAX_PATHS)
		return 0;
	p = ps->s;
	PW_BOUND(r);
	srtt_r = pw_max(p[r].srtt_us, 1);
	rate = pw_add(rate, pw_scaled_rate_sum(ps, n, srtt_r)); /* PW_OLIA_SCALE = 10 */
	rate = pw_mul(rate, rate);
	cs = pw_shl(p[r].cwnd, PW_OLIA_SCALE);
	den = eps_den;
	cs2 = pw_mul(pw_mul(den, cs), cs);
	inc_den = pw_mul(pw_mul(den, p[r].cwnd), rate);
	if (inc_den == 0)
		inc_den = 1;
	if (eps_num == -1) {
		if (cs2 < rate) {
			q = pw_div(pw_shl(rate - cs2, PW_OLIA_SCALE), inc_den);
			return -(pw_s64)pw_min(q, (pw_u64)0x7fffffffffffffffULL);
		}
		q = pw_div(pw_shl(cs2 - rate, PW_OLIA_SCALE), inc_den);
		return (pw_s64)pw_min(q, (pw_u64)0x7fffffffffffffffULL);
	}
	q = pw_add(eps_num > 0 ? rate : 0, cs2);
	q = pw_div(pw_shl(q, PW_OLIA_SCALE), inc_den);
	return (pw_s64)pw_min(q, (pw_u64)0x7fffffffffffffffULL);
}

/*
 * OLIA's counter for one ACK event: add d; at ≥ 1023 the window grows by one packet, at
 * ≤ −1023 it shrinks by one (not below one packet), and the counter restarts from 0 (the
 * residual is lost, §2.3 item 2). Returns the new window.
 */
PW_INLINE pw_u64 pw_olia_counter_step(pw_s64 *cnt, pw_s64 d, pw_u64 cwnd)
{
	*cnt += d;
	if (*cnt >= PW_OLIA_LIMIT) {
		*cnt = 0;
		return cwnd + 1;
	}
	if (*cnt <= -PW_OLIA_LIMIT) {
		*cnt = 0;
		return cwnd > 1 ? cwnd - 1 : 1;
	}
	return cwnd;
}

/* ℓ_r = max(loss3 − loss2, loss2 − loss1) from snd_una markers (u32 sequence arithmetic). */
PW_INLINE pw_u64 pw_olia_loss_interval(pw_u32 loss1, pw_u32 loss2, pw_u32 loss3)
{
	return pw_max((pw_u32)(loss3 - loss2), (pw_u32)(loss2 - loss1));
}

/* ---- Kelly–Voice (ALGORITHMS.md §1.5) --------------------------------------------------- */

/*
 * The counter change (in 2^−10 packet) of one ACK event on path r under Kelly and Voice's
 * "Coupled" increase (Kelly & Voice, "Stability of end-to-end algorithms for joint routing
 * and rate control", ACM SIGCOMM CCR 35(2), 2005; Han et al. 2004), per ACK on r
 * Δw_r = (w_r/rtt_r²)/(Σ_k w_k/rtt_k)². Multiplying above and below by (2^10·srtt_r)² gives
 * mptcp_olia.c's first term, OLIA's increase with ε = 0:
 *
 *   ⌊2^30·w_r / rate⌋,  rate = (1 + Σ_k ⌊w_k·2^10·srtt_r/srtt_k⌋)²
 *
 * on OLIA's counter (pw_olia_counter_step). mptcp_olia.c divides 2^10·(w_r·2^10)² by
 * w_r·rate, the same quotient; here w_r is cancelled first, so one product fewer can reach
 * 2^64. For windows and srtt_us below 2^32 (the kernel's u32 fields) the step is exact: a
 * rate sum that reaches 2^32 saturates its square, where the exact step is below one and
 * truncates to 0 as well. Negative steps never occur; the value is clamped to the counter's
 * type.
 */
PW_API pw_s64 pw_kv_counter_delta(const struct pw_samples *ps, pw_u32 n, pw_u32 r)
{
	pw_u64 srtt_r, rate, q;
	const struct pw_sample *p;

	if (!ps || r >= n || r >= PW_MAX_PATHS)
		return 0;
	p = ps->s;
	PW_BOUND(r);
	srtt_r = pw_max(p[r].srtt_us, 1);
	rate = pw_add(1, pw_scaled_rate_sum(ps, n, srtt_r)); /* PW_OLIA_SCALE = 10 */
	rate = pw_mul(rate, rate);
	q = pw_div(pw_shl(p[r].cwnd, 3 * PW_OLIA_SCALE), rate);
	return (pw_s64)pw_min(q, (pw_u64)0x7fffffffffffffffULL);
}

/* Kelly–Voice's decrease, w_r/2 on a loss on r, in the kernel's form: tcp_reno_ssthresh. */
PW_INLINE pw_u64 pw_kv_ssthresh(pw_u64 cwnd) { return pw_reno_ssthresh(cwnd); }

/* ---- Balia (mptcp_balia.c, ALGORITHMS.md §3.2) ------------------------------------------ */

#define PW_BALIA_RATE_LIMIT 25
#define PW_BALIA_SCALE_NUM 5
#define PW_BALIA_ALPHA_SCALE 10
/* 2^25 needs at most ⌈(64 − 25)/5⌉ shifts of 5 bits to reach from 2^64. */
#define PW_BALIA_MAX_SHIFTS 8

struct pw_balia {
	pw_u64 alpha;      /* ⌊max_rate/rate_r⌋, the integer α of the decrease */
	pw_u64 scale_downs;
	pw_u64 ai;         /* ACK events per packet of growth (before the counter's +1) */
	pw_u64 md;         /* packets a loss removes */
};

PW_INLINE pw_u64 pw_balia_rate(pw_u64 mss, const struct pw_sample *s)
{
	return pw_div(pw_mul(pw_mul(mss, s->cwnd), 8000000), pw_max(s->srtt_us, 1));
}

/*
 * mptcp_balia_recalc_ai for path r with the acking path's MSS for every rate:
 * α = ⌊max_rate/rate_r⌋; rates shifted right by 5 bits while max_rate > 2^25;
 * ai = ⌊⌊10·X²/(x_r+m)⌋·w_r/(4x_r+m)⌋ (w_r if 0); md = ⌊⌊w_r/2⌋·min(α·1024, 1536)/1024⌋.
 * Returns 0 for a missing path.
 */
PW_API int pw_balia_recalc(const struct pw_samples *ps, pw_u32 n, pw_u32 r, pw_u64 mss,
			   struct pw_balia *out)
{
	pw_u64 rate, max_rate = 0, sum = 0, nsd = 0, shift, sum_sq, ai, factor;
	pw_u32 i;
	const struct pw_sample *p;

	if (!ps || !out || r >= n || r >= PW_MAX_PATHS)
		return 0;
	p = ps->s;
	PW_BOUND(r);
	rate = pw_balia_rate(mss, &p[r]);
	for (i = 0; i < PW_MAX_PATHS && i < n; i++) {
		pw_u64 x = pw_balia_rate(mss, &p[i]);

		max_rate = pw_max(max_rate, x);
		sum = pw_add(sum, x);
	}
	out->alpha = pw_div(max_rate, pw_max(rate, 1));
	for (i = 0; i < PW_BALIA_MAX_SHIFTS + 6; i++) {
		if (max_rate <= ((pw_u64)1 << PW_BALIA_RATE_LIMIT))
			break;
		max_rate >>= PW_BALIA_SCALE_NUM;
		nsd++;
	}
	if (nsd > 0) {
		shift = PW_BALIA_SCALE_NUM * nsd;
		sum = 0;
		for (i = 0; i < PW_MAX_PATHS && i < n; i++) {
			pw_u64 x = pw_balia_rate(mss, &p[i]);

			sum = pw_add(sum, shift >= 64 ? 0 : x >> shift);
		}
		rate = shift >= 64 ? 0 : rate >> shift;
	}
	sum_sq = pw_mul(sum, sum);
	ai = pw_div(pw_mul(sum_sq, 10), pw_add(rate, max_rate));
	ai = pw_div(pw_mul(ai, p[r].cwnd), pw_add(pw_mul(rate, 4), max_rate));
	if (ai == 0)
		ai = p[r].cwnd;
	factor = pw_min(pw_mul(out->alpha, 1 << PW_BALIA_ALPHA_SCALE),
			(3 << PW_BALIA_ALPHA_SCALE) >> 1);
	out->scale_downs = nsd;
	out->ai = ai;
	out->md = pw_mul(p[r].cwnd >> 1, factor) >> PW_BALIA_ALPHA_SCALE;
	return 1;
}

/* Balia's threshold after a loss, max(w − md, 1) packets. */
PW_INLINE pw_u64 pw_balia_ssthresh(pw_u64 cwnd, pw_u64 md)
{
	return cwnd > md ? pw_max(cwnd - md, 1) : 1;
}

/* ---- Fully coupled (htsim FULLY_COUPLED, ALGORITHMS.md §1.4/§1.5) ----------------------- */

/*
 * Per acknowledged packet on r, Δw_r = 1/W (W = Σ windows): the ACK counter of
 * tcp_cong_avoid_ai with W as the step. Adds `acked` to *cnt and returns the packets of growth.
 */
PW_INLINE pw_u64 pw_coupled_step(pw_u64 *cnt, pw_u64 total, pw_u64 acked)
{
	pw_u64 grow;

	total = pw_max(total, 1);
	*cnt = pw_add(*cnt, acked);
	grow = *cnt / total;
	*cnt -= grow * total;
	return grow;
}

/* Fully coupled decrease: ssthresh = max(w_r − W/2, 1) packets, rounded down. */
PW_INLINE pw_u64 pw_coupled_ssthresh(pw_u64 own, pw_u64 total)
{
	pw_u64 half_up = (total >> 1) + (total & 1);

	return own > half_up ? pw_max(own - half_up, 1) : 1;
}

/* ---- BMC's weighted AIMD (Honda et al. 2009 §3.1, ALGORITHMS.md §9) -------------------- */

/* Weights are fixed point with 2^16 = 1 (a weight of one TCP flow). */
#define PW_WEIGHT_SHIFT 16
#define PW_WEIGHT_ONE ((pw_u64)1 << PW_WEIGHT_SHIFT)

/*
 * The weight subflow r uses: D_r·2^16/Σ D over the n usable subflows (BMC's aggressiveness
 * manager keeps Σ D = 1; a subflow that cannot send lends its weight to the others). A zero
 * weight counts as the equal share 1/n.
 */
PW_API pw_u64 pw_bmc_effective_weight(const struct pw_weight_list *wl, pw_u32 n, pw_u32 r)
{
	pw_u64 sum = 0, own = 0, equal;
	pw_u32 i;
	const pw_u64 *weights;

	if (!wl || n == 0 || r >= n || r >= PW_MAX_PATHS)
		return PW_WEIGHT_ONE;
	weights = wl->w;
	equal = PW_WEIGHT_ONE / n;
	for (i = 0; i < PW_MAX_PATHS && i < n; i++) {
		pw_u64 w = weights[i] ? weights[i] : equal;

		sum = pw_add(sum, w);
		if (i == r)
			own = w;
	}
	return pw_div(pw_shl(own, PW_WEIGHT_SHIFT), sum);
}

/*
 * AIMD(D², ½) in congestion avoidance: D²·acked/w packets per ACK, i.e. D² packets per window
 * acknowledged. *acc holds acknowledged packets times D² (2^32 = one packet); the window grows
 * by one packet each time it passes w·2^32. Returns the packets of growth (at most 2^16 per
 * call, far beyond any real ACK).
 */
PW_INLINE pw_u64 pw_aimd_step(pw_u64 *acc, pw_u64 cwnd, pw_u64 weight, pw_u64 acked)
{
	pw_u64 a = pw_mul(weight, weight); /* D² · 2^32 */
	pw_u64 step = pw_shl(pw_max(cwnd, 1), 2 * PW_WEIGHT_SHIFT);
	pw_u64 grow;

	*acc = pw_add(*acc, pw_mul(a, acked));
	grow = *acc / step;
	if (grow > 65536)
		grow = 65536;
	*acc -= grow * step;
	return grow;
}

/* AIMD's decrease with b = ½: max(⌊w/2⌋, 2) packets, Reno's. */
PW_INLINE pw_u64 pw_aimd_ssthresh(pw_u64 cwnd) { return pw_reno_ssthresh(cwnd); }

#endif /* PW_ARITH_H */
