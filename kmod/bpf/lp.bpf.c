// SPDX-License-Identifier: GPL-2.0
/*
 * lp.bpf.c - TCP-LP, TCP Low Priority (A. Kuzmanovic, E. Knightly, "TCP-LP:
 * A Distributed Algorithm for Low Priority Data Transfer", IEEE INFOCOM
 * 2003) as a BPF struct_ops port of the kernel's tcp_lp.
 *
 * TCP-LP uses only the bandwidth that fair-share (Reno) flows leave
 * unused: it takes a rise in one-way delay as an early congestion
 * indication and backs off before the queue overflows, so that a Reno
 * flow sharing the bottleneck keeps (nearly) all of it.
 *
 * As the kernel does it, on each ACK (pkts_acked):
 *  - the remote timestamp clock rate is estimated from the TCP timestamps
 *    (1000 * d(TSval) / d(TSecr), an EWMA with gain 1/64);
 *  - with a valid rate, the one-way delay is TSval * (1000 / rate) - TSecr
 *    (unsigned 32-bit, a relative value); it updates the lowest and highest
 *    one-way delay (the highest forgets the single largest sample) and a
 *    smoothed one, gain 1/8;
 *  - the inference interval is 3 * (now - TSecr), with now the socket's
 *    timestamp clock (ms, or us for usec timestamps);
 *  - while the smoothed delay stays below min + 15% * (max - min) nothing
 *    else happens; otherwise min and max are reset around the smoothed
 *    delay (min = sowd, max = 2 * sowd) and cwnd is cut: to 1 if the last
 *    cut was within the inference interval, else to half (at least 1).
 * cong_avoid is Reno's except within the inference interval after a cut,
 * when the window does not grow at all. Losses are Reno's (ssthresh and
 * undo). The module has no parameters; the map holds only the counters.
 *
 * now - TSecr is the RTT in timestamp ticks (the kernel takes the
 * connection's timestamp offset off TSecr on receipt); while it is 0 (an
 * RTT below 1 ms with ms timestamps) the interval keeps its last value,
 * at first 0: never within it. The first valid one-way delay sample leaves
 * min = max = sowd, which is not below the threshold, so the first cut
 * comes as soon as the remote clock rate is known (the second ACK whose
 * TSval and TSecr both differ from the previous ACK's), as in the module.
 * Without TCP timestamps the rate is never known and TCP-LP never cuts:
 * it is Reno.
 *
 * The integer arithmetic is the module's, with the widths the module's C
 * types give it: the rate estimate and the delays are unsigned 32-bit
 * (products wrap), the rate's EWMA is kept in 64 bits.
 *
 * Differences from the module: none in behaviour. Per-connection state:
 * 48 bytes (the module's 40 and the guard's 8).
 *
 * Build: make -C kmod bpf. Load: bpftool struct_ops register lp.bpf.o
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "port.h"

char _license[] SEC("license") = "GPL";

#define LP_TS_HZ	1000U		/* the kernel's TCP_TS_HZ */
#define LP_RESOL	LP_TS_HZ	/* one-way delay resolution */

/* flag bits */
#define LP_VALID_RHZ	(1U << 0)	/* remote clock rate known */
#define LP_VALID_OWD	(1U << 1)	/* one-way delay measured */
#define LP_WITHIN_THR	(1U << 3)	/* smoothed delay below the threshold */
#define LP_WITHIN_INF	(1U << 4)	/* within the inference interval */

/* Map value: only the counters (port.h). */
struct lp_params {
	PORT_COUNTERS;
};
PORT_PARAM_MAP(lp_params, lp_params)

/* Per-connection state: the module's, then the guard's. */
struct lp_ca {
	__u32 flag;		/* LP_* bits */
	__u32 sowd;		/* smoothed one-way delay, x8 */
	__u32 owd_min;		/* lowest one-way delay */
	__u32 owd_max;		/* highest one-way delay (but one) */
	__u32 owd_max_rsv;	/* highest one-way delay */
	__u32 remote_hz;	/* the peer's timestamp clock rate */
	__u32 remote_ref_time;	/* TSval of the previous ACK */
	__u32 local_ref_time;	/* TSecr of the previous ACK */
	__u32 last_drop;	/* our timestamp clock at the last cut */
	__u32 inference;	/* inference interval, timestamp ticks */
	struct ss_guard guard;
};
_Static_assert(sizeof(struct lp_ca) <= 104, "icsk_ca_priv holds 104 bytes");

/* tcp_sock's tcp_usec_ts (Linux 6.7 and later: TSval in microseconds),
 * named through a CO-RE flavour of tcp_sock so that the port builds
 * against the vmlinux.h of a kernel without it (Debian 12's 6.1), where
 * the field does not exist and the clock is in milliseconds.
 */
struct tcp_sock___usec_ts {
	__u8 tcp_usec_ts:1;
} __attribute__((preserve_access_index));

static __always_inline bool lp_usec_ts(const struct tcp_sock *tp)
{
	const struct tcp_sock___usec_ts *t = (const void *)tp;

	if (!bpf_core_field_exists(t->tcp_usec_ts))
		return false;
	return BPF_CORE_READ_BITFIELD(t, tcp_usec_ts);
}

/* The socket's timestamp clock, as it stamps TSval (before tsoffset). */
static __always_inline __u32 lp_now(const struct tcp_sock *tp)
{
	if (lp_usec_ts(tp))
		return (__u32)tp->tcp_mstamp;
	return (__u32)(tp->tcp_mstamp / USEC_PER_MSEC);
}

/* The peer's timestamp clock rate, from this ACK and the previous one. */
static __always_inline __u32 lp_remote_hz(const struct tcp_sock *tp,
					  struct lp_ca *ca)
{
	__u32 tsval = tp->rx_opt.rcv_tsval, tsecr = tp->rx_opt.rcv_tsecr;
	__u64 rhz = (__u32)(ca->remote_hz << 6);	/* x64 */

	if (ca->remote_ref_time && ca->local_ref_time &&
	    tsval != ca->remote_ref_time && tsecr != ca->local_ref_time) {
		__u32 m = LP_TS_HZ * (tsval - ca->remote_ref_time) /
			  (tsecr - ca->local_ref_time);

		if (rhz)
			rhz = rhz + m - (rhz >> 6);	/* 63/64 old + 1/64 new */
		else
			rhz = (__u64)m << 6;
	}

	if (rhz >> 6)
		ca->flag |= LP_VALID_RHZ;
	else
		ca->flag &= ~LP_VALID_RHZ;

	ca->remote_ref_time = tsval;
	ca->local_ref_time = tsecr;
	return (__u32)(rhz >> 6);
}

/* One-way delay, relative (0 when it cannot be measured). */
static __always_inline __u32 lp_owd(const struct tcp_sock *tp, struct lp_ca *ca)
{
	__u32 owd = 0;

	ca->remote_hz = lp_remote_hz(tp, ca);
	if (ca->flag & LP_VALID_RHZ)
		owd = tp->rx_opt.rcv_tsval * (LP_RESOL / ca->remote_hz) -
		      tp->rx_opt.rcv_tsecr * (LP_RESOL / LP_TS_HZ);

	if (owd)
		ca->flag |= LP_VALID_OWD;
	else
		ca->flag &= ~LP_VALID_OWD;
	return owd;
}

/* Update the lowest, highest and smoothed one-way delay. */
static __always_inline void lp_rtt_sample(const struct tcp_sock *tp,
					  struct lp_ca *ca)
{
	__u32 owd = lp_owd(tp, ca);

	if (!(ca->flag & LP_VALID_RHZ) || !(ca->flag & LP_VALID_OWD))
		return;

	if (owd < ca->owd_min)
		ca->owd_min = owd;

	/* the highest sample is held in reserve; owd_max is the one below */
	if (owd > ca->owd_max) {
		if (owd > ca->owd_max_rsv) {
			ca->owd_max = ca->owd_max_rsv ? ca->owd_max_rsv : owd;
			ca->owd_max_rsv = owd;
		} else {
			ca->owd_max = owd;
		}
	}

	if (ca->sowd)
		ca->sowd += owd - (ca->sowd >> 3);	/* 7/8 old + 1/8 new */
	else
		ca->sowd = owd << 3;
}

SEC("struct_ops/lp_init")
void BPF_PROG(lp_init, struct sock *sk)
{
	struct lp_ca *ca = PORT_CA(lp_ca, sk);

	PORT_START(&ca->guard, sk, lp_params_get());
	ca->flag = 0;
	ca->sowd = 0;
	ca->owd_min = 0xffffffff;
	ca->owd_max = 0;
	ca->owd_max_rsv = 0;
	ca->remote_hz = 0;
	ca->remote_ref_time = 0;
	ca->local_ref_time = 0;
	ca->last_drop = 0;
	ca->inference = 0;
}

SEC("struct_ops/lp_cong_avoid")
void BPF_PROG(lp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct lp_ca *ca = PORT_CA(lp_ca, sk);

	PORT_GUARD(&ca->guard, sk, lp_params_get());
	if (!(ca->flag & LP_WITHIN_INF))
		tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops/lp_pkts_acked")
void BPF_PROG(lp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct lp_ca *ca = PORT_CA(lp_ca, sk);
	__u32 now, delta;

	PORT_GUARD(&ca->guard, sk, lp_params_get());
	now = lp_now(tp);

	if (sample->rtt_us > 0)
		lp_rtt_sample(tp, ca);

	/* inference interval: three times the (timestamp) RTT */
	delta = now - tp->rx_opt.rcv_tsecr;
	if ((__s32)delta > 0)
		ca->inference = 3 * delta;

	if (ca->last_drop && now - ca->last_drop < ca->inference)
		ca->flag |= LP_WITHIN_INF;
	else
		ca->flag &= ~LP_WITHIN_INF;

	/* early congestion indication: the smoothed delay above
	 * min + 15% of (max - min)
	 */
	if ((ca->sowd >> 3) <
	    ca->owd_min + 15 * (ca->owd_max - ca->owd_min) / 100)
		ca->flag |= LP_WITHIN_THR;
	else
		ca->flag &= ~LP_WITHIN_THR;

	if (ca->flag & LP_WITHIN_THR)
		return;

	/* restart min and max around the smoothed delay */
	ca->owd_min = ca->sowd >> 3;
	ca->owd_max = ca->sowd >> 2;
	ca->owd_max_rsv = ca->sowd >> 2;

	/* a second indication within the interval: to 1; else halve */
	if (ca->flag & LP_WITHIN_INF)
		tp->snd_cwnd = 1U;
	else
		tp->snd_cwnd = max(tp->snd_cwnd >> 1U, 1U);

	ca->last_drop = now;
}

SEC("struct_ops/lp_ssthresh")
__u32 BPF_PROG(lp_ssthresh, struct sock *sk)
{
	struct lp_ca *ca = PORT_CA(lp_ca, sk);
	__u32 ss;

	PORT_GUARD(&ca->guard, sk, lp_params_get());
	ss = reno_ssthresh(tcp_sk(sk));
	ca->guard.ss_last = ss;		/* the kernel stores what we return */
	return ss;
}

SEC("struct_ops/lp_undo_cwnd")
__u32 BPF_PROG(lp_undo_cwnd, struct sock *sk)
{
	PORT_GUARD(&PORT_CA(lp_ca, sk)->guard, sk, lp_params_get());
	return reno_undo_cwnd(tcp_sk(sk));
}

SEC(".struct_ops")
struct tcp_congestion_ops PORT_OPS(lp) = {
	.init		= (void *)lp_init,
	.ssthresh	= (void *)lp_ssthresh,
	.cong_avoid	= (void *)lp_cong_avoid,
	.pkts_acked	= (void *)lp_pkts_acked,
	.undo_cwnd	= (void *)lp_undo_cwnd,
	.name		= PORT_NAME(lp),
};
