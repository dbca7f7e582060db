// SPDX-License-Identifier: GPL-2.0
/*
 * reno_beta.bpf.c - NewReno with a tunable window reduction factor, as a BPF
 * struct_ops TCP congestion control (BPF twin of kmod/reno_beta.c).
 *
 * Slow start, congestion avoidance and undo are Linux's reno ones (the
 * kernel's own tcp_reno_cong_avoid is called as a kfunc). Only the
 * multiplicative decrease changes (seed 000, section V):
 *
 *     ssthresh = max(cwnd * (1000 - r) / 1000, 2)       r in per mille
 *
 * so r = 500 is standard Reno (cwnd / 2) and r = 900 cuts 90 % of cwnd.
 *
 * r lives in the one-entry ARRAY map `rbeta_params` (layout below), read at
 * every loss, so a change reaches established connections at their next
 * loss. 0 means the default (500); a non-zero value outside 1..999 is
 * ignored (default used) and flagged in `invalid`.
 *
 * Every callback runs the ssthresh guard of ss_guard.h first: on the 6.18
 * kernel used here, BPF congestion controls intermittently found
 * tp->snd_ssthresh overwritten with an unrelated value between two of their
 * callbacks; the guard restores the last plausible one and counts it in
 * `ss_repairs`.
 *
 * Build: make -C kmod bpf. Load: bpftool struct_ops register reno_beta.bpf.o
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "port.h"	/* tcp_sk, PORT_CA, Reno's kfuncs and undo, the guard */

char _license[] SEC("license") = "GPL";

#define RB_R_DEFAULT	500U	/* per mille: standard Reno halves cwnd */
#define RB_R_MIN	1U
#define RB_R_MAX	999U


/*
 * Map value, 24 bytes, all __u32, little endian. Byte offsets:
 *   0 r                  in   1..999 per mille, 0 = default 500
 *   4 r_in_use           out  r after validation
 *   8 backoff_permille   out  1000 - r_in_use (share of cwnd kept)
 *  12 invalid            out  1 if r was out of range
 *  16 conns              out  connections initialised (init callback count)
 *  20 ss_repairs         out  implausible ssthresh values undone
 */
struct rbeta_params {
	__u32 r;
	__u32 r_in_use;
	__u32 backoff_permille;
	__u32 invalid;
	__u32 conns;
	__u32 ss_repairs;
};

PORT_PARAM_MAP(rbeta_params, rbeta_params)	/* and rbeta_params_get() */

/* Per-connection state (icsk_ca_priv): only the guard's memory. */
struct rbeta_ca {
	struct ss_guard guard;	/* the ssthresh guard's state (ss_guard.h) */
};

#define RD32(x)		(*(volatile __u32 *)&(x))
#define WR_IF_CHANGED(field, val)				\
	do {							\
		if (RD32(p->field) != (val))			\
			RD32(p->field) = (val);			\
	} while (0)

/* Validated r (per mille); publishes what is in use back into the map. */
static __always_inline __u32 r_load(void)
{
	struct rbeta_params *p = rbeta_params_get();
	__u32 r = RB_R_DEFAULT, bad = 0, v;

	if (!p)
		return r;
	v = RD32(p->r);
	if (v >= RB_R_MIN && v <= RB_R_MAX)
		r = v;
	else if (v)
		bad = 1;
	WR_IF_CHANGED(r_in_use, r);
	WR_IF_CHANGED(backoff_permille, 1000 - r);
	WR_IF_CHANGED(invalid, bad);
	return r;
}

/* The ssthresh guard (ss_guard.h), counted in the parameter map. */
static __always_inline void ss_guard(struct sock *sk)
{
	PORT_GUARD_LAZY(&PORT_CA(rbeta_ca, sk)->guard, sk, rbeta_params_get());
}

SEC("struct_ops/rbeta_init")
void BPF_PROG(rbeta_init, struct sock *sk)
{
	struct rbeta_ca *ca = PORT_CA(rbeta_ca, sk);

	r_load();	/* publish the values in use for the loader to read */
	PORT_START(&ca->guard, sk, rbeta_params_get());
}

SEC("struct_ops/rbeta_ssthresh")
__u32 BPF_PROG(rbeta_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	__u64 ss;

	ss_guard(sk);
	ss = (__u64)tp->snd_cwnd * (1000 - r_load()) / 1000;
	if (ss < 2)
		ss = 2;
	PORT_CA(rbeta_ca, sk)->guard.ss_last = (__u32)ss;	/* the kernel stores what we return */
	return (__u32)ss;
}

SEC("struct_ops/rbeta_cong_avoid")
void BPF_PROG(rbeta_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	ss_guard(sk);
	tcp_reno_cong_avoid(sk, ack, acked);
}

/* Every ACK, before loss recovery runs: only hosts the guard. */
SEC("struct_ops/rbeta_in_ack_event")
void BPF_PROG(rbeta_in_ack_event, struct sock *sk, __u32 flags)
{
	ss_guard(sk);
}

/* tcp_reno_undo_cwnd(): back to the cwnd before the (spurious) reduction */
SEC("struct_ops/rbeta_undo_cwnd")
__u32 BPF_PROG(rbeta_undo_cwnd, struct sock *sk)
{
	ss_guard(sk);
	return reno_undo_cwnd(tcp_sk(sk));
}

SEC(".struct_ops")
struct tcp_congestion_ops reno_beta = {
	.init		= (void *)rbeta_init,
	.ssthresh	= (void *)rbeta_ssthresh,
	.cong_avoid	= (void *)rbeta_cong_avoid,
	.in_ack_event	= (void *)rbeta_in_ack_event,
	.undo_cwnd	= (void *)rbeta_undo_cwnd,
	.name		= "reno_beta",
};
