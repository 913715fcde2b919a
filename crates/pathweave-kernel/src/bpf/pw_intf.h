/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * pw_intf.h — the layout of the maps pathweave's BPF controllers share with userspace
 * (src/maps.rs mirrors it; a test checks the sizes against the loaded maps).
 *
 * pw_conns: one entry per MPTCP connection that has at least one subflow on a pw_* controller,
 * keyed by the address of the connection's socket (mptcp_subflow_context.conn), updated under
 * the entry's spin lock. A subflow registers in its controller's init (or, if the connection
 * is not known yet, in its first later callback), takes a slot, and records the key and slot
 * in its own congestion-control area (icsk_ca_priv); release reads them back from there, so
 * it never has to walk icsk_ulp_data of a socket being destroyed. The last subflow to leave
 * deletes the entry; so does the connection's own close (pw_closed), which also reclaims the
 * entry of a connection one of whose subflows the kernel freed without calling release.
 */
#ifndef PW_INTF_H
#define PW_INTF_H

#define PW_VERSION 7

/* Algorithm ids, stored in each connection entry. */
#define PW_ALGO_LIA 1
#define PW_ALGO_OLIA 2
#define PW_ALGO_BALIA 3
#define PW_ALGO_COUPLED 4
#define PW_ALGO_BMC 5
#define PW_ALGO_KV 6

/* pw_slot.flags */
#define PW_SLOT_USED 1
#define PW_SLOT_CAN_SEND 2
#define PW_SLOT_RECOVERY 4

#define PW_CONNS_MAX 8192

/* One subflow as its siblings see it: written by the subflow at each of its events. */
struct pw_slot {
	__u64 loss_interval; /* OLIA's ℓ, bytes */
	__u64 acked_bytes;   /* bytes acknowledged since the subflow joined (BMC's T_J) */
	__u32 cwnd;          /* packets */
	__u32 ssthresh;      /* packets */
	__u32 srtt_us;       /* 8 × smoothed RTT in µs */
	__u32 mss;
	__u32 losses;        /* congestion events: fast recoveries, CWRs and timeouts */
	__u32 flags;         /* PW_SLOT_* */
	__u32 saddr;         /* local IPv4 address, network byte order (which path); set */
	__u32 sport;         /* local port, host byte order;          when the slot is taken */
};

struct pw_conn {
	struct bpf_spin_lock lock;
	__u32 algo;     /* PW_ALGO_* of the first subflow; others must match to take part */
	__u32 subflows; /* registered subflows: cnt_established for OLIA */
	__u32 used;     /* bit i set: slot i in use */
	__u32 forced;   /* LIA: recompute α on the next congestion-avoidance ACK */
	__u32 token;    /* the connection's MPTCP token: tells an address reused by a new
			 * connection from the entry an earlier one left at it */
	__u64 alpha;    /* LIA's cached fixed-point α */
	__u64 id;       /* connection number, the key of pw_bmc_weights */
	struct pw_slot slot[8];
};

/* BMC weights per connection, written by the userspace proportion manager. */
struct pw_weights {
	__u32 weight[8]; /* D per slot, 2^16 = 1; 0 = equal share */
};

/* Counters in pw_stats (array indices). */
enum pw_stat {
	PW_STAT_INIT = 0,         /* init calls */
	PW_STAT_RELEASE,          /* release calls */
	PW_STAT_REGISTERED,       /* subflows that took a slot */
	PW_STAT_UNREGISTERED,     /* subflows that gave their slot back */
	PW_STAT_CONN_CREATED,     /* connection entries created */
	PW_STAT_CONN_DELETED,     /* connection entries deleted by their last subflow */
	PW_STAT_PLAIN_TCP,        /* sockets that are not MPTCP subflows: Reno */
	PW_STAT_NO_CONN_YET,      /* callbacks of a subflow whose connection was not set yet */
	PW_STAT_SLOTS_FULL,       /* subflows beyond PW_MAX_PATHS: Reno */
	PW_STAT_ALGO_MISMATCH,    /* subflows on another pw_* than their connection: Reno */
	PW_STAT_CONN_MISSING,     /* registered subflows that found their entry reclaimed */
	PW_STAT_MAP_FULL,         /* pw_conns full: Reno */
	PW_STAT_RELEASE_ULP_GONE, /* release saw icsk_ulp_data already cleared */
	PW_STAT_NEXT_ID,          /* connection numbers handed out */
	PW_STAT_VERSION,          /* PW_VERSION, written by the loader */
	PW_STAT_LISTENER_CONN,    /* callbacks while the subflow's connection was a listener */
	PW_STAT_REKEYED,          /* subflows whose connection changed after they registered */
	PW_STAT_REINIT,           /* init of a socket still registered (no release between) */
	PW_STAT_INIT_CLOSED,      /* init of a socket already closed: never registered */
	PW_STAT_CONN_GONE,        /* subflows whose connection had closed or gone: Reno */
	PW_STAT_STALE,            /* entries an earlier connection left at a reused address */
	PW_STAT_RECLAIMED,        /* entries removed because their connection closed */
	PW_STAT_RECLAIMED_SUBFLOWS, /* subflows still registered in those two kinds of entry */
	PW_STAT_NOT_CWND_LIMITED, /* cong_avoid calls that found the window not in use */
	PW_STAT_COUNT
};

#endif /* PW_INTF_H */
