// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * reno_ref.bpf.c — the kernel's own Reno behind a BPF struct_ops table, for measuring.
 *
 * The BPF run-time statistics (kernel.bpf_stats_enabled) time every call of a struct_ops
 * program, but not the kernel's built-in controllers. `pwref_reno` forwards ssthresh,
 * cong_avoid and undo_cwnd to the kernel's Reno functions (the kfuncs tcp_reno_ssthresh,
 * tcp_reno_cong_avoid and tcp_reno_undo_cwnd), so its cong_avoid time is kernel Reno's
 * increase plus the fixed cost of one timed struct_ops call. Its in_ack_event does nothing
 * and runs on every ACK: its time is that fixed cost alone (trampoline and the statistics'
 * two clock reads), which `make bench-kernel` subtracts from every controller's figure.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "Dual MIT/GPL";

#define TCP_CONG_NON_RESTRICTED 0x1

extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

SEC("struct_ops")
__u32 BPF_PROG(ref_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
void BPF_PROG(ref_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(ref_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC("struct_ops")
void BPF_PROG(ref_in_ack_event, struct sock *sk, __u32 flags)
{
}

SEC(".struct_ops.link")
struct tcp_congestion_ops pwref_reno = {
	.ssthresh = (void *)ref_ssthresh,
	.cong_avoid = (void *)ref_cong_avoid,
	.undo_cwnd = (void *)ref_undo_cwnd,
	.in_ack_event = (void *)ref_in_ack_event,
	.flags = TCP_CONG_NON_RESTRICTED,
	.name = "pwref_reno",
};
