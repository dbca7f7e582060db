// SPDX-License-Identifier: GPL-2.0
/*
 * hybla.bpf.c - TCP Hybla (C. Caini, R. Firrincieli, "TCP Hybla: a TCP
 * enhancement for heterogeneous networks", International Journal of
 * Satellite Communications and Networking 22(5), 2004) as a BPF
 * struct_ops port of the kernel's tcp_hybla.
 *
 * Hybla makes a long-RTT flow grow as a flow with the reference RTT rtt0
 * would, per unit of time rather than per RTT. With rho = srtt / rtt0
 * (at least 1, kept in 1/8: rho_3ls = max(srtt_us / (rtt0 * 1000), 8),
 * where srtt_us is the kernel's smoothed RTT x8 in us), per ACK:
 *   slow start:           cwnd += 2^rho - 1
 *   congestion avoidance: cwnd += rho^2 / cwnd
 * in 1/128 of a segment: 2^rho is 2^int(rho) times a table of 2^(k/8)
 * (k = 0..7: 128 139 152 165 181 197 215 234), rho^2 is rho_3ls^2 * 2;
 * the fractions add up in snd_cwnd_cents, each 128 adding a segment. In
 * congestion avoidance an ACK whose increment is below one segment counts
 * in snd_cwnd_cnt, and when increments round to nothing at all, cwnd still
 * grows by one per cwnd such ACKs. Slow start does not overshoot ssthresh.
 * At init cwnd = int(rho) (from the handshake's RTT); rho is recomputed
 * whenever srtt falls below the lowest seen. Outside the Open state
 * (recovery, loss, CWR) the increase is Reno's. ssthresh and undo are
 * Reno's: a loss halves the window.
 *
 * Parameters (map hybla_params, the module's name and default):
 *   rtt0  25  ms: the reference RTT; 0 would divide by zero and is taken
 *             as 1
 *
 * Differences from the module: tcp_hybla's init sets snd_cwnd_clamp to
 * 65535, which a BPF program may not write; the port instead keeps cwnd at
 * most min(snd_cwnd_clamp, 65535) after each of its increases (Hybla's and
 * Reno's outside Open). So the 65535 limit holds for cong_avoid, as in
 * the module, but the kernel's own uses of the clamp still see the
 * socket's value: where a route or TCP_WINDOW_CLAMP had set a clamp below
 * 65535 the module would raise it and the port does not. The module's
 * transient cwnd = 2 at init (overwritten by rho before any use) is left
 * out. Per-connection state: 36 bytes (the module's 28 and the guard's 8).
 *
 * Build: make -C kmod bpf. Load: bpftool struct_ops register hybla.bpf.o
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "port.h"

char _license[] SEC("license") = "GPL";

#define HYBLA_CWND_CLAMP	65535U	/* the module's snd_cwnd_clamp */
#define HYBLA_UNIT		128U	/* increments are in 1/128 segment */

/* Map value: the module's parameter, then the counters (port.h). */
struct hybla_params {
	__u32 rtt0;
	PORT_COUNTERS;
};
PORT_PARAM_MAP(hybla_params, hybla_params)

/* rtt0 in ms; a divisor, so 0 is taken as 1 */
static __always_inline __u32 hybla_rtt0(const struct hybla_params *p)
{
	__u32 v = PORT_PARAM(p, rtt0, 25U);

	return v ? v : 1U;
}

/* Per-connection state: the module's, then the guard's. */
struct hybla_ca {
	bool hybla_en;		/* in Open state: Hybla's increase, else Reno's */
	__u32 snd_cwnd_cents;	/* fractions of a segment not yet added, 1/128 */
	__u32 rho;		/* rho, integer part */
	__u32 rho2;		/* rho^2, integer part */
	__u32 rho_3ls;		/* rho in 1/8 */
	__u32 rho2_7ls;		/* rho^2 in 1/128 */
	__u32 minrtt_us;	/* lowest srtt_us seen (x8, us) */
	struct ss_guard guard;
};
_Static_assert(sizeof(struct hybla_ca) <= 104, "icsk_ca_priv holds 104 bytes");

/*
 * 2^(k/8) in 1/128 for k = 0..7: 128 139 152 165 181 197 215 234, one per
 * byte from the lowest (a table in .rodata would do, but clang folds it
 * into a constant and leaves libbpf a .rodata section that is not there).
 */
#define HYBLA_POW2_EIGHTHS	0xEAD7C5B5A5988B80ULL

static __always_inline __u32 hybla_fraction(__u32 k)
{
	return k < 8 ? (__u32)(HYBLA_POW2_EIGHTHS >> (8 * k)) & 0xff : 128U;
}

/* rho from the current srtt */
static __always_inline void hybla_recalc_param(struct sock *sk,
					       struct hybla_ca *ca,
					       const struct hybla_params *p)
{
	__u64 ref = (__u64)hybla_rtt0(p) * USEC_PER_MSEC;

	ca->rho_3ls = max((__u32)(tcp_sk(sk)->srtt_us / ref), 8U);
	ca->rho = ca->rho_3ls >> 3;
	ca->rho2_7ls = (ca->rho_3ls * ca->rho_3ls) << 1;
	ca->rho2 = ca->rho2_7ls >> 7;
}

static __always_inline __u32 hybla_clamp(const struct tcp_sock *tp)
{
	return min(tp->snd_cwnd_clamp, HYBLA_CWND_CLAMP);
}

SEC("struct_ops/hybla_init")
void BPF_PROG(hybla_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct hybla_ca *ca = PORT_CA(hybla_ca, sk);
	struct hybla_params *p = hybla_params_get();

	PORT_START(&ca->guard, sk, p);
	ca->rho = 0;
	ca->rho2 = 0;
	ca->rho_3ls = 0;
	ca->rho2_7ls = 0;
	ca->snd_cwnd_cents = 0;
	ca->hybla_en = true;

	/* first rho, from the handshake's RTT */
	hybla_recalc_param(sk, ca, p);
	ca->minrtt_us = tp->srtt_us;
	tp->snd_cwnd = ca->rho;
}

/* Not in tcp_hybla: called on every ACK before loss recovery runs, it only
 * hosts the ssthresh guard.
 */
SEC("struct_ops/hybla_in_ack_event")
void BPF_PROG(hybla_in_ack_event, struct sock *sk, __u32 flags)
{
	PORT_GUARD(&PORT_CA(hybla_ca, sk)->guard, sk, hybla_params_get());
}

SEC("struct_ops/hybla_set_state")
void BPF_PROG(hybla_set_state, struct sock *sk, __u8 new_state)
{
	struct hybla_ca *ca = PORT_CA(hybla_ca, sk);

	PORT_GUARD(&ca->guard, sk, hybla_params_get());
	ca->hybla_en = new_state == TCP_CA_Open;
}

SEC("struct_ops/hybla_cong_avoid")
void BPF_PROG(hybla_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct hybla_ca *ca = PORT_CA(hybla_ca, sk);
	struct hybla_params *p = hybla_params_get();
	__u32 increment, odd, frac, whole;
	bool in_ss = false;

	PORT_GUARD(&ca->guard, sk, p);

	/* a new lowest srtt: recompute rho */
	if (tp->srtt_us < ca->minrtt_us) {
		hybla_recalc_param(sk, ca, p);
		ca->minrtt_us = tp->srtt_us;
	}

	if (!tcp_is_cwnd_limited(sk))
		return;

	if (!ca->hybla_en) {
		tcp_reno_cong_avoid(sk, ack, acked);
		if (tp->snd_cwnd > hybla_clamp(tp))
			tp->snd_cwnd = hybla_clamp(tp);
		return;
	}

	if (!ca->rho)
		hybla_recalc_param(sk, ca, p);

	frac = ca->rho_3ls - (ca->rho << 3);	/* eighths of rho, 0..7 */

	if (tcp_in_slow_start(tp)) {
		/* 2^rho - 1 segments, in 1/128 */
		in_ss = true;
		increment = (1U << min(ca->rho, 16U)) * hybla_fraction(frac) -
			    HYBLA_UNIT;
	} else {
		/* rho^2 / cwnd segments, in 1/128 */
		increment = ca->rho2_7ls / tp->snd_cwnd;
		if (increment < HYBLA_UNIT)
			tp->snd_cwnd_cnt++;
	}

	odd = increment % HYBLA_UNIT;
	tp->snd_cwnd += increment >> 7;
	ca->snd_cwnd_cents += odd;

	/* whole segments gathered from the fractions (the module loops) */
	whole = ca->snd_cwnd_cents / HYBLA_UNIT;
	if (whole) {
		tp->snd_cwnd += whole;
		ca->snd_cwnd_cents -= whole * HYBLA_UNIT;
		tp->snd_cwnd_cnt = 0;
	}

	/* increments too small to count at all: one segment per cwnd ACKs */
	if (!increment && !odd && tp->snd_cwnd_cnt >= tp->snd_cwnd) {
		tp->snd_cwnd++;
		tp->snd_cwnd_cnt = 0;
	}

	/* slow start stops at ssthresh */
	if (in_ss && tp->snd_cwnd > tp->snd_ssthresh)
		tp->snd_cwnd = tp->snd_ssthresh;

	if (tp->snd_cwnd > hybla_clamp(tp))
		tp->snd_cwnd = hybla_clamp(tp);
}

SEC("struct_ops/hybla_ssthresh")
__u32 BPF_PROG(hybla_ssthresh, struct sock *sk)
{
	struct hybla_ca *ca = PORT_CA(hybla_ca, sk);
	__u32 ss;

	PORT_GUARD(&ca->guard, sk, hybla_params_get());
	ss = reno_ssthresh(tcp_sk(sk));
	ca->guard.ss_last = ss;		/* the kernel stores what we return */
	return ss;
}

SEC("struct_ops/hybla_undo_cwnd")
__u32 BPF_PROG(hybla_undo_cwnd, struct sock *sk)
{
	PORT_GUARD(&PORT_CA(hybla_ca, sk)->guard, sk, hybla_params_get());
	return reno_undo_cwnd(tcp_sk(sk));
}

SEC(".struct_ops")
struct tcp_congestion_ops PORT_OPS(hybla) = {
	.init		= (void *)hybla_init,
	.ssthresh	= (void *)hybla_ssthresh,
	.cong_avoid	= (void *)hybla_cong_avoid,
	.set_state	= (void *)hybla_set_state,
	.in_ack_event	= (void *)hybla_in_ack_event,
	.undo_cwnd	= (void *)hybla_undo_cwnd,
	.name		= PORT_NAME(hybla),
};
