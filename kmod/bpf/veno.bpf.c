// SPDX-License-Identifier: GPL-2.0
/*
 * veno.bpf.c - TCP Veno (Fu & Liew, "TCP Veno: TCP enhancement for
 * transmission over wireless access networks", IEEE JSAC 21(2), 2003) as a
 * BPF struct_ops port of the kernel's tcp_veno.
 *
 * Veno is Reno that uses a Vegas-style estimate of its own backlog in the
 * bottleneck queue, N = cwnd * (RTT - BaseRTT) / RTT, to tell congestion
 * losses (queue full) from random losses (queue nearly empty), and to grow
 * more gently once the queue builds. The estimate, kept as
 * diff = 2 * cwnd - 2 * cwnd * BaseRTT / RTT (fixed point, one fractional
 * bit) is compared with beta = 3 segments (6 in that fixed point):
 *
 *  - loss (ssthresh): diff < beta, a random loss: ssthresh =
 *    max(cwnd * 4 / 5, 2); else congestive: max(cwnd / 2, 2), as Reno;
 *  - congestion avoidance: diff < beta, Reno's one segment per cwnd ACKed;
 *    else one segment every other cwnd ACKed (alternate "rounds" of cwnd
 *    ACKs add one segment and nothing);
 *  - slow start is Reno's, and cwnd is kept within [2, snd_cwnd_clamp].
 *
 * As in the module, and not as a once-per-RTT decision: BaseRTT is the
 * smallest RTT ever measured (us, plus one), RTT the smallest sample since
 * the previous cong_avoid call (in practice the current ACK's sample, since
 * the minimum is reset on every call), and diff is recomputed on every
 * cwnd-limited ACK in the Open state once 3 samples have been taken. The
 * sample counter is 16 bits and, as in the module, never reset, so it wraps
 * every 65536 samples and Veno falls back to Reno for the next 3 ACKs.
 * Until its first 3 samples and outside the Open state it is Reno. An ACK
 * without an RTT sample leaves RTT at "none" (0x7fffffff), which makes that
 * ACK's diff about 2 * cwnd, i.e. congestive, as in the module. A restart
 * after idle forgets BaseRTT (and keeps the sample count). Undo is Reno's.
 *
 * The module has no parameters (beta is a constant); the map holds only
 * the counters.
 *
 * Differences from the module:
 *  - an in_ack_event callback, not in the module, that only runs the
 *    ssthresh guard (as scalable.bpf.c); the guard (ss_guard.h) may put
 *    back an ssthresh that no congestion control set.
 *
 * Build: make -C kmod bpf. Load: bpftool struct_ops register veno.bpf.o
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "port.h"

char _license[] SEC("license") = "GPL";

#define VENO_SHIFT	1			/* fixed point of diff: 1/2 segment */
#define VENO_BETA	(3U << VENO_SHIFT)	/* 3 segments of backlog */
#define VENO_RTT_NONE	0x7fffffffU		/* no RTT sample yet */

/* Map value: only the counters (port.h). */
struct veno_params {
	PORT_COUNTERS;
};
PORT_PARAM_MAP(veno_params, veno_params)

/* The module's struct veno, same fields and types, then the guard: 28 bytes
 * of icsk_ca_priv's 104.
 */
struct veno_ca {
	__u8 doing_veno_now;	/* 1: in Open, use the backlog estimate */
	__u16 cntrtt;		/* RTT samples taken (never reset) */
	__u32 minrtt;		/* smallest RTT since the last cong_avoid, us (+1) */
	__u32 basertt;		/* smallest RTT ever, us (+1) */
	__u32 inc;		/* congestive state: 1 = the next round adds one */
	__u32 diff;		/* backlog estimate, 1/2 segments */
	struct ss_guard guard;
};
_Static_assert(sizeof(struct veno_ca) <=
	       sizeof(((struct inet_connection_sock *)0)->icsk_ca_priv),
	       "struct veno_ca does not fit in icsk_ca_priv");

static __always_inline void veno_enable(struct veno_ca *ca)
{
	ca->doing_veno_now = 1;
	ca->minrtt = VENO_RTT_NONE;
}

static __always_inline void veno_start(struct veno_ca *ca)
{
	ca->basertt = VENO_RTT_NONE;
	ca->inc = 1;
	veno_enable(ca);
}

SEC("struct_ops/veno_init")
void BPF_PROG(veno_init, struct sock *sk)
{
	struct veno_ca *ca = PORT_CA(veno_ca, sk);

	PORT_START(&ca->guard, sk, veno_params_get());
	veno_start(ca);
}

/* The RTT filters: a minimum over the connection and one since the last ACK. */
SEC("struct_ops/veno_pkts_acked")
void BPF_PROG(veno_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct veno_ca *ca = PORT_CA(veno_ca, sk);
	__u32 vrtt;

	PORT_GUARD(&ca->guard, sk, veno_params_get());
	if (sample->rtt_us < 0)
		return;
	vrtt = (__u32)sample->rtt_us + 1;	/* never 0 */
	if (vrtt < ca->basertt)
		ca->basertt = vrtt;
	if (vrtt < ca->minrtt)
		ca->minrtt = vrtt;
	ca->cntrtt++;
}

SEC("struct_ops/veno_set_state")
void BPF_PROG(veno_set_state, struct sock *sk, __u8 new_state)
{
	struct veno_ca *ca = PORT_CA(veno_ca, sk);

	PORT_GUARD(&ca->guard, sk, veno_params_get());
	if (new_state == TCP_CA_Open)
		veno_enable(ca);
	else
		ca->doing_veno_now = 0;
}

/* Restart after idle: the samples are stale; start over. */
SEC("struct_ops/veno_cwnd_event")
void BPF_PROG(veno_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct veno_ca *ca = PORT_CA(veno_ca, sk);

	PORT_GUARD(&ca->guard, sk, veno_params_get());
	if (ev == CA_EVENT_CWND_RESTART || ev == CA_EVENT_TX_START)
		veno_start(ca);
}

SEC("struct_ops/veno_in_ack_event")
void BPF_PROG(veno_in_ack_event, struct sock *sk, __u32 flags)
{
	PORT_GUARD(&PORT_CA(veno_ca, sk)->guard, sk, veno_params_get());
}

/* Growth with a backlog estimate, on a cwnd-limited ACK in Open. */
static __always_inline void veno_grow(struct tcp_sock *tp, struct veno_ca *ca,
				      __u32 acked)
{
	__u32 rtt = ca->minrtt, cwnd = tp->snd_cwnd;
	__u64 target;

	/* the window the measured rate fills at BaseRTT, in 1/2 segments */
	target = ((__u64)cwnd * ca->basertt << VENO_SHIFT) / rtt;
	ca->diff = (cwnd << VENO_SHIFT) - (__u32)target;

	if (tcp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}

	if (ca->diff < VENO_BETA) {
		/* queue nearly empty: Reno, one segment per cwnd ACKed */
		tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked);
	} else if (tp->snd_cwnd_cnt >= tp->snd_cwnd) {
		/* queue building: every other round of cwnd ACKs adds one */
		if (ca->inc && tp->snd_cwnd < tp->snd_cwnd_clamp) {
			tp->snd_cwnd = tp->snd_cwnd + 1;
			ca->inc = 0;
		} else {
			ca->inc = 1;
		}
		tp->snd_cwnd_cnt = 0;
	} else {
		tp->snd_cwnd_cnt += acked;
	}
}

SEC("struct_ops/veno_cong_avoid")
void BPF_PROG(veno_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct veno_ca *ca = PORT_CA(veno_ca, sk);

	PORT_GUARD(&ca->guard, sk, veno_params_get());

	if (!ca->doing_veno_now) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	if (!tcp_is_cwnd_limited(sk))
		return;

	if (ca->cntrtt <= 2) {
		/* too few samples for an estimate: Reno */
		tcp_reno_cong_avoid(sk, ack, acked);
	} else {
		veno_grow(tp, ca, acked);
		if (tp->snd_cwnd < 2)
			tp->snd_cwnd = 2;
		else if (tp->snd_cwnd > tp->snd_cwnd_clamp)
			tp->snd_cwnd = tp->snd_cwnd_clamp;
	}
	/* the next ACK's RTT starts afresh (the sample count does not) */
	ca->minrtt = VENO_RTT_NONE;
}

/* The multiplicative decrease: 1/5 for a random loss, 1/2 for congestion. */
SEC("struct_ops/veno_ssthresh")
__u32 BPF_PROG(veno_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct veno_ca *ca = PORT_CA(veno_ca, sk);
	__u32 ss;

	PORT_GUARD(&ca->guard, sk, veno_params_get());
	if (ca->diff < VENO_BETA)
		ss = max(tp->snd_cwnd * 4 / 5, 2U);
	else
		ss = max(tp->snd_cwnd >> 1U, 2U);
	ca->guard.ss_last = ss;		/* the kernel stores what we return */
	return ss;
}

/* tcp_reno_undo_cwnd(), as the module uses */
SEC("struct_ops/veno_undo_cwnd")
__u32 BPF_PROG(veno_undo_cwnd, struct sock *sk)
{
	PORT_GUARD(&PORT_CA(veno_ca, sk)->guard, sk, veno_params_get());
	return reno_undo_cwnd(tcp_sk(sk));
}

SEC(".struct_ops")
struct tcp_congestion_ops PORT_OPS(veno) = {
	.init		= (void *)veno_init,
	.ssthresh	= (void *)veno_ssthresh,
	.undo_cwnd	= (void *)veno_undo_cwnd,
	.cong_avoid	= (void *)veno_cong_avoid,
	.pkts_acked	= (void *)veno_pkts_acked,
	.set_state	= (void *)veno_set_state,
	.cwnd_event	= (void *)veno_cwnd_event,
	.in_ack_event	= (void *)veno_in_ack_event,
	.name		= PORT_NAME(veno),
};
