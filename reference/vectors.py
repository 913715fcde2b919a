#!/usr/bin/env python3
"""
Test vectors for multipath congestion-control algorithms described in
ALGORITHMS.md (same directory).

For each algorithm two things are computed:
  * "ideal"  : the real-valued formula from the RFC / paper / draft
               (windows in packets, RTTs in seconds).
  * "kernel" : an integer emulation of the arithmetic done by the
               out-of-tree Linux MPTCP kernel (multipath-tcp/mptcp,
               net/mptcp/mptcp_{coupled,olia,balia}.c), written from
               the description in ALGORITHMS.md, to expose the effect of
               fixed-point scaling / truncation.  Kernel RTTs are given as
               srtt_us, which in Linux >= 3.15 holds 8 * smoothed RTT in
               microseconds.

Run:  python3 vectors.py            (prints everything)
      python3 vectors.py --json     (machine-readable dump)
"""
import json
import sys


def srtt_us(rtt_s):
    """Linux tp->srtt_us representation: smoothed RTT in usec, left-shifted by 3."""
    return int(round(rtt_s * 1e6)) << 3


# ---------------------------------------------------------------------------
# LIA (RFC 6356)
# ---------------------------------------------------------------------------
def lia_ideal(w, rtt):
    wtot = sum(w)
    best = max(range(len(w)), key=lambda i: w[i] / rtt[i] ** 2)
    alpha = wtot * (w[best] / rtt[best] ** 2) / sum(wi / ri for wi, ri in zip(w, rtt)) ** 2
    out = []
    for i in range(len(w)):
        coupled = alpha / wtot
        tcp = 1.0 / w[i]
        inc = min(coupled, tcp)
        out.append(dict(path=i, inc_per_ack=inc, coupled_term=coupled, tcp_term=tcp,
                        capped_by_tcp=coupled > tcp,
                        inc_per_rtt=inc * w[i],
                        loss_new_ssthresh_rfc5681=max(w[i] / 2.0, 2.0),
                        loss_decrease=w[i] / 2.0))
    return dict(alpha=alpha, best_path=best, per_path=out)


def lia_kernel(w, rtt):
    """Integer emulation of mptcp_ccc_recalc_alpha + mptcp_ccc_cong_avoid."""
    ALPHA_SCALE_DEN, ALPHA_SCALE_NUM, ALPHA_SCALE = 10, 32, 12
    s = [srtt_us(r) for r in rtt]
    max_num, best_cwnd, best_rtt, best_idx = 0, 0, 0, None
    for i, (wi, si) in enumerate(zip(w, s)):
        tmp = (wi << ALPHA_SCALE_NUM) // (si * si)
        if tmp >= max_num:            # ties -> the LAST subflow wins
            max_num, best_cwnd, best_rtt, best_idx = tmp, wi, si, i
    sum_den = 0
    for wi, si in zip(w, s):
        sum_den += ((wi << ALPHA_SCALE_DEN) * best_rtt) // si
    sum_den *= sum_den
    alpha = (best_cwnd << ALPHA_SCALE_NUM) // sum_den
    if alpha == 0:
        alpha = 1
    out = []
    for i, wi in enumerate(w):
        thr = (1 << ALPHA_SCALE) // alpha
        thr = max(thr, wi)
        # snd_cwnd_cnt is compared with '>=' BEFORE being incremented, so one
        # packet of growth needs thr+1 ACK events (ACKs, not acked packets).
        out.append(dict(path=i, threshold=thr, inc_per_ack=1.0 / (thr + 1),
                        loss_new_ssthresh=max(wi >> 1, 2)))
    return dict(alpha_fixed=alpha, best_path=best_idx,
                alpha_equiv=alpha * sum(w) / 4096.0, per_path=out)


# ---------------------------------------------------------------------------
# OLIA (Khalili et al.)
# ---------------------------------------------------------------------------
def olia_sets(w, rtt, l):
    n = len(w)
    maxw = max(w)
    M = [i for i in range(n) if w[i] == maxw]
    q = [l[i] / rtt[i] ** 2 for i in range(n)]
    qmax = max(q)
    B = [i for i in range(n) if abs(q[i] - qmax) <= 1e-12 * qmax]
    BnotM = [i for i in B if i not in M]
    eps = []
    for i in range(n):
        if not BnotM:
            eps.append(0.0)
        elif i in BnotM:
            eps.append(1.0 / (n * len(BnotM)))
        elif i in M:
            eps.append(-1.0 / (n * len(M)))
        else:
            eps.append(0.0)
    return M, B, BnotM, eps


def olia_ideal(w, rtt, l):
    M, B, BnotM, eps = olia_sets(w, rtt, l)
    S = sum(wi / ri for wi, ri in zip(w, rtt))
    out = []
    for i in range(len(w)):
        first = (w[i] / rtt[i] ** 2) / S ** 2
        second = eps[i] / w[i]
        out.append(dict(path=i, eps=eps[i], first_term=first, second_term=second,
                        inc_per_ack=first + second, inc_per_rtt=(first + second) * w[i],
                        loss_decrease=w[i] / 2.0,
                        loss_new_ssthresh_linux=max(w[i] // 2, 2)))
    return dict(M=M, B=B, B_minus_M=BnotM, per_path=out)


def olia_kernel(w, rtt, l, cnt_established=None):
    """Integer emulation of mptcp_get_epsilon / mptcp_get_rate / mptcp_olia_cong_avoid
    (one call, i.e. one ACK event; returns the change of mptcp_snd_cwnd_cnt which is
    in units of 1/1024 packet).  l[i] is max(loss3-loss2, loss2-loss1) in bytes."""
    SCALE = 10
    n = len(w)
    if cnt_established is None:
        cnt_established = n
    s = [srtt_us(r) for r in rtt]
    max_cwnd = max(w)
    best_int, best_rtt = 0, 1
    for i in range(n):
        tmp_rtt = s[i] * s[i]
        if l[i] * best_rtt >= best_int * tmp_rtt:
            best_rtt, best_int = tmp_rtt, l[i]
    Mn = sum(1 for i in range(n) if w[i] == max_cwnd)
    BnM = sum(1 for i in range(n) if w[i] != max_cwnd and l[i] * best_rtt == best_int * s[i] * s[i])
    eps_num, eps_den = [], []
    for i in range(n):
        if BnM == 0:
            eps_num.append(0); eps_den.append(1)
        elif w[i] < max_cwnd and l[i] * best_rtt == best_int * s[i] * s[i]:
            eps_num.append(1); eps_den.append(cnt_established * BnM)
        elif w[i] == max_cwnd:
            eps_num.append(-1); eps_den.append(cnt_established * Mn)
        else:
            eps_num.append(0); eps_den.append(1)
    out = []
    for r in range(n):
        rate = 1
        for p in range(n):
            rate += ((w[p] << SCALE) * s[r]) // s[p]
        rate *= rate
        cs = w[r] << SCALE
        inc_den = eps_den[r] * w[r] * rate or 1
        if eps_num[r] == -1:
            if eps_den[r] * cs * cs < rate:
                d = -(((rate - eps_den[r] * cs * cs) << SCALE) // inc_den)
            else:
                d = ((eps_den[r] * cs * cs - rate) << SCALE) // inc_den
        else:
            d = ((eps_num[r] * rate + eps_den[r] * cs * cs) << SCALE) // inc_den
        out.append(dict(path=r, eps_num=eps_num[r], eps_den=eps_den[r],
                        cnt_delta_per_ack=d, inc_per_ack=d / 1024.0,
                        acks_per_plus1=(None if d <= 0 else -(-1023 // d))))
    return dict(per_path=out)


# ---------------------------------------------------------------------------
# Kelly-Voice "Coupled" (Kelly & Voice 2005; Han et al. 2004), ALGORITHMS.md section 1.5.
# The states K1-K4 are those worked by hand in crates/pathweave-cc/src/cc/multipath/
# kelly_voice/tests.rs; computed here independently, the ideal values as exact fractions.
# ---------------------------------------------------------------------------
def kv_ideal(w, rtt):
    from fractions import Fraction
    r = [Fraction(str(x)) for x in rtt]
    S = sum(Fraction(wi) / ri for wi, ri in zip(w, r))
    out = []
    for i in range(len(w)):
        inc = (Fraction(w[i]) / r[i] ** 2) / S ** 2
        out.append(dict(path=i, inc_per_ack=float(inc), inc_num=inc.numerator,
                        inc_den=inc.denominator, inc_per_rtt=float(inc * w[i]),
                        loss_decrease=w[i] / 2.0))
    return dict(per_path=out)


def kv_kernel(w, rtt):
    """mptcp_olia.c's increase with epsilon = 0 (its first term): one ACK event changes
    mptcp_snd_cwnd_cnt (1/1024 packet) by (cwnd_r<<10)^2 << 10 / (cwnd_r * rate),
    rate = (1 + sum_p (cwnd_p<<10) * srtt_r / srtt_p)^2; +1 packet at 1023, residual lost.
    Loss: tcp_reno_ssthresh."""
    SCALE = 10
    s = [srtt_us(x) for x in rtt]
    out = []
    for r in range(len(w)):
        rate = 1
        for p in range(len(w)):
            rate += ((w[p] << SCALE) * s[r]) // s[p]
        rate *= rate
        cs = w[r] << SCALE
        d = ((cs * cs) << SCALE) // (w[r] * rate or 1)
        out.append(dict(path=r, cnt_delta_per_ack=d, inc_per_ack=d / 1024.0,
                        acks_per_plus1=(None if d <= 0 else -(-1023 // d)),
                        loss_new_ssthresh=max(w[r] >> 1, 2)))
    return dict(per_path=out)


# ---------------------------------------------------------------------------
# Balia (Peng, Walid, Hwang, Low)
# ---------------------------------------------------------------------------
def balia_ideal(w, rtt):
    x = [wi / ri for wi, ri in zip(w, rtt)]
    X = sum(x)
    xm = max(x)
    out = []
    for r in range(len(w)):
        a = xm / x[r]
        inc = x[r] / (rtt[r] * X ** 2) * (1 + a) / 2 * (4 + a) / 5
        dec = w[r] / 2 * min(a, 1.5)
        out.append(dict(path=r, alpha=a, inc_per_ack=inc, inc_per_rtt=inc * w[r],
                        loss_decrease=dec, new_window_after_loss=w[r] - dec))
    return dict(per_path=out)


def balia_kernel(w, rtt, mss=1448):
    """Integer emulation of mptcp_balia_recalc_ai + ssthresh for each subflow."""
    RATE_SCALE_LIMIT, ALPHA_SCALE, SCALE_NUM = 25, 10, 5
    s = [srtt_us(r) for r in rtt]
    out = []
    for r in range(len(w)):
        rates = [(mss * w[k] * (1000000 << 3)) // s[k] for k in range(len(w))]
        rate = rates[r]
        sum_rate = sum(rates)
        max_rate = 0
        for t in rates:
            if t >= max_rate:
                max_rate = t
        alpha = max_rate // rate
        nsd = 0
        while max_rate > (1 << RATE_SCALE_LIMIT):
            max_rate >>= SCALE_NUM
            nsd += 1
        if nsd:
            sum_rate = sum(t >> (SCALE_NUM * nsd) for t in rates)
            rate >>= SCALE_NUM * nsd
        sum_rate *= sum_rate
        ai = (sum_rate * 10) // (rate + max_rate)
        ai = (ai * w[r]) // ((rate << 2) + max_rate)
        if ai == 0:
            ai = w[r]
        md = ((w[r] >> 1) * min(alpha << ALPHA_SCALE, (3 << ALPHA_SCALE) >> 1)) >> ALPHA_SCALE
        ssth = max(w[r] - md, 1)
        out.append(dict(path=r, alpha_int=alpha, scale_downs=nsd, ai=ai,
                        inc_per_ack=1.0 / (ai + 1), md=md, new_ssthresh=ssth))
    return dict(mss=mss, per_path=out)


# --------------------------------------------------------------------------- BMC weighted AIMD
# (Honda et al. 2009) -- formulas as given in the BMC paper (Honda, "Bidimensional-Probe Multipath
# Congestion Control for Shared Bottleneck Fairness", thesis, Keio University, 2009)
# ---------------------------------------------------------------------------
def bmc_aimd(w, D):
    out = []
    for n, (wn, dn) in enumerate(zip(w, D)):
        a = dn * dn
        out.append(dict(path=n, D=dn, a=a, inc_per_ack=a / wn, inc_per_rtt=a,
                        loss_decrease=wn / 2.0,
                        epoch_rtts=0.5 * wn / a + 1))
    return dict(per_path=out)


def bmc_proportion(D, R, TJ, K):
    Twr = [r / d * t for d, r, t in zip(D, R, TJ)]
    lo = min(range(len(D)), key=lambda i: Twr[i])
    hi = max(range(len(D)), key=lambda i: Twr[i])
    delta = (D[lo] - D[lo] ** 2) * K
    newD = list(D)
    newD[lo] -= delta
    newD[hi] += delta
    return dict(T_wr=Twr, reduced=lo, increased=hi, delta=delta, D_new=newD,
                negative_weight=(newD[lo] < 0))


# ---------------------------------------------------------------------------
# MPVeno (paper formulas, OLIA increase terms)
# ---------------------------------------------------------------------------
def mpveno(w, rtt, base_rtt, l, beta=3.0):
    ol = olia_ideal(w, rtt, l)
    x = [wi / ri for wi, ri in zip(w, rtt)]
    X = sum(x)
    out = []
    for r in range(len(w)):
        theta = x[r] / X
        N = (w[r] / base_rtt[r] - w[r] / rtt[r]) * base_rtt[r]
        thr = max(1.0, theta * beta)
        noncong = N < thr
        inc = ol["per_path"][r]["inc_per_ack"]
        out.append(dict(path=r, theta=theta, backlog=N, threshold=thr,
                        non_congestive=noncong,
                        inc_per_ack=inc if noncong else inc / 2.0,
                        loss_decrease=w[r] / 5.0 if noncong else w[r] / 2.0))
    return dict(per_path=out)


# ---------------------------------------------------------------------------
# CMT/RPv2 and "MPTCP-like" from the FreeBSD/usrsctp SCTP CMT code (real-valued)
# ---------------------------------------------------------------------------
def rpv2(c, rtt, mtu=1500):
    """c in bytes.  Returns per-cwnd-of-acked-bytes CA increase and FR ssthresh."""
    S = sum(ci / ri for ci, ri in zip(c, rtt))
    C = sum(c)
    out = []
    for p in range(len(c)):
        share = (c[p] / rtt[p]) / S
        inc = mtu * share
        ss = 4 * mtu * share
        if c[p] > C / 2 and ss < c[p] - C / 2:
            ss = c[p] - C / 2
        ss = max(ss, mtu)
        paper_dec = max(0.5, 0.5 / share) * c[p]   # paper form of d_P
        out.append(dict(path=p, share=share, ca_inc_bytes_per_cwnd_acked=inc,
                        fr_new_ssthresh=ss, paper_decrease_amount=paper_dec,
                        paper_new_cwnd=max(c[p] - paper_dec, mtu)))
    return dict(per_path=out)


def main():
    res = {}
    lia_states = [
        ("L1 symmetric", [10, 10], [0.1, 0.1]),
        ("L2 asym", [20, 10], [0.05, 0.2]),
        ("L3 TCP-capped path", [40, 5], [0.02, 0.1]),
        ("L4 three paths", [100, 60, 30], [0.05, 0.1, 0.2]),
        ("L5 kernel picks wrong best path", [30, 20], [0.05, 0.1]),
        ("L6 large windows (kernel quantisation)", [1200, 800], [0.01, 0.01]),
    ]
    res["LIA"] = []
    for name, w, r in lia_states:
        res["LIA"].append(dict(state=name, w=w, rtt=r, ideal=lia_ideal(w, r), kernel=lia_kernel(w, r)))

    olia_states = [
        ("O1 symmetric", [10, 10], [0.1, 0.1], [100000, 100000]),
        ("O2 best path has small window", [30, 10], [0.05, 0.05], [200000, 600000]),
        ("O3 three paths, one neutral", [40, 20, 20], [0.04, 0.08, 0.02], [100000, 50000, 400000]),
        ("O4 max-window path shrinks", [12, 10], [0.1, 0.1], [100000, 300000]),
        ("O5 large windows (kernel counter stalls)", [500, 500], [0.02, 0.02], [3000000, 3000000]),
    ]
    res["OLIA"] = []
    for name, w, r, l in olia_states:
        res["OLIA"].append(dict(state=name, w=w, rtt=r, l_bytes=l,
                                ideal=olia_ideal(w, r, l), kernel=olia_kernel(w, r, l)))

    kv_states = [
        ("K1 two paths, RTTs 1:4", [20, 10], [0.05, 0.2]),
        ("K2 three paths (kernel stalls the middle one)", [40, 20, 20], [0.04, 0.08, 0.02]),
        ("K3 three paths (kernel stalls two)", [100, 60, 30], [0.05, 0.1, 0.2]),
        ("K4 odd windows", [15, 7, 3], [0.03, 0.06, 0.01]),
    ]
    res["KV"] = []
    for name, w, r in kv_states:
        res["KV"].append(dict(state=name, w=w, rtt=r, ideal=kv_ideal(w, r), kernel=kv_kernel(w, r)))

    balia_states = [
        ("B1 symmetric", [10, 10], [0.1, 0.1]),
        ("B2 alpha=4 on slow path", [20, 10], [0.05, 0.1]),
        ("B3 alpha=1.5 (kernel floors to 1)", [15, 10], [0.1, 0.1]),
        ("B4 alpha=1.3", [13, 10], [0.1, 0.1]),
        ("B5 high rate (kernel scale-down)", [1000, 200], [0.01, 0.02]),
    ]
    res["Balia"] = []
    for name, w, r in balia_states:
        res["Balia"].append(dict(state=name, w=w, rtt=r, ideal=balia_ideal(w, r), kernel=balia_kernel(w, r)))

    res["BMC"] = [
        dict(state="W1 equal weights", w=[10, 20], D=[0.5, 0.5], aimd=bmc_aimd([10, 20], [0.5, 0.5])),
        dict(state="W2 skewed weights", w=[40, 8], D=[0.8, 0.2], aimd=bmc_aimd([40, 8], [0.8, 0.2])),
        dict(state="W3 two flowshares (sum D = 2)", w=[30, 30], D=[1.2, 0.8], aimd=bmc_aimd([30, 30], [1.2, 0.8])),
        dict(state="W4 single path, D=1 (plain Reno)", w=[25], D=[1.0], aimd=bmc_aimd([25], [1.0])),
        dict(state="P1 proportion manager", D=[0.6, 0.4], R=[0.05, 0.1], TJ=[600.0, 100.0], K=0.5,
             result=bmc_proportion([0.6, 0.4], [0.05, 0.1], [600.0, 100.0], 0.5)),
        dict(state="P2 proportion manager, K too large", D=[0.7, 0.3], R=[0.05, 0.05], TJ=[500.0, 100.0], K=2.0,
             result=bmc_proportion([0.7, 0.3], [0.05, 0.05], [500.0, 100.0], 2.0)),
    ]

    res["MPVeno"] = [
        dict(state="V1", w=[30, 10], rtt=[0.06, 0.05], base=[0.05, 0.05], l=[200000, 600000],
             out=mpveno([30, 10], [0.06, 0.05], [0.05, 0.05], [200000, 600000])),
        dict(state="V2", w=[20, 20], rtt=[0.05, 0.1], base=[0.05, 0.05], l=[100000, 100000],
             out=mpveno([20, 20], [0.05, 0.1], [0.05, 0.05], [100000, 100000])),
    ]
    res["RPv2"] = [
        dict(state="R1", c_bytes=[30000, 15000], rtt=[0.05, 0.1], out=rpv2([30000, 15000], [0.05, 0.1])),
        dict(state="R2 equal RTT", c_bytes=[30000, 15000], rtt=[0.05, 0.05], out=rpv2([30000, 15000], [0.05, 0.05])),
    ]

    if "--json" in sys.argv:
        print(json.dumps(res, indent=1))
        return

    def f(v):
        return f"{v:.6f}" if isinstance(v, float) else str(v)

    print("=== LIA (RFC 6356) ===")
    for e in res["LIA"]:
        i, k = e["ideal"], e["kernel"]
        print(f"\n{e['state']}: w={e['w']} rtt={e['rtt']}")
        print(f"  ideal: alpha={f(i['alpha'])} best_path={i['best_path']}")
        for p in i["per_path"]:
            print(f"    path {p['path']}: inc/ACK={f(p['inc_per_ack'])} (coupled {f(p['coupled_term'])}, "
                  f"tcp {f(p['tcp_term'])}{', capped' if p['capped_by_tcp'] else ''}) "
                  f"inc/RTT={f(p['inc_per_rtt'])}  loss: -{f(p['loss_decrease'])} -> ssthresh {f(p['loss_new_ssthresh_rfc5681'])}")
        print(f"  kernel: alpha_fixed={k['alpha_fixed']} (=> alpha~{f(k['alpha_equiv'])}) best_path={k['best_path']}")
        for p in k["per_path"]:
            print(f"    path {p['path']}: thr={p['threshold']} ACKs -> inc/ACK={f(p['inc_per_ack'])} "
                  f"loss ssthresh={p['loss_new_ssthresh']}")

    print("\n=== OLIA ===")
    for e in res["OLIA"]:
        i, k = e["ideal"], e["kernel"]
        print(f"\n{e['state']}: w={e['w']} rtt={e['rtt']} l={e['l_bytes']}")
        print(f"  sets: M={i['M']} B={i['B']} B\\M={i['B_minus_M']}")
        for p, q in zip(i["per_path"], k["per_path"]):
            print(f"    path {p['path']}: eps={f(p['eps'])} inc/ACK={f(p['inc_per_ack'])} "
                  f"(= {f(p['first_term'])} + {f(p['second_term'])}) inc/RTT={f(p['inc_per_rtt'])} "
                  f"loss: -{f(p['loss_decrease'])}")
            print(f"      kernel: eps={q['eps_num']}/{q['eps_den']} cnt+= {q['cnt_delta_per_ack']}/1024 "
                  f"(inc/ACK={f(q['inc_per_ack'])}, ACKs per +1 pkt={q['acks_per_plus1']})")

    print("\n=== Kelly-Voice ===")
    for e in res["KV"]:
        i, k = e["ideal"], e["kernel"]
        print(f"\n{e['state']}: w={e['w']} rtt={e['rtt']}")
        for p, q in zip(i["per_path"], k["per_path"]):
            print(f"    path {p['path']}: inc/ACK={f(p['inc_per_ack'])} (= {p['inc_num']}/{p['inc_den']}) "
                  f"inc/RTT={f(p['inc_per_rtt'])} loss: -{f(p['loss_decrease'])}")
            print(f"      kernel: cnt+= {q['cnt_delta_per_ack']}/1024 (inc/ACK={f(q['inc_per_ack'])}, "
                  f"ACKs per +1 pkt={q['acks_per_plus1']}) loss ssthresh={q['loss_new_ssthresh']}")

    print("\n=== Balia ===")
    for e in res["Balia"]:
        i, k = e["ideal"], e["kernel"]
        print(f"\n{e['state']}: w={e['w']} rtt={e['rtt']}")
        for p, q in zip(i["per_path"], k["per_path"]):
            print(f"    path {p['path']}: alpha={f(p['alpha'])} inc/ACK={f(p['inc_per_ack'])} "
                  f"inc/RTT={f(p['inc_per_rtt'])} loss: -{f(p['loss_decrease'])} -> {f(p['new_window_after_loss'])}")
            print(f"      kernel(mss={k['mss']}): alpha_int={q['alpha_int']} scale_downs={q['scale_downs']} "
                  f"ai={q['ai']} (inc/ACK={f(q['inc_per_ack'])}) md={q['md']} ssthresh={q['new_ssthresh']}")

    print("\n=== BMC weighted AIMD ===")
    for e in res["BMC"]:
        if "aimd" in e:
            print(f"\n{e['state']}: w={e['w']} D={e['D']}")
            for p in e["aimd"]["per_path"]:
                print(f"    path {p['path']}: a=D^2={f(p['a'])} inc/ACK={f(p['inc_per_ack'])} "
                      f"inc/RTT={f(p['inc_per_rtt'])} loss: -{f(p['loss_decrease'])} "
                      f"epoch={f(p['epoch_rtts'])} RTTs")
        else:
            r = e["result"]
            print(f"\n{e['state']}: D={e['D']} R={e['R']} T_J={e['TJ']} K={e['K']}")
            print(f"    T_wr={[f(t) for t in r['T_wr']]} reduce path {r['reduced']}, increase path {r['increased']} "
                  f"by {f(r['delta'])} -> D_new={[f(d) for d in r['D_new']]}"
                  f"{'  (NEGATIVE weight: must clamp)' if r['negative_weight'] else ''}")

    print("\n=== MPVeno (paper formulas) ===")
    for e in res["MPVeno"]:
        print(f"\n{e['state']}: w={e['w']} rtt={e['rtt']} base={e['base']} l={e['l']}")
        for p in e["out"]["per_path"]:
            print(f"    path {p['path']}: theta={f(p['theta'])} N={f(p['backlog'])} thr={f(p['threshold'])} "
                  f"{'non-congestive' if p['non_congestive'] else 'congestive'} inc/ACK(avg)={f(p['inc_per_ack'])} "
                  f"loss: -{f(p['loss_decrease'])}")

    print("\n=== CMT/RPv2 (SCTP reference code, real-valued) ===")
    for e in res["RPv2"]:
        print(f"\n{e['state']}: c={e['c_bytes']} bytes rtt={e['rtt']}")
        for p in e["out"]["per_path"]:
            print(f"    path {p['path']}: share={f(p['share'])} CA inc per cwnd acked={f(p['ca_inc_bytes_per_cwnd_acked'])} B "
                  f"FR ssthresh(code)={f(p['fr_new_ssthresh'])} B; paper d_P form: -{f(p['paper_decrease_amount'])} "
                  f"-> {f(p['paper_new_cwnd'])} B")


if __name__ == "__main__":
    main()
