// SPDX-License-Identifier: GPL-2.0
/*
 * bic.bpf.c - BIC-TCP (Xu, Harfoush, Rhee, "Binary Increase Congestion
 * Control for Fast, Long Distance Networks", IEEE INFOCOM 2004) as a BPF
 * struct_ops port of the kernel's tcp_bic.
 *
 * Slow start is Reno's (tcp_slow_start); the ACKs left over when slow start
 * reaches ssthresh go to the increase below, as in the kernel. Above
 * ssthresh the window grows by one segment every `cnt` segments ACKed,
 * where cnt is recomputed at most once per HZ/32 jiffies unless cwnd
 * changed:
 *  - cwnd <= low_window: cnt = cwnd, i.e. Reno;
 *  - below W_max (the window at the last loss): binary search towards the
 *    midpoint, dist = (W_max - cwnd) / B with B = 4: cnt = cwnd / dist,
 *    but at most max_increment segments per RTT (cnt = cwnd / max_increment)
 *    and, once dist <= 1, the slow approach cnt = cwnd * smooth_part / B;
 *  - at or above W_max ("max probing"): the same slow approach for the
 *    first B segments, then cnt = cwnd * (B - 1) / (cwnd - W_max), then
 *    max_increment per RTT;
 *  - before any loss (W_max = 0) cnt is at most 20 (5% per RTT);
 *  - cnt is divided by the ACK ratio (packets per ACK, x16, an EWMA with
 *    gain 1/16 kept in pkts_acked while the connection is in Open state).
 * A loss ends the epoch: W_max = cwnd, or with fast convergence, when the
 * loss came below the previous W_max, cwnd * (1024 + beta) / 2048; then
 * ssthresh = max(cwnd * beta / 1024, 2) (about 0.8 cwnd), or Reno's
 * max(cwnd / 2, 2) when cwnd <= low_window. Entering Loss state (RTO)
 * forgets everything (W_max too). Undo is Reno's.
 *
 * Parameters (map bic_params, the module's names, order and defaults):
 *   fast_convergence  1    flag: release bandwidth faster (see above)
 *   max_increment     16   segments per RTT, the most binary search adds;
 *                          0 would divide by zero and is taken as 1
 *   low_window        14   segments; at or below it BIC is Reno
 *   beta              819  1/1024: the multiplicative decrease factor;
 *                          above 1024 it would raise the window on loss,
 *                          so values above 1024 are taken as 1024
 *   initial_ssthresh  0    segments; 0: leave the kernel's ssthresh
 *   smooth_part       20   cnt factor near W_max (RTTs from W_max - B
 *                          to W_max)
 * The module's parameters are signed ints; here they are __u32, and its
 * arithmetic (u32 throughout) is kept.
 *
 * Differences from the module: the clamps of max_increment and beta above
 * (the module would divide by zero, resp. grow the window on loss);
 * otherwise none. The ACK ratio can never reach 0 (it starts at 32 and the
 * EWMA stops at 15), so cnt's division needs no guard, as in the module.
 * Per-connection state: 32 bytes (the module's 24 and the guard's 8).
 *
 * Build: make -C kmod bpf. Load: bpftool struct_ops register bic.bpf.o
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "port.h"

char _license[] SEC("license") = "GPL";

#define BIC_BETA_SCALE		1024U	/* beta is in 1/1024 */
#define BIC_B			4U	/* binary search: go 1/B of the way */
#define BIC_ACK_SHIFT		4	/* the ACK ratio is kept x16 */
#define BIC_START_CNT_MAX	20U	/* before any loss: at least 5% per RTT */

/* Map value: the module's parameters, then the counters (port.h). */
struct bic_params {
	__u32 fast_convergence;
	__u32 max_increment;
	__u32 low_window;
	__u32 beta;
	__u32 initial_ssthresh;
	__u32 smooth_part;
	PORT_COUNTERS;
};
PORT_PARAM_MAP(bic_params, bic_params)

#define BIC_FAST_CONVERGENCE(p)	PORT_PARAM(p, fast_convergence, 1U)
#define BIC_LOW_WINDOW(p)	PORT_PARAM(p, low_window, 14U)
#define BIC_INITIAL_SSTHRESH(p)	PORT_PARAM(p, initial_ssthresh, 0U)
#define BIC_SMOOTH_PART(p)	PORT_PARAM(p, smooth_part, 20U)

/* max_increment is a divisor: 0 is taken as 1 */
static __always_inline __u32 bic_max_increment(const struct bic_params *p)
{
	__u32 v = PORT_PARAM(p, max_increment, 16U);

	return v ? v : 1U;
}

/* beta above 1024 would make ssthresh exceed cwnd */
static __always_inline __u32 bic_beta(const struct bic_params *p)
{
	__u32 v = PORT_PARAM(p, beta, 819U);

	return min(v, BIC_BETA_SCALE);
}

/* Per-connection state: the module's, then the guard's. */
struct bic_ca {
	__u32 cnt;		/* one segment more per cnt segments ACKed */
	__u32 last_max_cwnd;	/* W_max: the window at the last loss */
	__u32 last_cwnd;	/* cwnd when cnt was last computed */
	__u32 last_time;	/* jiffies when cnt was last computed */
	__u32 epoch_start;	/* jiffies at the first increase after a loss */
	__u32 delayed_ack;	/* packets per ACK, x16 (EWMA) */
	struct ss_guard guard;
};
_Static_assert(sizeof(struct bic_ca) <= 104, "icsk_ca_priv holds 104 bytes");

static __always_inline void bic_reset(struct bic_ca *ca)
{
	ca->cnt = 0;
	ca->last_max_cwnd = 0;
	ca->last_cwnd = 0;
	ca->last_time = 0;
	ca->epoch_start = 0;
	ca->delayed_ack = 2U << BIC_ACK_SHIFT;	/* assume delayed ACKs: 2 */
}

/* Recompute cnt for the current window. */
static __always_inline void bic_update(struct bic_ca *ca, __u32 cwnd,
				       const struct bic_params *p)
{
	__u32 now = tcp_jiffies32;
	__u32 max_inc = bic_max_increment(p);
	__u32 smooth = BIC_SMOOTH_PART(p);
	__u32 wmax = ca->last_max_cwnd;

	/* same window and less than HZ/32 since the last time: keep cnt */
	if (ca->last_cwnd == cwnd &&
	    (__s32)(now - ca->last_time) <= (__s32)(HZ / 32))
		return;

	ca->last_cwnd = cwnd;
	ca->last_time = now;
	if (!ca->epoch_start)
		ca->epoch_start = now;

	if (cwnd <= BIC_LOW_WINDOW(p)) {	/* small window: Reno */
		ca->cnt = cwnd;
		return;
	}

	if (cwnd < wmax) {
		/* binary search increase towards W_max */
		__u32 dist = (wmax - cwnd) / BIC_B;

		if (dist > max_inc)
			ca->cnt = cwnd / max_inc;		/* capped: linear */
		else if (dist <= 1U)
			ca->cnt = cwnd * smooth / BIC_B;	/* close: slow */
		else
			ca->cnt = cwnd / dist;
	} else {
		/* max probing above W_max: slow, then faster, then linear */
		if (cwnd < wmax + BIC_B)
			ca->cnt = cwnd * smooth / BIC_B;
		else if (cwnd < wmax + max_inc * (BIC_B - 1))
			ca->cnt = cwnd * (BIC_B - 1) / (cwnd - wmax);
		else
			ca->cnt = cwnd / max_inc;
	}

	/* no loss yet: grow at least 5% per RTT */
	if (!wmax && ca->cnt > BIC_START_CNT_MAX)
		ca->cnt = BIC_START_CNT_MAX;

	/* per ACK rather than per segment */
	ca->cnt = (ca->cnt << BIC_ACK_SHIFT) / ca->delayed_ack;
	if (!ca->cnt)
		ca->cnt = 1;
}

SEC("struct_ops/bic_init")
void BPF_PROG(bic_init, struct sock *sk)
{
	struct bic_ca *ca = PORT_CA(bic_ca, sk);
	struct bic_params *p = bic_params_get();
	__u32 iss;

	PORT_START(&ca->guard, sk, p);
	bic_reset(ca);
	iss = BIC_INITIAL_SSTHRESH(p);
	if (iss) {
		tcp_sk(sk)->snd_ssthresh = iss;
		ca->guard.ss_last = iss;
	}
}

SEC("struct_ops/bic_cong_avoid")
void BPF_PROG(bic_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bic_ca *ca = PORT_CA(bic_ca, sk);
	struct bic_params *p = bic_params_get();

	PORT_GUARD(&ca->guard, sk, p);
	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	bic_update(ca, tp->snd_cwnd, p);
	tcp_cong_avoid_ai(tp, ca->cnt, acked);
}

SEC("struct_ops/bic_ssthresh")
__u32 BPF_PROG(bic_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct bic_ca *ca = PORT_CA(bic_ca, sk);
	struct bic_params *p = bic_params_get();
	__u32 cwnd, beta, ss;

	PORT_GUARD(&ca->guard, sk, p);
	cwnd = tp->snd_cwnd;
	beta = bic_beta(p);
	ca->epoch_start = 0;	/* the epoch ends */

	/* W_max; with fast convergence, lower if this loss came below it */
	if (cwnd < ca->last_max_cwnd && BIC_FAST_CONVERGENCE(p))
		ca->last_max_cwnd = cwnd * (BIC_BETA_SCALE + beta) /
				    (2 * BIC_BETA_SCALE);
	else
		ca->last_max_cwnd = cwnd;

	if (cwnd <= BIC_LOW_WINDOW(p))
		ss = max(cwnd >> 1U, 2U);
	else
		ss = max(cwnd * beta / BIC_BETA_SCALE, 2U);
	ca->guard.ss_last = ss;		/* the kernel stores what we return */
	return ss;
}

SEC("struct_ops/bic_set_state")
void BPF_PROG(bic_set_state, struct sock *sk, __u8 new_state)
{
	struct bic_ca *ca = PORT_CA(bic_ca, sk);

	PORT_GUARD(&ca->guard, sk, bic_params_get());
	if (new_state == TCP_CA_Loss)
		bic_reset(ca);
}

SEC("struct_ops/bic_undo_cwnd")
__u32 BPF_PROG(bic_undo_cwnd, struct sock *sk)
{
	PORT_GUARD(&PORT_CA(bic_ca, sk)->guard, sk, bic_params_get());
	return reno_undo_cwnd(tcp_sk(sk));
}

/* The ACK ratio: ratio += (sample - ratio) / 16, in Open state only. */
SEC("struct_ops/bic_pkts_acked")
void BPF_PROG(bic_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct bic_ca *ca = PORT_CA(bic_ca, sk);

	PORT_GUARD(&ca->guard, sk, bic_params_get());
	if (BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state) == TCP_CA_Open)
		ca->delayed_ack += sample->pkts_acked -
				   (ca->delayed_ack >> BIC_ACK_SHIFT);
}

SEC(".struct_ops")
struct tcp_congestion_ops PORT_OPS(bic) = {
	.init		= (void *)bic_init,
	.ssthresh	= (void *)bic_ssthresh,
	.cong_avoid	= (void *)bic_cong_avoid,
	.set_state	= (void *)bic_set_state,
	.undo_cwnd	= (void *)bic_undo_cwnd,
	.pkts_acked	= (void *)bic_pkts_acked,
	.name		= PORT_NAME(bic),
};
