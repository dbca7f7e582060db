// SPDX-License-Identifier: GPL-2.0
/*
 * newcwv.bpf.c - NewReno with RFC 7661 congestion window validation
 * ("newCWV"), as a BPF struct_ops TCP congestion control. BPF twin of
 * kmod/newcwv.c, which explains the algorithm at length; in short:
 *
 *  - pipeACK (RFC 7661 4.2): segments acknowledged per round trip, kept as
 *    the max over a sampling period of max(3 * SRTT, 1 s) in 4 bins (4.5.1);
 *    undefined at start and after congestion recovery; with no_filter = 1, the
 *    last round's sample alone (seed 002, Figure 5 (a));
 *  - non-validated phase (4.3) while pipeACK < cwnd / 2: cwnd is kept but
 *    does not grow;
 *  - cwnd kept across idle (4.3): the kernel's restart-after-idle is undone
 *    (saved at CA_EVENT_CWND_RESTART, restored at CA_EVENT_TX_START) and its
 *    RFC 2861 application-limited decay is kept from firing by refreshing
 *    tp->snd_cwnd_stamp, its only trigger;
 *  - congestion while non-validated (4.4.1): ssthresh from
 *    max(pipeACK, LossFlightSize) / 2, and at the end of recovery
 *    cwnd = (max(pipeACK, LossFlightSize) - R) / 2, pipeACK undefined again;
 *  - NVP expiry (4.4.3): ssthresh = max(ssthresh, 3 cwnd / 4),
 *    cwnd = max(cwnd / 2, IW), and a new NVP begins.
 *
 * Parameters and counters live in the one-entry ARRAY map `ncwv_params`
 * (layout below), read at every event. Every callback runs the ssthresh
 * guard of ss_guard.h first.
 *
 * Build: make -C kmod bpf. Load: bpftool struct_ops register newcwv.bpf.o
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "port.h"	/* tcp_sk, PORT_CA, before, the clock, Reno, the guard */

char _license[] SEC("license") = "GPL";

#define NC_NVP_DEFAULT_MS	300000U		/* 5 minutes (RFC 7661 section 5) */
#define NC_NVP_MIN_MS		100U
#define NC_NVP_MAX_MS		3600000U
#define NC_BINS			4		/* RFC 7661 4.5.1 example */
#define NC_UNDEF		(~0U)		/* pipeACK "undefined" (4.1) */
#define NC_NVP_STEPS_MAX	8		/* NVP expiries applied at once */
#define TCP_INIT_CWND		10

/*
 * Map value, 60 bytes, all __u32, little endian. Byte offsets:
 *   0 nvp_ms            in   100..3600000 ms, 0 = default 300000
 *   4 pacing            in   0 or 1 (kernel-internal pacing, new connections)
 *   8 nvp_ms_in_use     out
 *  12 pacing_in_use     out
 *  16 invalid           out  bit 0: nvp_ms out of range, bit 1: pacing,
 *                            bit 2: no_filter
 *  20 conns             out  connections initialised
 *  24 nv_entries        out  entries into the non-validated phase
 *  28 nvp_expiries      out  4.4.3 reductions applied
 *  32 nv_recoveries     out  4.4.1 end-of-recovery adjustments applied
 *  36 restarts_undone   out  kernel restart-after-idle reductions undone
 *  40 last_pipeack      out  pipeACK (segments) at the last ACK, ~0 = undefined
 *  44 last_cwnd         out  cwnd at the last ACK (both of a connection that
 *                            has sent more than it received)
 *  48 ss_repairs        out  implausible ssthresh values undone
 *  52 no_filter         in   0: pipeACK is the max filter of 4.5.1 (the
 *                            default), 1: the last round's sample alone
 *  56 no_filter_in_use  out
 * (no_filter sits after the outputs, where it was added, so that the
 * offsets before it kept their meaning.)
 */
struct ncwv_params {
	__u32 nvp_ms;
	__u32 pacing;
	__u32 nvp_ms_in_use;
	__u32 pacing_in_use;
	__u32 invalid;
	__u32 conns;
	__u32 nv_entries;
	__u32 nvp_expiries;
	__u32 nv_recoveries;
	__u32 restarts_undone;
	__u32 last_pipeack;
	__u32 last_cwnd;
	__u32 ss_repairs;
	__u32 no_filter;
	__u32 no_filter_in_use;
};

PORT_PARAM_MAP(ncwv_params, ncwv_params)	/* and ncwv_params_get() */

/* flags */
#define NC_F_DEFINED	0x1	/* pipeACK has a value */
#define NC_F_NONVAL	0x2	/* non-validated phase */
#define NC_F_NV_LOSS	0x4	/* recovering from congestion seen while non-validated */
#define NC_F_RESTART	0x8	/* kernel restart-after-idle pending undo */
#define NC_F_INIT	0x10	/* init has run (see kmod/newcwv.c) */

/* Per-connection state, in icsk_ca_priv (same as kmod/newcwv.c plus the
 * guard's state).
 */
struct ncwv_ca {
	__u32 psample[NC_BINS];	/* largest pipeACK sample per bin, segments */
	__u32 pstamp[NC_BINS];	/* jiffies when each bin was opened */
	__u32 pipeack;		/* max of the live bins, segments */
	__u32 round_end;	/* snd_nxt when the current sample began */
	__u32 round_delivered;	/* tp->delivered when the current sample began */
	__u32 valid_stamp;	/* jiffies when last validated (start of the NVP) */
	__u32 loss_flight;	/* LossFlightSize, segments (4.4.1) */
	__u32 loss_pipeack;	/* pipeACK when congestion was detected */
	__u32 loss_retrans;	/* tp->total_retrans when congestion was detected */
	__u32 saved_cwnd;	/* cwnd before the kernel's restart-after-idle */
	__u32 saved_ssthresh;	/* ssthresh before the kernel's restart-after-idle */
	__u32 iw;		/* initial window, for 4.4.3 */
	struct ss_guard guard;	/* the ssthresh guard's state (ss_guard.h) */
	__u8 head;		/* newest bin */
	__u8 flags;		/* NC_F_* */
};

#define RD32(x)		(*(volatile __u32 *)&(x))
#define WR_IF_CHANGED(p, field, val)				\
	do {							\
		if (RD32((p)->field) != (val))			\
			RD32((p)->field) = (val);		\
	} while (0)
#define COUNT(field)						\
	do {							\
		struct ncwv_params *p_ = ncwv_params_get();	\
		if (p_)						\
			__sync_fetch_and_add(&p_->field, 1);	\
	} while (0)

/* The connection's state (port.h's PORT_CA). A function, not the macro at
 * each use: inlined in this order, the program compiles to the instructions
 * it had before it used port.h (with the macro, the same instructions in
 * another block order).
 */
static __always_inline struct ncwv_ca *nc_ca(const struct sock *sk)
{
	return PORT_CA(ncwv_ca, sk);
}

static __always_inline __u8 ca_state(const struct sock *sk)
{
	return inet_csk(sk)->icsk_ca_state;
}

/* NVP in jiffies from the map (validated), publishing what is in use. */
static __always_inline __u32 nvp_jiffies(void)
{
	struct ncwv_params *p = ncwv_params_get();
	__u32 ms = NC_NVP_DEFAULT_MS, pc = 0, bad = 0, v;

	if (p) {
		v = RD32(p->nvp_ms);
		if (v >= NC_NVP_MIN_MS && v <= NC_NVP_MAX_MS)
			ms = v;
		else if (v)
			bad |= 1;
		v = RD32(p->pacing);
		if (v <= 1)
			pc = v;
		else
			bad |= 2;
		v = RD32(p->no_filter);
		if (v > 1)
			bad |= 4;
		WR_IF_CHANGED(p, nvp_ms_in_use, ms);
		WR_IF_CHANGED(p, pacing_in_use, pc);
		WR_IF_CHANGED(p, no_filter_in_use, v == 1);
		WR_IF_CHANGED(p, invalid, bad);
	}
	return (__u32)msecs_to_jiffies64(ms);
}

/* The ssthresh guard (ss_guard.h), counted in the parameter map. */
static __always_inline void ss_guard(struct sock *sk)
{
	PORT_GUARD_LAZY(&nc_ca(sk)->guard, sk, ncwv_params_get());
}

/* pipeACK sampling period: max(3 * SRTT, 1 s), in jiffies (4.2) */
static __always_inline __u32 nc_psp(const struct tcp_sock *tp)
{
	__u64 us3 = 3ULL * (tp->srtt_us >> 3);
	__u32 j = (__u32)usecs_to_jiffies64(us3);

	return max(j, HZ);
}

static __always_inline void nc_reset_pipeack(struct ncwv_ca *nc,
					     const struct tcp_sock *tp)
{
	nc->psample[0] = NC_UNDEF;
	nc->psample[1] = NC_UNDEF;
	nc->psample[2] = NC_UNDEF;
	nc->psample[3] = NC_UNDEF;
	nc->head = 0;
	nc->pipeack = NC_UNDEF;
	nc->flags &= ~(NC_F_DEFINED | NC_F_NONVAL);
	nc->round_end = tp->snd_nxt;
	nc->round_delivered = tp->delivered;
	nc->valid_stamp = tcp_jiffies32;
}

/* icsk_ca_priv cannot be indexed with a variable offset in BPF, so the
 * bins are reached through constant indices.
 */
static __always_inline __u32 *bin_val(struct ncwv_ca *nc, __u32 h)
{
	switch (h & (NC_BINS - 1)) {
	case 0:
		return &nc->psample[0];
	case 1:
		return &nc->psample[1];
	case 2:
		return &nc->psample[2];
	default:
		return &nc->psample[3];
	}
}

static __always_inline __u32 *bin_stamp(struct ncwv_ca *nc, __u32 h)
{
	switch (h & (NC_BINS - 1)) {
	case 0:
		return &nc->pstamp[0];
	case 1:
		return &nc->pstamp[1];
	case 2:
		return &nc->pstamp[2];
	default:
		return &nc->pstamp[3];
	}
}

/* The max filter in use (4.5.1), unless no_filter is 1: then pipeACK is
 * the last round's sample alone, as in seed 002's Figure 5 (a). Any other
 * value keeps the filter, and is flagged in `invalid`.
 */
static __always_inline bool nc_filter(void)
{
	struct ncwv_params *p = ncwv_params_get();

	return !p || RD32(p->no_filter) != 1;
}

/* One sample into the max filter; a bin spans a quarter of the period.
 * Without the filter the sample replaces every bin.
 */
static __always_inline void nc_add_sample(struct ncwv_ca *nc, __u32 sample,
					  __u32 now, __u32 psp)
{
	__u32 h = nc->head & (NC_BINS - 1);
	__u32 *v = bin_val(nc, h), *t = bin_stamp(nc, h);

	if (!nc_filter()) {
		nc->psample[0] = sample;
		nc->pstamp[0] = now;
		nc->psample[1] = NC_UNDEF;
		nc->psample[2] = NC_UNDEF;
		nc->psample[3] = NC_UNDEF;
		nc->head = 0;
	} else if (*v != NC_UNDEF && (__s32)(now - *t) < (__s32)(psp / NC_BINS)) {
		if (sample > *v)
			*v = sample;
	} else {
		h = (h + 1) & (NC_BINS - 1);
		nc->head = h;
		*bin_val(nc, h) = sample;
		*bin_stamp(nc, h) = now;
	}
	nc->flags |= NC_F_DEFINED;
}

/* pipeACK = largest sample inside the sampling period; 0 when all expired
 * (a long idle period), which lets the NVP run out (4.5.1).
 */
static __always_inline __u32 bin_live(__u32 *v, __u32 t, __u32 now, __u32 psp)
{
	if (*v == NC_UNDEF)
		return 0;
	if ((__s32)(now - t) >= (__s32)psp) {
		*v = NC_UNDEF;	/* expired */
		return 0;
	}
	return *v;
}

static __always_inline void nc_update_pipeack(struct ncwv_ca *nc, __u32 now,
					      __u32 psp)
{
	__u32 m = 0, x;

	if (!(nc->flags & NC_F_DEFINED)) {
		nc->pipeack = NC_UNDEF;
		return;
	}
	x = bin_live(&nc->psample[0], nc->pstamp[0], now, psp);
	m = max(x, m);
	x = bin_live(&nc->psample[1], nc->pstamp[1], now, psp);
	m = max(x, m);
	x = bin_live(&nc->psample[2], nc->pstamp[2], now, psp);
	m = max(x, m);
	x = bin_live(&nc->psample[3], nc->pstamp[3], now, psp);
	m = max(x, m);
	nc->pipeack = m;
}

/* 4.3 phase test and 4.4.3 NVP expiry (see kmod/newcwv.c) */
static __always_inline void nc_check_phase(struct sock *sk, __u32 now)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct ncwv_ca *nc = nc_ca(sk);
	__u32 nvp = nvp_jiffies();
	int i;

	if (nc->pipeack == NC_UNDEF ||
	    2ULL * nc->pipeack >= tp->snd_cwnd) {
		nc->flags &= ~NC_F_NONVAL;
		nc->valid_stamp = now;
		return;
	}
	if (!(nc->flags & NC_F_NONVAL))
		COUNT(nv_entries);
	nc->flags |= NC_F_NONVAL;

	/* Only in the open state: during recovery cwnd belongs to PRR. */
	if (ca_state(sk) != TCP_CA_Open)
		return;
	for (i = 0; i < NC_NVP_STEPS_MAX; i++) {
		__u32 cwnd = tp->snd_cwnd, ss = tp->snd_ssthresh;

		if ((__s32)(now - nc->valid_stamp) <= (__s32)nvp)
			break;
		if ((3 * cwnd) >> 2 > ss)
			ss = (3 * cwnd) >> 2;
		tp->snd_ssthresh = ss;
		nc->guard.ss_last = ss;
		cwnd >>= 1;
		tp->snd_cwnd = max(cwnd, nc->iw);
		tp->snd_cwnd_stamp = now;
		nc->valid_stamp += nvp;
		COUNT(nvp_expiries);
	}
	if ((__s32)(now - nc->valid_stamp) > (__s32)nvp)	/* very long idle */
		nc->valid_stamp = now;
}

SEC("struct_ops/ncwv_init")
void BPF_PROG(ncwv_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct ncwv_ca *nc = nc_ca(sk);
	struct ncwv_params *p = ncwv_params_get();

	nvp_jiffies();	/* validate and publish the parameters */
	nc->flags = NC_F_INIT;
	nc_reset_pipeack(nc, tp);
	nc->loss_flight = nc->loss_pipeack = nc->loss_retrans = 0;
	nc->saved_cwnd = nc->saved_ssthresh = 0;
	nc->iw = tp->data_segs_out ? TCP_INIT_CWND : tp->snd_cwnd;
	ss_guard_start(&nc->guard, tp);
	if (p) {
		__sync_fetch_and_add(&p->conns, 1);
		/* RFC 7661 4.4.2: pacing mitigates the bursts a preserved cwnd
		 * allows; the kernel paces internally once this is set.
		 */
		if (RD32(p->pacing) == 1 && sk->sk_pacing_status == SK_PACING_NONE)
			sk->sk_pacing_status = SK_PACING_NEEDED;
	}
}

SEC("struct_ops/ncwv_in_ack_event")
void BPF_PROG(ncwv_in_ack_event, struct sock *sk, __u32 flags)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct ncwv_ca *nc = nc_ca(sk);
	struct ncwv_params *p;
	__u32 now = tcp_jiffies32, psp = nc_psp(tp);

	if (!(nc->flags & NC_F_INIT))
		return;
	ss_guard(sk);
	tp->snd_cwnd_stamp = now;	/* keep RFC 2861 decay from firing */

	/* 4.2: one sample per round trip, none while recovering */
	if (ca_state(sk) <= TCP_CA_Disorder) {
		if (!before(tp->snd_una, nc->round_end) &&
		    tp->delivered != nc->round_delivered) {
			nc_add_sample(nc, tp->delivered - nc->round_delivered,
				      now, psp);
			nc->round_end = tp->snd_nxt;
			nc->round_delivered = tp->delivered;
		}
	} else {
		nc->round_end = tp->snd_nxt;
		nc->round_delivered = tp->delivered;
	}
	nc_update_pipeack(nc, now, psp);
	nc_check_phase(sk, now);

	/* Published by a connection that has sent more than it received: the
	 * server's side of a download, not the client's, whose requests run
	 * newcwv too.
	 */
	p = ncwv_params_get();
	if (p && tp->bytes_acked > tp->bytes_received) {
		WR_IF_CHANGED(p, last_pipeack, nc->pipeack);
		WR_IF_CHANGED(p, last_cwnd, tp->snd_cwnd);
	}
}

/* NewReno growth, none in the non-validated phase (4.3) */
SEC("struct_ops/ncwv_cong_avoid")
void BPF_PROG(ncwv_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	if (nc_ca(sk)->flags & NC_F_NONVAL)
		return;
	tcp_reno_cong_avoid(sk, ack, acked);
}

/* Validated: Reno. Non-validated: from max(pipeACK, LossFlightSize) (4.4.1) */
SEC("struct_ops/ncwv_ssthresh")
__u32 BPF_PROG(ncwv_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct ncwv_ca *nc = nc_ca(sk);
	__u32 used, ss;

	ss_guard(sk);
	if (!(nc->flags & NC_F_NONVAL)) {
		ss = tp->snd_cwnd >> 1;
	} else {
		nc->loss_flight = tp->packets_out;	/* RFC 5681 FlightSize */
		nc->loss_pipeack = nc->pipeack == NC_UNDEF ? 0 : nc->pipeack;
		nc->loss_retrans = tp->total_retrans;
		nc->flags |= NC_F_NV_LOSS;
		used = max(nc->loss_pipeack, nc->loss_flight);
		ss = used >> 1;
	}
	if (ss < 2)
		ss = 2;
	nc->guard.ss_last = ss;	/* the kernel stores what we return */
	return ss;
}

SEC("struct_ops/ncwv_cwnd_event")
void BPF_PROG(ncwv_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct ncwv_ca *nc = nc_ca(sk);
	__u32 now = tcp_jiffies32;

	if (!(nc->flags & NC_F_INIT))
		return;
	ss_guard(sk);
	if (ev == CA_EVENT_CWND_RESTART) {
		/* before tcp_cwnd_restart() shrinks cwnd after idle */
		nc->saved_cwnd = tp->snd_cwnd;
		nc->saved_ssthresh = tp->snd_ssthresh;
		nc->flags |= NC_F_RESTART;
	} else if (ev == CA_EVENT_TX_START) {
		/* first segment with nothing in flight: keep the pre-idle
		 * cwnd (4.3), then see whether the idle time ended the NVP
		 */
		if (nc->flags & NC_F_RESTART) {
			if (nc->saved_cwnd > tp->snd_cwnd)
				tp->snd_cwnd = nc->saved_cwnd;
			tp->snd_ssthresh = nc->saved_ssthresh;
			nc->guard.ss_last = nc->saved_ssthresh;
			nc->flags &= ~NC_F_RESTART;
			COUNT(restarts_undone);
		}
		tp->snd_cwnd_stamp = now;
		nc_update_pipeack(nc, now, nc_psp(tp));
		nc_check_phase(sk, now);
	} else if (ev == CA_EVENT_COMPLETE_CWR) {
		/* end of recovery/CWR (cwnd was just set to ssthresh):
		 * 4.4.1 cwnd = (max(pipeACK, LFS) - R) / 2, at least 1;
		 * ssthresh follows (at least 2); pipeACK undefined again
		 */
		if (nc->flags & NC_F_NV_LOSS) {
			__u32 used = max(nc->loss_pipeack, nc->loss_flight);
			__u32 retrans = tp->total_retrans - nc->loss_retrans;
			__u32 cwnd = used > retrans ? (used - retrans) >> 1 : 0;

			if (cwnd < 1)
				cwnd = 1;
			tp->snd_cwnd = cwnd;
			tp->snd_ssthresh = max(cwnd, 2U);
			nc->guard.ss_last = tp->snd_ssthresh;
			nc->flags &= ~NC_F_NV_LOSS;
			nc_reset_pipeack(nc, tp);
			COUNT(nv_recoveries);
		}
	} else if (ev == CA_EVENT_LOSS) {
		/* RTO: Reno from one segment; old pipeACK no longer applies */
		nc->flags &= ~NC_F_NV_LOSS;
		nc_reset_pipeack(nc, tp);
	}
}

/* A spurious reduction undone: forget the pending 4.4.1 adjustment */
SEC("struct_ops/ncwv_undo_cwnd")
__u32 BPF_PROG(ncwv_undo_cwnd, struct sock *sk)
{
	ss_guard(sk);
	nc_ca(sk)->flags &= ~NC_F_NV_LOSS;
	return reno_undo_cwnd(tcp_sk(sk));
}

SEC(".struct_ops")
struct tcp_congestion_ops newcwv = {
	.init		= (void *)ncwv_init,
	.ssthresh	= (void *)ncwv_ssthresh,
	.cong_avoid	= (void *)ncwv_cong_avoid,
	.cwnd_event	= (void *)ncwv_cwnd_event,
	.in_ack_event	= (void *)ncwv_in_ack_event,
	.undo_cwnd	= (void *)ncwv_undo_cwnd,
	.name		= "newcwv",
};
