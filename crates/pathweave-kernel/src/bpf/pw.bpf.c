// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * pw.bpf.c — coupled congestion control for Linux MPTCP subflows as BPF struct_ops:
 * pw_lia, pw_olia, pw_balia (the `linux` arithmetic of pathweave-cc, from the out-of-tree
 * MPTCP kernel), pw_coupled (the fully coupled increase 1/W and decrease W/2), pw_bmc
 * (BMC's weighted AIMD, weights written by a userspace proportion manager) and pw_kv
 * (Kelly and Voice's coupled increase, ALGORITHMS.md §1.5, on OLIA's counter with ε = 0).
 *
 * Every ops table shares the same hooks, specialised by an algorithm constant. A socket that
 * is not an MPTCP subflow, a subflow without a usable sibling (including a connection that
 * fell back to TCP) and a subflow that found no slot run the kernel's Reno.
 *
 * Coupled state: pw_conns (pw_intf.h). Each subflow publishes its window, threshold, RTT
 * and counters into its slot at every callback and reads its siblings' slots under the
 * entry's spin lock; the arithmetic itself is pw_arith.h, run outside the lock on a copy.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "pw_arith.h"
#include "pw_intf.h"

_Static_assert(TCP_CA_Open == PW_CA_OPEN && TCP_CA_Disorder == PW_CA_DISORDER &&
		       TCP_CA_CWR == PW_CA_CWR && TCP_CA_Recovery == PW_CA_RECOVERY &&
		       TCP_CA_Loss == PW_CA_LOSS,
	       "pw_arith.h's congestion states are the kernel's");

char _license[] SEC("license") = "Dual MIT/GPL";

#define TCP_CONG_NON_RESTRICTED 0x1
#define PW_TCP_ESTABLISHED 1
#define PW_TCP_CLOSE 7
#define PW_TCP_CLOSE_WAIT 8

/* pw_ca.flags */
#define PW_CA_REGISTERED 1
#define PW_CA_PLAIN 2   /* never coupled: not MPTCP, no slot, or another algorithm */
#define PW_CA_COUPLED 4 /* the last congestion-avoidance step used the coupled rule */

extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PW_CONNS_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct pw_conn);
} pw_conns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PW_CONNS_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct pw_weights);
} pw_bmc_weights SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PW_STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} pw_stats SEC(".maps");

/*
 * MPTCP connections that reached TCP_CLOSE, by socket address, with their token: written by
 * pw_conn_close for every MPTCP socket on the machine (a tracing program may not touch
 * pw_conns, whose values hold a spin lock) and swept by the controllers (pw_sweep).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PW_CONNS_MAX);
	__type(key, __u64);
	__type(value, __u32);
} pw_closed SEC(".maps");

/* The value a new connection entry starts from (the map may not be written from the stack:
 * a whole entry does not fit in the 512 bytes of a BPF stack frame beside the rest). */
static const __u8 pw_zero_conn[sizeof(struct pw_conn)];

/* Per-subflow state in icsk_ca_priv (at most 104 bytes). */
struct pw_ca {
	__u64 conn;     /* pw_conns key, 0 while not registered */
	__u64 cnt;      /* LIA/Balia event counter, fully coupled ACK counter, AIMD credit */
	__s64 olia_cnt; /* OLIA's (and Kelly–Voice's) signed counter in 2^-10 packet */
	__u32 ai;       /* Balia's cached ai (0: not computed) */
	__u32 md;       /* Balia's cached md */
	__u32 slot;
	__u32 flags;    /* PW_CA_* */
	__u32 loss1, loss2, loss3; /* OLIA's snd_una markers */
	__u32 una;      /* snd_una at the last callback (BMC's acknowledged bytes) */
	__u32 ca_state; /* the last state set_state reported */
	__u32 acked_pending; /* bytes acknowledged since the last publish */
	__u32 losses_pending;
	__u32 token;    /* the connection's token when the subflow registered */
};

/* What one subflow sees of its connection, copied under the lock. */
struct pw_view {
	struct pw_samples s;
	struct pw_weight_list w;
	__u64 alpha;
	__u32 n;        /* usable subflows in s[] */
	__u32 me;       /* this subflow's index in s[], n if it is not usable */
	__u32 subflows; /* registered subflows */
	__u32 forced;
	__u64 id;
};

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline struct pw_ca *pw_ca(const struct sock *sk)
{
	return (struct pw_ca *)inet_csk(sk)->icsk_ca_priv;
}

static __always_inline void pw_count_n(__u32 stat, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&pw_stats, &stat);

	if (v)
		__sync_fetch_and_add(v, n);
}

static __always_inline void pw_count(__u32 stat)
{
	pw_count_n(stat, 1);
}

static __always_inline __u64 pw_next_id(void)
{
	__u32 stat = PW_STAT_NEXT_ID;
	__u64 *v = bpf_map_lookup_elem(&pw_stats, &stat);

	return v ? __sync_fetch_and_add(v, 1) + 1 : 0;
}

#define PW_TCP_LISTEN 10

/*
 * The MPTCP connection of a subflow, through its subflow context; 0 if none yet. A passive
 * subflow starts out pointing at the listening MPTCP socket, shared by every connection it
 * accepts, until the connection it belongs to is created: that is no key either.
 */
static __always_inline __u64 pw_conn_key(struct sock *sk)
{
	struct sock *conn;
	void *ulp;

	if (!tcp_sk(sk)->is_mptcp)
		return 0;
	ulp = inet_csk(sk)->icsk_ulp_data;
	if (!ulp)
		return 0;
	conn = BPF_CORE_READ((struct mptcp_subflow_context *)ulp, conn);
	if (!conn)
		return 0;
	if (BPF_CORE_READ(conn, __sk_common.skc_state) == PW_TCP_LISTEN) {
		pw_count(PW_STAT_LISTENER_CONN);
		return 0;
	}
	return (__u64)conn;
}

#define PW_CONN_LIVE (1ULL << 32)

/*
 * The token of the socket at `key`, with PW_CONN_LIVE set if that is the subflow's own
 * connection and it is still open (one return register: cong_avoid's stack has no room to
 * spare). A join whose handshake completes while its connection closes can reach init after
 * the connection closed, or after its socket was freed and the address taken by another
 * connection (the subflow context keeps the pointer); the subflow context holds its own
 * connection's token, which the socket at the address must carry.
 */
static __noinline __u64 pw_conn_token(struct sock *sk, __u64 key)
{
	struct mptcp_subflow_context *ctx = inet_csk(sk)->icsk_ulp_data;
	struct mptcp_sock *msk = (struct mptcp_sock *)key;
	__u32 mine = BPF_CORE_READ(ctx, token), token = BPF_CORE_READ(msk, token);

	if (mine != token ||
	    BPF_CORE_READ(msk, sk.icsk_inet.sk.__sk_common.skc_state) == PW_TCP_CLOSE)
		return token;
	return token | PW_CONN_LIVE;
}

/* Empties an entry under its lock: no algorithm, no subflow, no slot in use. */
static __always_inline void pw_conn_clear(struct pw_conn *c)
{
	__u32 i;

	c->algo = 0;
	c->used = 0;
	c->subflows = 0;
	c->alpha = 0;
	for (i = 0; i < PW_MAX_PATHS; i++)
		c->slot[i].flags = 0;
}

/*
 * Removes the entry of a connection that has closed, if the entry at its address is still
 * that connection's (same token): a bpf_for_each_map_elem callback over pw_closed.
 */
static long pw_sweep_one(void *map, __u64 *key, __u32 *token, void *unused)
{
	struct pw_conn *c = bpf_map_lookup_elem(&pw_conns, key);
	__u64 id = 0, held = 0;
	int mine = 0;

	if (c) {
		bpf_spin_lock(&c->lock);
		if (c->token == *token && c->algo) {
			/* algo 0: claimed by no one, or by a sweep on another CPU. */
			mine = 1;
			held = c->subflows;
			id = c->id;
			pw_conn_clear(c);
		}
		bpf_spin_unlock(&c->lock);
	}
	if (mine) {
		bpf_map_delete_elem(&pw_conns, key);
		bpf_map_delete_elem(&pw_bmc_weights, &id);
		pw_count(PW_STAT_RECLAIMED);
		pw_count_n(PW_STAT_RECLAIMED_SUBFLOWS, held);
	}
	bpf_map_delete_elem(&pw_closed, key);
	return 0;
}

/*
 * Reclaims the entries of closed connections. Normally a connection's last subflow deletes
 * its entry soon after the close, and the sweep finds nothing of it; but the kernel can free
 * a subflow without calling release (a join racing its connection's close), whose slot would
 * otherwise keep the entry forever. Run from init when it creates an entry and from release
 * when it deletes one (not from cong_avoid: its stack has no room for the callback's frame).
 */
static __always_inline void pw_sweep(void)
{
	bpf_for_each_map_elem(&pw_closed, pw_sweep_one, NULL, 0);
}

/* pw_conn_close: every MPTCP socket that reaches TCP_CLOSE, with its token. */
SEC("raw_tp/inet_sock_set_state")
int pw_conn_close(struct bpf_raw_tracepoint_args *ctx)
{
	struct sock *sk = (struct sock *)ctx->args[0];
	__u64 key = (__u64)sk;
	__u32 token;

	if ((int)ctx->args[2] != PW_TCP_CLOSE ||
	    BPF_CORE_READ(sk, sk_protocol) != IPPROTO_MPTCP)
		return 0;
	token = BPF_CORE_READ((struct mptcp_sock *)sk, token);
	bpf_map_update_elem(&pw_closed, &key, &token, BPF_ANY);
	return 0;
}

/*
 * Gives the slot back; the last subflow deletes the entry (and BMC's weights) and returns 1.
 */
static __always_inline int pw_unregister(struct sock *sk, struct pw_ca *ca)
{
	struct pw_conn *c;
	__u64 key = ca->conn, id = 0;
	__u32 slot = ca->slot & (PW_MAX_PATHS - 1), left = 1;

	if (!(ca->flags & PW_CA_REGISTERED) || !key)
		return 0;
	ca->flags &= ~PW_CA_REGISTERED;
	ca->conn = 0;
	c = bpf_map_lookup_elem(&pw_conns, &key);
	if (!c) {
		pw_count(PW_STAT_CONN_MISSING);
		return 0;
	}
	bpf_spin_lock(&c->lock);
	if (c->token != ca->token || !(c->used & (1u << slot))) {
		/* Reclaimed (and maybe the address taken by another connection since). */
		bpf_spin_unlock(&c->lock);
		pw_count(PW_STAT_CONN_MISSING);
		return 0;
	}
	c->used &= ~(1u << slot);
	c->slot[slot].flags = 0;
	if (c->subflows)
		c->subflows--;
	c->forced = 1;
	left = c->subflows;
	if (!left)
		c->algo = 0; /* deleted below: a concurrent sweep leaves it alone */
	id = c->id;
	bpf_spin_unlock(&c->lock);
	pw_count(PW_STAT_UNREGISTERED);
	if (left == 0) {
		bpf_map_delete_elem(&pw_conns, &key);
		bpf_map_delete_elem(&pw_bmc_weights, &id);
		bpf_map_delete_elem(&pw_closed, &key);
		pw_count(PW_STAT_CONN_DELETED);
		return 1;
	}
	return 0;
}

/*
 * Takes a slot in the connection's entry, creating the entry for the first subflow. Called
 * only from init and cong_avoid, the callbacks of an initialised controller: tcp_disconnect
 * calls set_state after release (and after clearing icsk_ca_priv), so a registration there
 * would never see a release.
 */
static __always_inline int pw_register(struct sock *sk, struct pw_ca *ca, __u32 algo)
{
	struct pw_conn *c;
	__u64 key, id, live, stale_id = 0;
	__u32 i, slot = PW_MAX_PATHS, mismatch = 0, token = 0, created = 0, stale = 0;

	if (ca->flags & PW_CA_PLAIN)
		return 0;
	if (ca->flags & PW_CA_REGISTERED) {
		key = pw_conn_key(sk);
		if (!key || key == ca->conn)
			return 0;
		/* The subflow now belongs to another connection: move its slot there. */
		pw_count(PW_STAT_REKEYED);
		pw_unregister(sk, ca);
	}
	if (!tcp_sk(sk)->is_mptcp) {
		ca->flags |= PW_CA_PLAIN;
		pw_count(PW_STAT_PLAIN_TCP);
		return 0;
	}
	key = pw_conn_key(sk);
	if (!key) {
		pw_count(PW_STAT_NO_CONN_YET);
		return 0;
	}
	live = pw_conn_token(sk, key);
	if (!(live & PW_CONN_LIVE)) {
		ca->flags |= PW_CA_PLAIN;
		pw_count(PW_STAT_CONN_GONE);
		return 0;
	}
	token = (__u32)live;
	c = bpf_map_lookup_elem(&pw_conns, &key);
	if (!c) {
		/* A zeroed entry; the first subflow to lock it below claims it for its algorithm. */
		if (bpf_map_update_elem(&pw_conns, &key, pw_zero_conn, BPF_NOEXIST) == 0) {
			pw_count(PW_STAT_CONN_CREATED);
			created = 1;
		}
		c = bpf_map_lookup_elem(&pw_conns, &key);
		if (!c) {
			ca->flags |= PW_CA_PLAIN;
			pw_count(PW_STAT_MAP_FULL);
			return 0;
		}
	}
	id = pw_next_id();
	bpf_spin_lock(&c->lock);
	if (c->algo != 0 && c->token != token) {
		/* Left by an earlier connection at this address, not yet swept: start afresh. */
		stale = c->subflows + 1;
		stale_id = c->id;
		pw_conn_clear(c);
	}
	if (c->algo == 0 && c->used == 0) {
		c->algo = algo;
		c->id = id;
		c->token = token;
	}
	if (c->algo != algo) {
		mismatch = 1;
	} else {
		for (i = 0; i < PW_MAX_PATHS; i++) {
			if (!(c->used & (1u << i))) {
				slot = i;
				break;
			}
		}
		if (slot < PW_MAX_PATHS) {
			c->used |= 1u << slot;
			c->subflows++;
			c->forced = 1;
			c->slot[slot].flags = PW_SLOT_USED;
			c->slot[slot].loss_interval = 0;
			c->slot[slot].acked_bytes = 0;
			c->slot[slot].losses = 0;
		}
	}
	bpf_spin_unlock(&c->lock);
	if (stale) {
		bpf_map_delete_elem(&pw_bmc_weights, &stale_id);
		pw_count(PW_STAT_STALE);
		pw_count_n(PW_STAT_RECLAIMED_SUBFLOWS, stale - 1);
	}
	if (mismatch) {
		ca->flags |= PW_CA_PLAIN;
		pw_count(PW_STAT_ALGO_MISMATCH);
		return 0;
	}
	if (slot >= PW_MAX_PATHS) {
		ca->flags |= PW_CA_PLAIN;
		pw_count(PW_STAT_SLOTS_FULL);
		return 0;
	}
	/*
	 * Which path the subflow takes, for userspace (the BMC manager matches slots to paths).
	 * The slot is this subflow's now; written outside the lock to keep the stack small.
	 */
	c->slot[slot & (PW_MAX_PATHS - 1)].saddr = sk->__sk_common.skc_rcv_saddr;
	c->slot[slot & (PW_MAX_PATHS - 1)].sport = sk->__sk_common.skc_num;
	ca->conn = key;
	ca->slot = slot;
	ca->token = token;
	ca->flags |= PW_CA_REGISTERED;
	pw_count(PW_STAT_REGISTERED);
	return created;
}

/* This subflow's own state, read from the socket before taking the lock. */
struct pw_own {
	__u64 loss_interval;
	__u32 cwnd, ssthresh, srtt_us, mss, flags, acked, losses;
};

static __always_inline void pw_read_own(struct sock *sk, struct pw_ca *ca, struct pw_own *o)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 una = tp->snd_una;
	__u8 state = sk->__sk_common.skc_state;

	o->cwnd = tp->snd_cwnd;
	o->ssthresh = tp->snd_ssthresh;
	o->srtt_us = tp->srtt_us;
	o->mss = tp->mss_cache;
	o->flags = PW_SLOT_USED;
	if ((state == PW_TCP_ESTABLISHED || state == PW_TCP_CLOSE_WAIT) && o->srtt_us > 0)
		o->flags |= PW_SLOT_CAN_SEND;
	if (ca->ca_state == TCP_CA_Recovery)
		o->flags |= PW_SLOT_RECOVERY;
	o->loss_interval = pw_olia_loss_interval(ca->loss1, ca->loss2, ca->loss3);
	ca->acked_pending += una - ca->una;
	ca->una = una;
	o->acked = ca->acked_pending;
	o->losses = ca->losses_pending;
	ca->acked_pending = 0;
	ca->losses_pending = 0;
}

/*
 * Publishes this subflow's state into its slot and copies every usable slot into v
 * (effective: a slot in recovery counts its ssthresh, as OLIA and htsim do). Returns 0 if
 * the subflow is not registered or its entry is gone.
 */
static __always_inline int pw_sync(struct sock *sk, struct pw_ca *ca, struct pw_view *v,
				   int effective)
{
	struct pw_own o = {};
	struct pw_conn *c;
	struct pw_weights *wt = NULL;
	__u64 key = ca->conn;
	__u32 me = ca->slot & (PW_MAX_PATHS - 1), i, n = 0;

	v->n = 0;
	v->me = PW_MAX_PATHS;
	if (!(ca->flags & PW_CA_REGISTERED) || !key)
		return 0;
	c = bpf_map_lookup_elem(&pw_conns, &key);
	if (!c || c->token != ca->token) {
		/* Reclaimed at the connection's close: Reno from now on. */
		ca->flags = (ca->flags & ~PW_CA_REGISTERED) | PW_CA_PLAIN;
		ca->conn = 0;
		pw_count(PW_STAT_CONN_MISSING);
		return 0;
	}
	pw_read_own(sk, ca, &o);
	v->id = c->id;
	/* Only BMC has weights: a second hash lookup on every ACK of the others is waste. */
	if (c->algo == PW_ALGO_BMC)
		wt = bpf_map_lookup_elem(&pw_bmc_weights, &v->id);
	/* Weights by slot, compacted below in place to the usable slots' order (n <= i). */
	for (i = 0; i < PW_MAX_PATHS; i++)
		v->w.w[i] = wt ? wt->weight[i] : 0;
	bpf_spin_lock(&c->lock);
	c->slot[me].cwnd = o.cwnd;
	c->slot[me].ssthresh = o.ssthresh;
	c->slot[me].srtt_us = o.srtt_us;
	c->slot[me].mss = o.mss;
	c->slot[me].flags = o.flags;
	c->slot[me].loss_interval = o.loss_interval;
	c->slot[me].acked_bytes += o.acked;
	c->slot[me].losses += o.losses;
	for (i = 0; i < PW_MAX_PATHS; i++) {
		struct pw_slot *s = &c->slot[i];

		if ((s->flags & (PW_SLOT_USED | PW_SLOT_CAN_SEND)) !=
		    (PW_SLOT_USED | PW_SLOT_CAN_SEND))
			continue;
		if (i == me)
			v->me = n;
		v->s.s[n & (PW_MAX_PATHS - 1)].cwnd =
			effective && (s->flags & PW_SLOT_RECOVERY) ? s->ssthresh : s->cwnd;
		v->s.s[n & (PW_MAX_PATHS - 1)].srtt_us = s->srtt_us;
		v->s.s[n & (PW_MAX_PATHS - 1)].loss_interval = s->loss_interval;
		v->w.w[n & (PW_MAX_PATHS - 1)] = v->w.w[i];
		n++;
	}
	v->n = n;
	v->alpha = c->alpha;
	v->forced = c->forced;
	v->subflows = c->subflows;
	bpf_spin_unlock(&c->lock);
	return 1;
}

/* Stores LIA's α (and clears the forced flag if asked). */
static __always_inline void pw_store_alpha(struct pw_ca *ca, __u64 alpha, int clear_forced)
{
	__u64 key = ca->conn;
	struct pw_conn *c = bpf_map_lookup_elem(&pw_conns, &key);

	if (!c)
		return;
	bpf_spin_lock(&c->lock);
	c->alpha = alpha;
	if (clear_forced)
		c->forced = 0;
	bpf_spin_unlock(&c->lock);
}

static __always_inline void pw_force(struct pw_ca *ca)
{
	__u64 key = ca->conn;
	struct pw_conn *c;

	if (!key)
		return;
	c = bpf_map_lookup_elem(&pw_conns, &key);
	if (!c)
		return;
	bpf_spin_lock(&c->lock);
	c->forced = 1;
	bpf_spin_unlock(&c->lock);
}

static __always_inline int pw_coupled_view(struct pw_view *v)
{
	return v->n >= 2 && v->me < v->n && v->me < PW_MAX_PATHS;
}

static __always_inline void pw_balia_refresh(struct sock *sk, struct pw_ca *ca,
					     struct pw_view *v)
{
	struct pw_balia b = {};

	if (!pw_coupled_view(v))
		return;
	if (pw_balia_recalc(&v->s, v->n, v->me, tcp_sk(sk)->mss_cache, &b)) {
		ca->ai = b.ai > 0xffffffffULL ? 0xffffffffU : (__u32)b.ai;
		ca->md = b.md > 0xffffffffULL ? 0xffffffffU : (__u32)b.md;
	}
}

static __always_inline int pw_cwnd_limited(struct tcp_sock *tp)
{
	if (BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited))
		return 1;
	if (tp->snd_cwnd < tp->snd_ssthresh)
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return 0;
}

static __always_inline void pw_set_cwnd(struct tcp_sock *tp, __u64 cwnd)
{
	if (cwnd > tp->snd_cwnd_clamp)
		cwnd = tp->snd_cwnd_clamp;
	if (cwnd < 1)
		cwnd = 1;
	tp->snd_cwnd = (__u32)cwnd;
}

/* ---- hooks ------------------------------------------------------------------------------ */

static __always_inline void pw_init(struct sock *sk, __u32 algo)
{
	struct pw_ca *ca = pw_ca(sk);
	__u32 una = tcp_sk(sk)->snd_una;

	/*
	 * The private area is zeroed with the socket and by tcp_disconnect, and release runs
	 * before any re-initialisation the kernel plans; should init still come a second time
	 * on a registered socket, its slot is given back first rather than leaked.
	 */
	if (ca->flags & PW_CA_REGISTERED) {
		pw_count(PW_STAT_REINIT);
		pw_unregister(sk, ca);
	}
	ca->conn = 0;
	ca->cnt = 0;
	ca->olia_cnt = 0;
	ca->ai = 0;
	ca->md = 0;
	ca->slot = 0;
	ca->token = 0;
	ca->flags = 0;
	ca->loss1 = una;
	ca->loss2 = una;
	ca->loss3 = una;
	ca->una = una;
	ca->ca_state = 0;
	ca->acked_pending = 0;
	ca->losses_pending = 0;
	pw_count(PW_STAT_INIT);
	/*
	 * An active join subflow can be reset while its handshake completes (MPTCP validates
	 * the join in sk_rx_dst_set, before tcp_finish_connect initialises the controller);
	 * if its connection has gone, the reset destroys the socket there and then, with the
	 * controller not yet initialised, so no release will ever follow this init. A closed
	 * socket sends nothing: it stays out of the coupled state.
	 */
	if (sk->__sk_common.skc_state == PW_TCP_CLOSE) {
		ca->flags = PW_CA_PLAIN;
		pw_count(PW_STAT_INIT_CLOSED);
		return;
	}
	if (pw_register(sk, ca, algo))
		pw_sweep();
}

static __always_inline void pw_release(struct sock *sk)
{
	struct pw_ca *ca = pw_ca(sk);

	pw_count(PW_STAT_RELEASE);
	if (tcp_sk(sk)->is_mptcp && !inet_csk(sk)->icsk_ulp_data)
		pw_count(PW_STAT_RELEASE_ULP_GONE);
	if (pw_unregister(sk, ca))
		pw_sweep();
}

static __always_inline __u32 pw_ssthresh(struct sock *sk, __u32 algo)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct pw_ca *ca = pw_ca(sk);
	struct pw_view v;
	__u32 cwnd = tp->snd_cwnd;
	__u64 ss = pw_reno_ssthresh(cwnd), total = 0;
	__u32 i;

	ca->losses_pending++;
	if (!pw_sync(sk, ca, &v, algo == PW_ALGO_COUPLED) || !pw_coupled_view(&v))
		return (__u32)ss;
	if (algo == PW_ALGO_BALIA) {
		if (!ca->ai)
			pw_balia_refresh(sk, ca, &v);
		ss = pw_balia_ssthresh(cwnd, ca->md); /* the md of the last recalculation */
	} else if (algo == PW_ALGO_COUPLED) {
		for (i = 0; i < PW_MAX_PATHS && i < v.n; i++)
			total += v.s.s[i].cwnd;
		ss = pw_coupled_ssthresh(cwnd, total);
	} else if (algo == PW_ALGO_KV) {
		ss = pw_kv_ssthresh(cwnd); /* Kelly & Voice 2005: w_r ← w_r/2 */
	}
	return (__u32)ss;
}

static __always_inline void pw_cong_avoid(struct sock *sk, __u32 ack, __u32 acked, __u32 algo)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct pw_ca *ca = pw_ca(sk);
	struct pw_view v;
	__u64 cwnd, alpha, grow;
	__u32 best = 0;

	pw_register(sk, ca, algo);
	if (algo == PW_ALGO_OLIA)
		ca->loss3 = tp->snd_una; /* mptcp_olia: before the cwnd-limited check */
	if (!(ca->flags & PW_CA_REGISTERED)) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	if (!pw_cwnd_limited(tp)) {
		pw_count(PW_STAT_NOT_CWND_LIMITED);
		pw_sync(sk, ca, &v, 0);
		return;
	}
	if (tp->snd_cwnd < tp->snd_ssthresh) {
		/* Slow start is uncoupled TCP (RFC 6356 §3); leftover ACKs are dropped. */
		tcp_slow_start(tp, acked);
		if (!pw_sync(sk, ca, &v, 0) || !pw_coupled_view(&v))
			return;
		if (algo == PW_ALGO_LIA) {
			alpha = pw_lia_alpha(&v.s, v.n, &best);
			pw_store_alpha(ca, alpha, 0);
		} else if (algo == PW_ALGO_BALIA) {
			pw_balia_refresh(sk, ca, &v);
		}
		return;
	}
	if (!pw_sync(sk, ca, &v,
		     algo == PW_ALGO_OLIA || algo == PW_ALGO_COUPLED || algo == PW_ALGO_KV) ||
	    !pw_coupled_view(&v)) {
		if (ca->flags & PW_CA_COUPLED) {
			ca->flags &= ~PW_CA_COUPLED;
			ca->cnt = 0;
			ca->olia_cnt = 0;
			tp->snd_cwnd_cnt = 0;
		}
		tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked);
		return;
	}
	if (!(ca->flags & PW_CA_COUPLED)) {
		ca->flags |= PW_CA_COUPLED;
		ca->cnt = 0;
		ca->olia_cnt = 0;
	}
	cwnd = tp->snd_cwnd;
	if (algo == PW_ALGO_LIA) {
		int fresh = 0;

		alpha = v.alpha;
		if (v.forced || !alpha) {
			alpha = pw_lia_alpha(&v.s, v.n, &best);
			fresh = 1;
		}
		if (pw_counter_step(&ca->cnt, pw_lia_threshold(alpha, cwnd))) {
			pw_set_cwnd(tp, cwnd + 1);
			v.s.s[v.me & (PW_MAX_PATHS - 1)].cwnd = tp->snd_cwnd;
			alpha = pw_lia_alpha(&v.s, v.n, &best); /* kernel: recalc after every cwnd++ */
			fresh = 1;
		}
		if (fresh)
			pw_store_alpha(ca, alpha, 1);
	} else if (algo == PW_ALGO_OLIA) {
		pw_u64 den = 1;
		pw_s64 num = pw_olia_epsilon(&v.s, v.n, v.me, v.subflows, &den);
		pw_s64 d = pw_olia_counter_delta(&v.s, v.n, v.me, num, den);

		pw_set_cwnd(tp, pw_olia_counter_step(&ca->olia_cnt, d, cwnd));
	} else if (algo == PW_ALGO_BALIA) {
		if (!ca->ai)
			pw_balia_refresh(sk, ca, &v);
		if (pw_counter_step(&ca->cnt, ca->ai)) {
			pw_set_cwnd(tp, cwnd + 1);
			v.s.s[v.me & (PW_MAX_PATHS - 1)].cwnd = tp->snd_cwnd;
			pw_balia_refresh(sk, ca, &v);
		}
	} else if (algo == PW_ALGO_COUPLED) {
		__u64 total = 0;
		__u32 i;

		for (i = 0; i < PW_MAX_PATHS && i < v.n; i++)
			total += v.s.s[i].cwnd;
		grow = pw_coupled_step(&ca->cnt, total, acked);
		if (grow)
			pw_set_cwnd(tp, cwnd + grow);
	} else if (algo == PW_ALGO_KV) {
		/*
		 * Kelly & Voice 2005: Δw_r = (w_r/rtt_r²)/(Σ_k w_k/rtt_k)² per ACK, summed over the
		 * effective windows (ssthresh in recovery, mptcp_get_crt_cwnd), counted per ACK
		 * event on OLIA's counter as mptcp_olia.c's first term. No loss markers: ε ≡ 0.
		 */
		pw_s64 d = pw_kv_counter_delta(&v.s, v.n, v.me);

		pw_set_cwnd(tp, pw_olia_counter_step(&ca->olia_cnt, d, cwnd));
	} else if (algo == PW_ALGO_BMC) {
		__u64 weight = pw_bmc_effective_weight(&v.w, v.n, v.me);

		grow = pw_aimd_step(&ca->cnt, cwnd, weight, acked);
		if (grow)
			pw_set_cwnd(tp, cwnd + grow);
	}
}

static __always_inline void pw_set_state(struct sock *sk, __u8 new_state, __u32 algo)
{
	struct pw_ca *ca = pw_ca(sk);
	struct pw_view v;

	if (algo == PW_ALGO_OLIA &&
	    (new_state == TCP_CA_Loss || new_state == TCP_CA_Recovery ||
	     new_state == TCP_CA_CWR) &&
	    ca->loss3 != ca->loss2 && !inet_csk(sk)->icsk_retransmits) {
		/* mptcp_olia_set_state: shift the loss markers once per loss episode. */
		ca->loss1 = ca->loss2;
		ca->loss2 = ca->loss3;
	}
	if (pw_state_clears_counter(new_state)) {
		ca->cnt = 0; /* as the kernel clears snd_cwnd_cnt; olia_cnt is OLIA's own */
		/*
		 * pw_kv borrows OLIA's counter for its arithmetic, but no kernel of its own keeps
		 * it across a loss: it is cleared as snd_cwnd_cnt is, as pathweave-cc's `linux`
		 * Kelly–Voice clears its growth counter on entering recovery.
		 */
		if (algo == PW_ALGO_KV)
			ca->olia_cnt = 0;
	}
	ca->ca_state = new_state;
	if (ca->flags & PW_CA_REGISTERED) {
		pw_sync(sk, ca, &v, 0);
		pw_force(ca); /* mptcp_coupled: a state change forces α's recalculation */
	}
}

static __always_inline void pw_cwnd_event(struct sock *sk, enum tcp_ca_event ev, __u32 algo)
{
	struct pw_ca *ca = pw_ca(sk);
	struct pw_view v;
	__u32 best = 0;
	__u64 alpha;

	if (ev != CA_EVENT_LOSS && ev != CA_EVENT_COMPLETE_CWR)
		return;
	if (!pw_sync(sk, ca, &v, 0) || !pw_coupled_view(&v))
		return;
	if (algo == PW_ALGO_LIA && ev == CA_EVENT_LOSS) {
		alpha = pw_lia_alpha(&v.s, v.n, &best);
		pw_store_alpha(ca, alpha, 0);
	} else if (algo == PW_ALGO_BALIA) {
		pw_balia_refresh(sk, ca, &v);
	}
}

static __always_inline __u32 pw_undo_cwnd(struct sock *sk)
{
	struct pw_ca *ca = pw_ca(sk);
	struct pw_view v;
	__u32 cwnd = tcp_reno_undo_cwnd(sk);

	/* The undone window is what the siblings must see: publish it now. */
	if (ca->flags & PW_CA_REGISTERED) {
		__u32 saved = tcp_sk(sk)->snd_cwnd;

		tcp_sk(sk)->snd_cwnd = cwnd;
		pw_sync(sk, ca, &v, 0);
		tcp_sk(sk)->snd_cwnd = saved;
	}
	return cwnd;
}

#define PW_OPS(NAME, ALGO)                                                                     \
	SEC("struct_ops")                                                                      \
	void BPF_PROG(init_##NAME, struct sock *sk) { pw_init(sk, ALGO); }                     \
	SEC("struct_ops")                                                                      \
	void BPF_PROG(release_##NAME, struct sock *sk) { pw_release(sk); }                     \
	SEC("struct_ops")                                                                      \
	__u32 BPF_PROG(ssthresh_##NAME, struct sock *sk) { return pw_ssthresh(sk, ALGO); }     \
	SEC("struct_ops")                                                                      \
	void BPF_PROG(cong_avoid_##NAME, struct sock *sk, __u32 ack, __u32 acked)              \
	{                                                                                      \
		pw_cong_avoid(sk, ack, acked, ALGO);                                           \
	}                                                                                      \
	SEC("struct_ops")                                                                      \
	void BPF_PROG(set_state_##NAME, struct sock *sk, __u8 new_state)                       \
	{                                                                                      \
		pw_set_state(sk, new_state, ALGO);                                             \
	}                                                                                      \
	SEC("struct_ops")                                                                      \
	void BPF_PROG(cwnd_event_##NAME, struct sock *sk, enum tcp_ca_event ev)                \
	{                                                                                      \
		pw_cwnd_event(sk, ev, ALGO);                                                   \
	}                                                                                      \
	SEC("struct_ops")                                                                      \
	__u32 BPF_PROG(undo_cwnd_##NAME, struct sock *sk) { return pw_undo_cwnd(sk); }         \
	SEC(".struct_ops.link")                                                                \
	struct tcp_congestion_ops NAME = {                                                     \
		.init = (void *)init_##NAME,                                                   \
		.release = (void *)release_##NAME,                                             \
		.ssthresh = (void *)ssthresh_##NAME,                                           \
		.cong_avoid = (void *)cong_avoid_##NAME,                                       \
		.set_state = (void *)set_state_##NAME,                                         \
		.cwnd_event = (void *)cwnd_event_##NAME,                                       \
		.undo_cwnd = (void *)undo_cwnd_##NAME,                                         \
		.flags = TCP_CONG_NON_RESTRICTED,                                              \
		.name = #NAME,                                                                 \
	};

PW_OPS(pw_lia, PW_ALGO_LIA)
PW_OPS(pw_olia, PW_ALGO_OLIA)
PW_OPS(pw_balia, PW_ALGO_BALIA)
PW_OPS(pw_coupled, PW_ALGO_COUPLED)
PW_OPS(pw_bmc, PW_ALGO_BMC)
PW_OPS(pw_kv, PW_ALGO_KV)
