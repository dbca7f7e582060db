// SPDX-License-Identifier: GPL-2.0
/*
 * htcp.bpf.c - H-TCP (Leith and Shorten, "H-TCP: TCP for high-speed and
 * long-distance networks", PFLDnet 2004) as a BPF struct_ops port of the
 * kernel's tcp_htcp.
 *
 * Slow start is Reno's. Above ssthresh the window grows by alpha / cwnd
 * per ACKed segment, where alpha grows with the time D since the last
 * congestion event (the end of the last CWR, Recovery or Loss episode):
 *
 *     f(D) = 1                                      D <= 1 s
 *     f(D) = 1 + 10 (D - 1) + ((D - 1) / 2)^2       D >  1 s   (D in s)
 *     alpha = 2 f(D) (1 - beta)
 *
 * in the kernel's integers: D in jiffies, the quadratic term as
 * (d/2)^2 / HZ, the whole divided by HZ and truncated, alpha in 1/128. The
 * 2 (1 - beta) keeps the mean throughput of H-TCP flows that share a
 * bottleneck with different beta fair. alpha is recomputed each time cwnd
 * grows by one segment, and at each loss.
 *
 * At a loss ssthresh = max(cwnd * beta, 2), beta = minRTT / maxRTT clamped
 * to [0.5, 0.8] (1/128 units: 64 .. 102), which drains the queue the flow
 * built up and no more. beta is 0.5 for the first loss after a mode switch,
 * and whenever the bandwidth switch fires (below). maxRTT tracks the largest
 * RTT seen in the Open state (in jumps of at most 20 ms) and fades by 5 % of
 * its excess over minRTT at each loss.
 *
 * Parameters (map htcp_params, the module's module_param()s, both 0644 in
 * the module, so a change reaches established connections at their next
 * ACK or loss here as there):
 *
 *   use_rtt_scaling       default 1, 0 = off, any other value = on.
 *                         On: f(D) is multiplied by minRTT / 100 ms, kept
 *                         within [0.1, 2] (the module computes 100 ms /
 *                         minRTT in 1/8 units, clamps it to 4 .. 80 and
 *                         divides by it, truncating, never below 1), so
 *                         that flows of different RTT grow alike in
 *                         segments per second.
 *   use_bandwidth_switch  default 1, 0 = off, any other value = on.
 *                         On: the achieved throughput is estimated once per
 *                         RTT (smoothed 3/4 old + 1/4 new); at a loss, if
 *                         the largest estimate since the last loss differs
 *                         from the previous one by more than 20 %, beta
 *                         falls back to 0.5 and the adaptive beta waits one
 *                         more loss (the path has changed).
 *
 * Both are flags with no arithmetic on their value: no clamp is needed.
 * Every divisor of the module (minRTT, maxRTT, now - lasttime, cwnd) is
 * already guarded by the module's own conditions, which are kept.
 *
 * Callbacks: init, ssthresh, cong_avoid, set_state, undo_cwnd, pkts_acked,
 * as the module; plus in_ack_event, not in the module, which only hosts the
 * ssthresh guard (ss_guard.h). The module has no get_info.
 *
 * Differences from the module: none in the arithmetic. The clock is
 * bpf_jiffies64() truncated to 32 bits where the module mixes jiffies and
 * tcp_jiffies32 (the same counter). The ssthresh guard of ss_guard.h may
 * put back an ssthresh that something outside the algorithm overwrote;
 * such repairs are counted in ss_repairs.
 *
 * Build: make -C kmod bpf. Load: bpftool struct_ops register htcp.bpf.o
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "port.h"

char _license[] SEC("license") = "GPL";

/* Fixed point: alpha and beta in 1/128 (shift 7). */
#define HTCP_SHIFT		7
#define HTCP_ONE		(1U << HTCP_SHIFT)	/* 1.0 */
#define HTCP_ALPHA_BASE		HTCP_ONE		/* alpha 1.0: Reno */
#define HTCP_BETA_MIN		(HTCP_ONE / 2)		/* beta 0.5 */
#define HTCP_BETA_MAX		102U			/* beta ~0.8 */

#define HTCP_MAXRTT_STEP_MS	20U	/* maxRTT may grow by this much at once */
#define HTCP_MODESWITCH_RTT_MS	10U	/* adaptive beta only above this minRTT */

/* The ACK-processing states the throughput estimate runs in. */
#define CA_STATE_BIT(s)		(1U << (s))

struct htcp_params {
	__u32 use_rtt_scaling;		/* flag, default 1 */
	__u32 use_bandwidth_switch;	/* flag, default 1 */
	PORT_COUNTERS;
};
PORT_PARAM_MAP(htcp_params, htcp_params)

#define HTCP_USE_RTT_SCALING_DFLT	1U
#define HTCP_USE_BW_SWITCH_DFLT		1U

/*
 * Per-connection state, 64 bytes of icsk_ca_priv. The field widths are the
 * module's: beta is 8 bits and pkts_acked 16 bits, and the port truncates
 * into them exactly where the module does.
 */
struct htcp_ca {
	__u32 alpha;		/* additive increase, 1/128 */
	__u8 beta;		/* multiplicative decrease factor, 1/128 */
	__u8 modeswitch;	/* adaptive beta allowed at the next loss */
	__u16 pkts_acked;	/* segments ACKed by the last ACK (Open) */
	__u32 packetcount;	/* segments ACKed in this throughput sample */
	__u32 minRTT;		/* jiffies; 0 until the first sample */
	__u32 maxRTT;		/* jiffies */
	__u32 last_cong;	/* jiffies at the end of the last congestion */
	__u32 undo_last_cong;	/* last_cong before the episode, for undo */
	__u32 undo_maxRTT;
	__u32 undo_old_maxB;
	__u32 minB;		/* throughput estimates, segments per second */
	__u32 maxB;
	__u32 old_maxB;		/* maxB at the previous loss */
	__u32 Bi;		/* smoothed throughput */
	__u32 lasttime;		/* jiffies at the start of this sample */
	struct ss_guard guard;
};

/* Time since the last congestion event, in jiffies. */
static __always_inline __u32 htcp_since_cong(const struct htcp_ca *ca)
{
	return tcp_jiffies32 - ca->last_cong;
}

/* Wrap-safe "lo <= x <= hi" for 32-bit values, as the kernel's between(). */
static __always_inline bool htcp_in_range(__u32 x, __u32 lo, __u32 hi)
{
	return hi - lo >= x - lo;
}

/* A congestion episode starts: remember what undo would need. */
static __always_inline void htcp_episode_start(struct htcp_ca *ca)
{
	ca->undo_last_cong = ca->last_cong;
	ca->undo_maxRTT = ca->maxRTT;
	ca->undo_old_maxB = ca->old_maxB;
	ca->last_cong = tcp_jiffies32;
}

/* alpha from the time since the last loss (and minRTT when scaling). */
static __always_inline void htcp_alpha_update(struct htcp_ca *ca,
					      struct htcp_params *p)
{
	__u32 min_rtt = ca->minRTT;
	__u32 d = htcp_since_cong(ca);
	__u32 f = 1;

	if (d > HZ) {
		__u32 half;

		d -= HZ;
		half = d / 2;
		f = 1 + (10 * d + half * half / HZ) / HZ;
	}

	if (PORT_PARAM(p, use_rtt_scaling, HTCP_USE_RTT_SCALING_DFLT) && min_rtt) {
		/* (100 ms / minRTT) in 1/8, kept within [0.5, 10] */
		__u32 scale = (HZ << 3) / (10 * min_rtt);

		scale = min(max(scale, 1U << 2), 10U << 3);
		f = (f << 3) / scale;
		if (!f)
			f = 1;
	}

	ca->alpha = 2 * f * (HTCP_ONE - ca->beta);
	if (!ca->alpha)
		ca->alpha = HTCP_ALPHA_BASE;
}

/* beta from minRTT / maxRTT, unless the bandwidth switch says the path changed. */
static __always_inline void htcp_beta_update(struct htcp_ca *ca,
					     struct htcp_params *p,
					     __u32 min_rtt, __u32 max_rtt)
{
	if (PORT_PARAM(p, use_bandwidth_switch, HTCP_USE_BW_SWITCH_DFLT)) {
		__u32 max_b = ca->maxB, old = ca->old_maxB;

		ca->old_maxB = ca->maxB;
		/* maxB within 0.8 .. 1.2 of old_maxB, in the module's terms */
		if (!htcp_in_range(5 * max_b, 4 * old, 6 * old)) {
			ca->beta = HTCP_BETA_MIN;
			ca->modeswitch = 0;
			return;
		}
	}

	if (ca->modeswitch && min_rtt > msecs_to_jiffies(HTCP_MODESWITCH_RTT_MS) &&
	    max_rtt) {
		ca->beta = (__u8)((min_rtt << HTCP_SHIFT) / max_rtt);
		if (ca->beta < HTCP_BETA_MIN)
			ca->beta = HTCP_BETA_MIN;
		else if (ca->beta > HTCP_BETA_MAX)
			ca->beta = HTCP_BETA_MAX;
	} else {
		ca->beta = HTCP_BETA_MIN;
		ca->modeswitch = 1;
	}
}

SEC("struct_ops/htcp_init")
void BPF_PROG(htcp_init, struct sock *sk)
{
	struct htcp_ca *ca = PORT_CA(htcp_ca, sk);

	ca->alpha = HTCP_ALPHA_BASE;
	ca->beta = HTCP_BETA_MIN;
	ca->modeswitch = 0;
	ca->pkts_acked = 1;
	ca->packetcount = 0;
	ca->minRTT = 0;
	ca->maxRTT = 0;
	ca->last_cong = tcp_jiffies32;
	ca->undo_last_cong = 0;
	ca->undo_maxRTT = 0;
	ca->undo_old_maxB = 0;
	ca->minB = 0;
	ca->maxB = 0;
	ca->old_maxB = 0;
	ca->Bi = 0;
	ca->lasttime = 0;
	PORT_START(&ca->guard, sk, htcp_params_get());
}

SEC("struct_ops/htcp_in_ack_event")
void BPF_PROG(htcp_in_ack_event, struct sock *sk, __u32 flags)
{
	PORT_GUARD(&PORT_CA(htcp_ca, sk)->guard, sk, htcp_params_get());
}

/* Per-ACK RTT and throughput measurement. */
SEC("struct_ops/htcp_pkts_acked")
void BPF_PROG(htcp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	const struct inet_connection_sock *icsk = inet_csk(sk);
	const struct tcp_sock *tp = tcp_sk(sk);
	struct htcp_ca *ca = PORT_CA(htcp_ca, sk);
	struct htcp_params *p = htcp_params_get();
	__u32 state = BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);
	__u32 now = tcp_jiffies32;
	__u32 acked = sample->pkts_acked;
	__s32 rtt_us = sample->rtt_us;

	PORT_GUARD(&ca->guard, sk, p);

	if (state == TCP_CA_Open)
		ca->pkts_acked = (__u16)acked;

	if (rtt_us > 0) {
		__u32 rtt = usecs_to_jiffies((__u32)rtt_us);

		if (!ca->minRTT || ca->minRTT > rtt)
			ca->minRTT = rtt;
		/* maxRTT only from the Open state, and only in small steps */
		if (state == TCP_CA_Open) {
			if (ca->maxRTT < ca->minRTT)
				ca->maxRTT = ca->minRTT;
			if (ca->maxRTT < rtt &&
			    rtt <= ca->maxRTT + msecs_to_jiffies(HTCP_MAXRTT_STEP_MS))
				ca->maxRTT = rtt;
		}
	}

	if (!PORT_PARAM(p, use_bandwidth_switch, HTCP_USE_BW_SWITCH_DFLT))
		return;

	/* throughput is sampled only while nothing is being recovered */
	if (!(CA_STATE_BIT(state & 31) &
	      (CA_STATE_BIT(TCP_CA_Open) | CA_STATE_BIT(TCP_CA_Disorder)))) {
		ca->packetcount = 0;
		ca->lasttime = now;
		return;
	}

	ca->packetcount += acked;

	/* one sample per RTT, once about a window has been ACKed */
	if (ca->packetcount >= tp->snd_cwnd - ((ca->alpha >> HTCP_SHIFT) ?: 1) &&
	    now - ca->lasttime >= ca->minRTT && ca->minRTT > 0) {
		__u32 cur = ca->packetcount * HZ / (now - ca->lasttime);

		if (htcp_since_cong(ca) / ca->minRTT <= 3) {
			/* within 3 RTTs of a loss: start afresh */
			ca->minB = ca->maxB = ca->Bi = cur;
		} else {
			ca->Bi = (3 * ca->Bi + cur) / 4;
			if (ca->Bi > ca->maxB)
				ca->maxB = ca->Bi;
			if (ca->minB > ca->maxB)
				ca->minB = ca->maxB;
		}
		ca->packetcount = 0;
		ca->lasttime = now;
	}
}

SEC("struct_ops/htcp_cong_avoid")
void BPF_PROG(htcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct htcp_ca *ca = PORT_CA(htcp_ca, sk);
	struct htcp_params *p = htcp_params_get();

	PORT_GUARD(&ca->guard, sk, p);
	if (!tcp_is_cwnd_limited(sk))
		return;

	if (tcp_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);	/* the rest of the ACK is dropped, as in the module */
		return;
	}

	/* cwnd += alpha / cwnd per segment, counted in snd_cwnd_cnt */
	if ((tp->snd_cwnd_cnt * ca->alpha) >> HTCP_SHIFT >= tp->snd_cwnd) {
		if (tp->snd_cwnd < tp->snd_cwnd_clamp)
			tp->snd_cwnd = tp->snd_cwnd + 1;
		tp->snd_cwnd_cnt = 0;
		htcp_alpha_update(ca, p);
	} else {
		tp->snd_cwnd_cnt += ca->pkts_acked;
	}
	ca->pkts_acked = 1;
}

SEC("struct_ops/htcp_ssthresh")
__u32 BPF_PROG(htcp_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct htcp_ca *ca = PORT_CA(htcp_ca, sk);
	struct htcp_params *p = htcp_params_get();
	__u32 min_rtt, max_rtt, ss;

	PORT_GUARD(&ca->guard, sk, p);

	min_rtt = ca->minRTT;
	max_rtt = ca->maxRTT;
	htcp_beta_update(ca, p, min_rtt, max_rtt);
	htcp_alpha_update(ca, p);
	/* let maxRTT forget 5 % of its excess, for route changes */
	if (min_rtt > 0 && max_rtt > min_rtt)
		ca->maxRTT = min_rtt + (max_rtt - min_rtt) * 95 / 100;

	ss = max((tp->snd_cwnd * ca->beta) >> HTCP_SHIFT, 2U);
	ca->guard.ss_last = ss;		/* the kernel stores what we return */
	return ss;
}

SEC("struct_ops/htcp_set_state")
void BPF_PROG(htcp_set_state, struct sock *sk, __u8 new_state)
{
	struct htcp_ca *ca = PORT_CA(htcp_ca, sk);

	PORT_GUARD(&ca->guard, sk, htcp_params_get());
	switch (new_state) {
	case TCP_CA_Open:
		/* an episode that was not undone ends now */
		if (ca->undo_last_cong) {
			ca->last_cong = tcp_jiffies32;
			ca->undo_last_cong = 0;
		}
		break;
	case TCP_CA_CWR:
	case TCP_CA_Recovery:
	case TCP_CA_Loss:
		htcp_episode_start(ca);
		break;
	default:
		break;
	}
}

SEC("struct_ops/htcp_undo_cwnd")
__u32 BPF_PROG(htcp_undo_cwnd, struct sock *sk)
{
	struct htcp_ca *ca = PORT_CA(htcp_ca, sk);

	PORT_GUARD(&ca->guard, sk, htcp_params_get());
	/* the loss was spurious: the time since congestion runs on */
	if (ca->undo_last_cong) {
		ca->last_cong = ca->undo_last_cong;
		ca->maxRTT = ca->undo_maxRTT;
		ca->old_maxB = ca->undo_old_maxB;
		ca->undo_last_cong = 0;
	}
	return reno_undo_cwnd(tcp_sk(sk));
}

SEC(".struct_ops")
struct tcp_congestion_ops PORT_OPS(htcp) = {
	.init		= (void *)htcp_init,
	.ssthresh	= (void *)htcp_ssthresh,
	.cong_avoid	= (void *)htcp_cong_avoid,
	.set_state	= (void *)htcp_set_state,
	.undo_cwnd	= (void *)htcp_undo_cwnd,
	.pkts_acked	= (void *)htcp_pkts_acked,
	.in_ack_event	= (void *)htcp_in_ack_event,
	.name		= PORT_NAME(htcp),
};
