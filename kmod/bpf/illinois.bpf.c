// SPDX-License-Identifier: GPL-2.0
/*
 * illinois.bpf.c - TCP-Illinois (Liu, Basar and Srikant, "TCP-Illinois: a
 * loss- and delay-based congestion control algorithm for high-speed
 * networks", VALUETOOLS 2006 / Performance Evaluation 65(6-7), 2008) as a
 * BPF struct_ops port of the kernel's tcp_illinois.
 *
 * Loss decides the direction of the window, queueing delay its pace. Once
 * per RTT (when an ACK passes the snd_nxt recorded a round earlier) the
 * port computes, from the RTT samples of that round,
 *
 *     da = average RTT - base RTT   (average queueing delay)
 *     dm = max RTT - base RTT       (largest queueing delay seen)
 *
 * (base and max over the whole connection, in us), and from them
 *
 *   alpha, the increase per RTT (1/128 units): 10 while da <= dm / 100;
 *     above that the convex curve k1 / (k2 + da) of the paper, from 10 at
 *     d1 = dm / 100 down to 0.3 at dm. After the delay has been high,
 *     alpha stays where it was until theta rounds in a row have had
 *     da <= d1, so one quiet RTT does not jump the increase back to 10;
 *   beta, the decrease at a loss (1/64 units): 1/8 while da <= dm / 10,
 *     1/2 from da >= 8 dm / 10, linear in between.
 *
 * Below win_thresh segments both are Reno's (alpha 1, beta 1/2). Slow start
 * is Reno's; above ssthresh cwnd += alpha / cwnd per ACKed segment; at a
 * loss ssthresh = max(cwnd - cwnd * beta, 2). An RTO (the Loss state)
 * resets alpha and beta to Reno's. Undo is Reno's.
 *
 * Parameters (map illinois_params, the module's module_param()s in its
 * order; both are read-only (0) in the module, fixed at load, while here
 * a change reaches established connections at their next ACK):
 *
 *   win_thresh  default 15 segments: below this cwnd, alpha = 1 and
 *               beta = 1/2 (Reno). Compared as the module does, unsigned.
 *   theta       default 5 rounds: how many consecutive low-delay RTTs
 *               bring alpha back to its maximum after the delay was high.
 *               Compared as the module does, as a signed int against an
 *               8-bit counter: theta <= 1 means at once, theta >= 256
 *               never.
 *
 * Neither is a divisor, a shift count or a loop bound, so no value can
 * break the arithmetic or the verifier: both are used as given, with the
 * module's exact meaning for every value, and need no clamp.
 *
 * The module has no parameter rtt_precision (kmod/loader.py lists one):
 * its only module_param()s are win_thresh and theta; the map has just
 * those.
 *
 * Callbacks: init, ssthresh, cong_avoid, set_state, undo_cwnd, pkts_acked,
 * as the module; plus in_ack_event, not in the module, which only hosts the
 * ssthresh guard (ss_guard.h). get_info (the module reports the round's
 * RTT count, base RTT and average RTT over inet_diag as vegas info) is
 * left out: BPF congestion controls cannot provide it.
 *
 * Differences from the module: none in the arithmetic (the same 1/128 and
 * 1/64 scaling, the same truncating integer divisions, the same 16- and
 * 8-bit counters). The ssthresh guard of ss_guard.h may put back an
 * ssthresh that something outside the algorithm overwrote; such repairs
 * are counted in ss_repairs.
 *
 * Build: make -C kmod bpf. Load: bpftool struct_ops register illinois.bpf.o
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "port.h"

char _license[] SEC("license") = "GPL";

/* alpha in 1/128 */
#define IL_ALPHA_SHIFT		7
#define IL_ALPHA_ONE		(1U << IL_ALPHA_SHIFT)
#define IL_ALPHA_MIN		((3 * IL_ALPHA_ONE) / 10)	/* 0.3 (38/128) */
#define IL_ALPHA_MAX		(10 * IL_ALPHA_ONE)		/* 10.0 */
#define IL_ALPHA_BASE		IL_ALPHA_ONE			/* 1.0, Reno */
/* RTT samples are capped so that dm * IL_ALPHA_MAX fits 32 bits (~3.3 s) */
#define IL_RTT_MAX		(0xffffffffU / IL_ALPHA_MAX)

/* beta in 1/64 */
#define IL_BETA_SHIFT		6
#define IL_BETA_ONE		(1U << IL_BETA_SHIFT)
#define IL_BETA_MIN		(IL_BETA_ONE / 8)		/* 1/8 */
#define IL_BETA_MAX		(IL_BETA_ONE / 2)		/* 1/2 */
#define IL_BETA_BASE		IL_BETA_MAX			/* Reno */

#define IL_BASE_RTT_INIT	0x7fffffffU

struct illinois_params {
	__u32 win_thresh;	/* segments, default 15 */
	__u32 theta;		/* rounds, default 5 */
	PORT_COUNTERS;
};
PORT_PARAM_MAP(illinois_params, illinois_params)

#define IL_WIN_THRESH_DFLT	15U
#define IL_THETA_DFLT		5U

/* Per-connection state, 48 bytes of icsk_ca_priv; the module's widths. */
struct illinois_ca {
	__u64 sum_rtt;		/* sum of this round's RTT samples, us */
	__u16 cnt_rtt;		/* number of this round's samples */
	__u32 base_rtt;		/* smallest RTT seen, us */
	__u32 max_rtt;		/* largest RTT seen, us */
	__u32 end_seq;		/* snd_nxt when the round began */
	__u32 alpha;		/* additive increase, 1/128 */
	__u32 beta;		/* multiplicative decrease, 1/64 */
	__u16 acked;		/* segments ACKed by the last ACK */
	__u8 rtt_above;		/* delay has been above d1 */
	__u8 rtt_low;		/* consecutive rounds back below d1 */
	struct ss_guard guard;
};

/* A new round: its end, and an empty sample set. */
static __always_inline void il_round_start(const struct sock *sk,
					   struct illinois_ca *ca)
{
	ca->end_seq = tcp_sk(sk)->snd_nxt;
	ca->cnt_rtt = 0;
	ca->sum_rtt = 0;
}

/* alpha from the average and maximum queueing delay (us). */
static __always_inline __u32 il_alpha(struct illinois_ca *ca, __u32 da,
				      __u32 dm, __s32 theta)
{
	__u32 d1 = dm / 100;

	if (da <= d1) {
		if (!ca->rtt_above)
			return IL_ALPHA_MAX;
		/* back to the maximum only after theta quiet rounds */
		ca->rtt_low++;
		if ((__s32)ca->rtt_low < theta)
			return ca->alpha;
		ca->rtt_low = 0;
		ca->rtt_above = 0;
		return IL_ALPHA_MAX;
	}

	ca->rtt_above = 1;
	/*
	 * alpha = k1 / (k2 + da) through (d1, amax) and (dm, amin); with
	 * both delays measured from d1 this is
	 *     amax * dm / (dm + da * (amax - amin) / amin).
	 */
	dm -= d1;
	da -= d1;
	return (dm * IL_ALPHA_MAX) /
	       (dm + (da * (IL_ALPHA_MAX - IL_ALPHA_MIN)) / IL_ALPHA_MIN);
}

/* beta: bmin up to d2 = dm/10, bmax from d3 = 8 dm/10, a line between. */
static __always_inline __u32 il_beta(__u32 da, __u32 dm)
{
	__u32 d2 = dm / 10, d3;

	if (da <= d2)
		return IL_BETA_MIN;
	d3 = (8 * dm) / 10;
	if (da >= d3 || d3 <= d2)
		return IL_BETA_MAX;
	/* (bmin d3 - bmax d2 + (bmax - bmin) da) / (d3 - d2), modulo 2^32
	 * in the intermediate terms exactly as in 32-bit C
	 */
	return (IL_BETA_MIN * d3 - IL_BETA_MAX * d2 + (IL_BETA_MAX - IL_BETA_MIN) * da) /
	       (d3 - d2);
}

/* Once per round: new alpha and beta, then a new round. */
static __always_inline void il_round_end(const struct sock *sk,
					 struct illinois_ca *ca,
					 struct illinois_params *p)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (tp->snd_cwnd < PORT_PARAM(p, win_thresh, IL_WIN_THRESH_DFLT)) {
		ca->alpha = IL_ALPHA_BASE;
		ca->beta = IL_BETA_BASE;
	} else if (ca->cnt_rtt > 0) {
		__u32 dm = ca->max_rtt - ca->base_rtt;
		__u32 da = (__u32)(ca->sum_rtt / ca->cnt_rtt) - ca->base_rtt;
		__s32 theta = (__s32)PORT_PARAM(p, theta, IL_THETA_DFLT);

		ca->alpha = il_alpha(ca, da, dm, theta);
		ca->beta = il_beta(da, dm);
	}
	il_round_start(sk, ca);
}

SEC("struct_ops/illinois_init")
void BPF_PROG(illinois_init, struct sock *sk)
{
	struct illinois_ca *ca = PORT_CA(illinois_ca, sk);

	ca->alpha = IL_ALPHA_MAX;
	ca->beta = IL_BETA_BASE;
	ca->base_rtt = IL_BASE_RTT_INIT;
	ca->max_rtt = 0;
	ca->acked = 0;
	ca->rtt_low = 0;
	ca->rtt_above = 0;
	il_round_start(sk, ca);
	PORT_START(&ca->guard, sk, illinois_params_get());
}

SEC("struct_ops/illinois_in_ack_event")
void BPF_PROG(illinois_in_ack_event, struct sock *sk, __u32 flags)
{
	PORT_GUARD(&PORT_CA(illinois_ca, sk)->guard, sk, illinois_params_get());
}

/* Every ACK: how many segments it covered, and its RTT sample. */
SEC("struct_ops/illinois_pkts_acked")
void BPF_PROG(illinois_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct illinois_ca *ca = PORT_CA(illinois_ca, sk);
	__s32 rtt_us = sample->rtt_us;
	__u32 rtt;

	PORT_GUARD(&ca->guard, sk, illinois_params_get());

	ca->acked = (__u16)sample->pkts_acked;
	if (rtt_us < 0)		/* no RTT sample with this ACK */
		return;

	rtt = (__u32)rtt_us;
	if (rtt > IL_RTT_MAX)
		rtt = IL_RTT_MAX;
	if (ca->base_rtt > rtt)
		ca->base_rtt = rtt;
	if (ca->max_rtt < rtt)
		ca->max_rtt = rtt;
	ca->cnt_rtt++;
	ca->sum_rtt += rtt;
}

SEC("struct_ops/illinois_cong_avoid")
void BPF_PROG(illinois_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct illinois_ca *ca = PORT_CA(illinois_ca, sk);
	struct illinois_params *p = illinois_params_get();
	__u32 delta;

	PORT_GUARD(&ca->guard, sk, p);

	if (after(ack, ca->end_seq))
		il_round_end(sk, ca, p);

	if (!tcp_is_cwnd_limited(sk))
		return;

	if (tcp_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);	/* the rest of the ACK is dropped, as in the module */
		return;
	}

	/* cwnd += alpha / cwnd per segment: whole segments once the count allows */
	tp->snd_cwnd_cnt += ca->acked;
	ca->acked = 1;
	delta = (tp->snd_cwnd_cnt * ca->alpha) >> IL_ALPHA_SHIFT;
	if (delta >= tp->snd_cwnd) {
		tp->snd_cwnd = min(tp->snd_cwnd + delta / tp->snd_cwnd,
				   (__u32)tp->snd_cwnd_clamp);
		tp->snd_cwnd_cnt = 0;
	}
}

SEC("struct_ops/illinois_ssthresh")
__u32 BPF_PROG(illinois_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct illinois_ca *ca = PORT_CA(illinois_ca, sk);
	__u32 decr, ss;

	PORT_GUARD(&ca->guard, sk, illinois_params_get());
	decr = (tp->snd_cwnd * ca->beta) >> IL_BETA_SHIFT;
	ss = max(tp->snd_cwnd - decr, 2U);
	ca->guard.ss_last = ss;		/* the kernel stores what we return */
	return ss;
}

/* An RTO: forget the delay history's verdict and fall back to Reno's. */
SEC("struct_ops/illinois_set_state")
void BPF_PROG(illinois_set_state, struct sock *sk, __u8 new_state)
{
	struct illinois_ca *ca = PORT_CA(illinois_ca, sk);

	PORT_GUARD(&ca->guard, sk, illinois_params_get());
	if (new_state == TCP_CA_Loss) {
		ca->alpha = IL_ALPHA_BASE;
		ca->beta = IL_BETA_BASE;
		ca->rtt_low = 0;
		ca->rtt_above = 0;
		il_round_start(sk, ca);
	}
}

SEC("struct_ops/illinois_undo_cwnd")
__u32 BPF_PROG(illinois_undo_cwnd, struct sock *sk)
{
	PORT_GUARD(&PORT_CA(illinois_ca, sk)->guard, sk, illinois_params_get());
	return reno_undo_cwnd(tcp_sk(sk));
}

SEC(".struct_ops")
struct tcp_congestion_ops PORT_OPS(illinois) = {
	.init		= (void *)illinois_init,
	.ssthresh	= (void *)illinois_ssthresh,
	.cong_avoid	= (void *)illinois_cong_avoid,
	.set_state	= (void *)illinois_set_state,
	.undo_cwnd	= (void *)illinois_undo_cwnd,
	.pkts_acked	= (void *)illinois_pkts_acked,
	.in_ack_event	= (void *)illinois_in_ack_event,
	.name		= PORT_NAME(illinois),
};
