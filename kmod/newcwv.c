// SPDX-License-Identifier: GPL-2.0
/*
 * newcwv.c - NewReno with RFC 7661 congestion window validation ("newCWV"),
 * as a loadable TCP congestion-control module (seed 002; BPF twin:
 * bpf/newcwv.bpf.c).
 *
 * RFC 7661 lets a rate-limited or idle sender keep its cwnd for up to a
 * non-validated period (NVP, 5 minutes) instead of decaying it (RFC 2861)
 * or restarting from the initial window after an idle RTO (RFC 5681 4.1),
 * and in exchange bases its response to congestion on what it really used:
 *
 *  - pipeACK (RFC 7661 4.2): data acknowledged in one RTT, measured once per
 *    round trip, kept as the maximum over a sampling period of
 *    max(3 * SRTT, 1 s), split into 4 bins (4.5.1); "undefined" at start and
 *    after congestion recovery. Counted in segments (tp->delivered, which
 *    includes SACKed data, as 4.2 permits). With no_filter = 1, pipeACK is
 *    the last round's sample alone (seed 002, Figure 5 (a)).
 *  - phases (4.3): non-validated while pipeACK < cwnd / 2, validated when
 *    pipeACK >= cwnd / 2 or undefined. cwnd does not grow while
 *    non-validated.
 *  - cwnd is preserved across idle and rate-limited periods (4.3): see
 *    "Keeping cwnd" below.
 *  - congestion in the non-validated phase (4.4.1): ssthresh is set from
 *    max(pipeACK, LossFlightSize) / 2, and at the end of recovery
 *        cwnd = (max(pipeACK, LossFlightSize) - R) / 2
 *    with R the segments retransmitted during recovery; pipeACK is then
 *    reset to undefined.
 *  - end of the NVP (4.4.3): still non-validated after NVP, the sender sets
 *        ssthresh = max(ssthresh, 3 * cwnd / 4),  cwnd = max(cwnd / 2, IW)
 *    and a new NVP starts.
 *  Everything else (slow start, congestion avoidance, PRR during recovery,
 *  RTO) is Linux's NewReno.
 *
 * Keeping cwnd: Linux applies RFC 2861-style validation to every congestion
 * control that does not implement cong_control: tcp_cwnd_restart() after an
 * idle RTO, and tcp_cwnd_application_limited() when not cwnd-limited for an
 * RTO. Implementing cong_control would skip both but also skips PRR and the
 * end-of-recovery handling, which NewReno needs. Instead:
 *  - restart: CA_EVENT_CWND_RESTART arrives before the kernel shrinks cwnd;
 *    we save cwnd and ssthresh, and put them back at CA_EVENT_TX_START, which
 *    the kernel sends as the first segment after the idle period leaves
 *    (tcp_write_xmit() re-reads cwnd for every segment, so only that first
 *    segment is sent under the shrunk window);
 *  - application-limited decay: its only trigger is tp->snd_cwnd_stamp being
 *    an RTO old, and nothing else reads that field, so we refresh it on every
 *    ACK and at TX_START.
 *
 * Parameters (/sys/module/newcwv/parameters/, writable at run time):
 *   nvp_ms  non-validated period, 100..3600000 ms, default 300000 (5 min)
 *   pacing  0/1: ask the kernel to pace this connection (internal TCP
 *           pacing, no fq needed), RFC 7661 4.4.2 burst mitigation;
 *           applies to connections initialised after the change
 *   no_filter  0/1: 1 makes pipeACK the last round's sample alone instead
 *           of the max filter of 4.5.1 (seed 002's Figure 5 compares them)
 * Read-only (the BPF twin's map has the same): last_pipeack (segments,
 * 4294967295 while undefined) and last_cwnd, what the last ACK of a
 * connection that has sent more than it received left, and nv_entries
 * (entries into the non-validated phase, every connection's, since the
 * module loaded).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <net/tcp.h>

#define NC_NVP_MIN_MS		100U
#define NC_NVP_MAX_MS		3600000U
#define NC_BINS			4		/* RFC 7661 4.5.1 example */
#define NC_UNDEF		(~0U)		/* pipeACK "undefined" (4.1) */
#define NC_NVP_STEPS_MAX	8		/* NVP expiries applied at once */

static unsigned int nvp_ms = 300000;
static unsigned int pacing;
static unsigned int no_filter;
static unsigned int last_pipeack = ~0U;
static unsigned int last_cwnd;
static unsigned int nv_entries;

static int param_set_ranged(const char *val, const struct kernel_param *kp)
{
	unsigned int v, lo, hi;
	int ret;

	ret = kstrtouint(val, 0, &v);
	if (ret)
		return ret;
	if (kp->arg == &nvp_ms) {
		lo = NC_NVP_MIN_MS;
		hi = NC_NVP_MAX_MS;
	} else {
		lo = 0;
		hi = 1;
	}
	if (v < lo || v > hi)
		return -EINVAL;
	WRITE_ONCE(*(unsigned int *)kp->arg, v);
	pr_info("nvp_ms: %u, pacing: %u, no_filter: %u\n", READ_ONCE(nvp_ms),
		READ_ONCE(pacing), READ_ONCE(no_filter));
	return 0;
}

static const struct kernel_param_ops ranged_ops = {
	.set = param_set_ranged,
	.get = param_get_uint,
};

module_param_cb(nvp_ms, &ranged_ops, &nvp_ms, 0644);
MODULE_PARM_DESC(nvp_ms, "non-validated period in ms (100..3600000, default 300000 = 5 min)");
module_param_cb(pacing, &ranged_ops, &pacing, 0644);
MODULE_PARM_DESC(pacing, "enable kernel-internal pacing for new connections (0/1)");
module_param_cb(no_filter, &ranged_ops, &no_filter, 0644);
MODULE_PARM_DESC(no_filter, "pipeACK is the last round's sample, not the max filter (0/1)");
module_param(last_pipeack, uint, 0444);
MODULE_PARM_DESC(last_pipeack, "pipeACK (segments) at the last ACK, 4294967295 = undefined");
module_param(last_cwnd, uint, 0444);
MODULE_PARM_DESC(last_cwnd, "cwnd at the last ACK");
module_param(nv_entries, uint, 0444);
MODULE_PARM_DESC(nv_entries, "entries into the non-validated phase");

/* flags */
#define NC_F_DEFINED	0x1	/* pipeACK has a value (4.1: undefined at start) */
#define NC_F_NONVAL	0x2	/* in the non-validated phase (4.3) */
#define NC_F_NV_LOSS	0x4	/* recovering from congestion detected while non-validated */
#define NC_F_RESTART	0x8	/* kernel restart-after-idle pending undo */
#define NC_F_INIT	0x10	/* init has run: an active open's SYN-ACK is
				 * processed (in_ack_event) before init, on a
				 * zeroed state whose NVP would seem to have
				 * started at jiffy 0 */

/* Per-connection state, in icsk_ca_priv */
struct newcwv {
	u32 psample[NC_BINS];	/* largest pipeACK sample per bin, segments */
	u32 pstamp[NC_BINS];	/* jiffies when each bin was opened */
	u32 pipeack;		/* max of the live bins, segments */
	u32 round_end;		/* snd_nxt when the current sample began */
	u32 round_delivered;	/* tp->delivered when the current sample began */
	u32 valid_stamp;	/* jiffies when last validated (start of the NVP) */
	u32 loss_flight;	/* LossFlightSize, segments (4.4.1) */
	u32 loss_pipeack;	/* pipeACK when congestion was detected */
	u32 loss_retrans;	/* tp->total_retrans when congestion was detected */
	u32 saved_cwnd;		/* cwnd before the kernel's restart-after-idle */
	u32 saved_ssthresh;	/* ssthresh before the kernel's restart-after-idle */
	u32 iw;			/* initial window, for 4.4.3 */
	u8 head;		/* newest bin */
	u8 flags;		/* NC_F_* */
};

static u32 nc_psp(const struct tcp_sock *tp)
{
	/* pipeACK sampling period: max(3 * SRTT, 1 s), in jiffies (4.2) */
	return max_t(u32, usecs_to_jiffies(3 * (tp->srtt_us >> 3)), HZ);
}

static void nc_reset_pipeack(struct newcwv *nc, const struct tcp_sock *tp)
{
	int i;

	for (i = 0; i < NC_BINS; i++)
		nc->psample[i] = NC_UNDEF;
	nc->head = 0;
	nc->pipeack = NC_UNDEF;
	nc->flags &= ~(NC_F_DEFINED | NC_F_NONVAL);
	nc->round_end = tp->snd_nxt;
	nc->round_delivered = tp->delivered;
	nc->valid_stamp = tcp_jiffies32;
}

/* Add one pipeACK sample to the max filter (4.2, 4.5.1): a bin spans a
 * quarter of the sampling period. Without the filter the sample replaces
 * every bin.
 */
static void nc_add_sample(struct newcwv *nc, u32 sample, u32 now, u32 psp)
{
	u32 h = nc->head;
	int i;

	if (READ_ONCE(no_filter)) {
		for (i = 0; i < NC_BINS; i++)
			nc->psample[i] = NC_UNDEF;
		nc->head = 0;
		nc->psample[0] = sample;
		nc->pstamp[0] = now;
	} else if (nc->psample[h] != NC_UNDEF &&
	    (s32)(now - nc->pstamp[h]) < (s32)(psp / NC_BINS)) {
		nc->psample[h] = max(nc->psample[h], sample);
	} else {
		h = (h + 1) % NC_BINS;
		nc->head = h;
		nc->psample[h] = sample;
		nc->pstamp[h] = now;
	}
	nc->flags |= NC_F_DEFINED;
}

/* pipeACK = largest sample still inside the sampling period. Once defined
 * it stays defined: with every bin expired (a long idle period) it is 0,
 * which is what lets the NVP run out (4.5.1).
 */
static void nc_update_pipeack(struct newcwv *nc, u32 now, u32 psp)
{
	u32 m = 0;
	int i;

	if (!(nc->flags & NC_F_DEFINED)) {
		nc->pipeack = NC_UNDEF;
		return;
	}
	for (i = 0; i < NC_BINS; i++) {
		if (nc->psample[i] == NC_UNDEF)
			continue;
		if ((s32)(now - nc->pstamp[i]) >= (s32)psp) {
			nc->psample[i] = NC_UNDEF;	/* expired */
			continue;
		}
		m = max(m, nc->psample[i]);
	}
	nc->pipeack = m;
}

/* 4.3: validated if pipeACK is undefined or >= cwnd / 2. 4.4.3: after an
 * NVP in the non-validated phase, ssthresh = max(ssthresh, 3 cwnd / 4) and
 * cwnd = max(cwnd / 2, IW); each further NVP repeats it.
 */
static void nc_check_phase(struct sock *sk, u32 now)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct newcwv *nc = inet_csk_ca(sk);
	u32 nvp = msecs_to_jiffies(READ_ONCE(nvp_ms));
	int i;

	if (nc->pipeack == NC_UNDEF ||
	    2ULL * nc->pipeack >= tcp_snd_cwnd(tp)) {
		nc->flags &= ~NC_F_NONVAL;
		nc->valid_stamp = now;
		return;
	}
	if (!(nc->flags & NC_F_NONVAL))
		WRITE_ONCE(nv_entries, READ_ONCE(nv_entries) + 1);
	nc->flags |= NC_F_NONVAL;

	/* Only in the open state: during recovery cwnd belongs to PRR. */
	if (inet_csk(sk)->icsk_ca_state != TCP_CA_Open)
		return;
	for (i = 0; i < NC_NVP_STEPS_MAX &&
		    (s32)(now - nc->valid_stamp) > (s32)nvp; i++) {
		tp->snd_ssthresh = max(tp->snd_ssthresh,
				       (3 * tcp_snd_cwnd(tp)) >> 2);
		tcp_snd_cwnd_set(tp, max(tcp_snd_cwnd(tp) >> 1, nc->iw));
		tp->snd_cwnd_stamp = now;
		nc->valid_stamp += nvp;
	}
	if ((s32)(now - nc->valid_stamp) > (s32)nvp)	/* very long idle */
		nc->valid_stamp = now;
}

static void newcwv_init(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct newcwv *nc = inet_csk_ca(sk);

	memset(nc, 0, sizeof(*nc));
	nc->flags = NC_F_INIT;
	nc_reset_pipeack(nc, tp);
	/* IW for 4.4.3: the window this connection started with, or the
	 * standard 10 if we are attached to a connection already sending.
	 */
	nc->iw = tp->data_segs_out ? TCP_INIT_CWND : tcp_snd_cwnd(tp);
	if (READ_ONCE(pacing))
		cmpxchg(&sk->sk_pacing_status, SK_PACING_NONE,
			SK_PACING_NEEDED);
}

/* Every ACK (before loss recovery processing): take pipeACK samples once
 * per round trip while not recovering, update the phase, and keep the
 * kernel's RFC 2861 decay from firing.
 */
static void newcwv_in_ack_event(struct sock *sk, u32 flags)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct newcwv *nc = inet_csk_ca(sk);
	u32 now = tcp_jiffies32, psp = nc_psp(tp);

	if (!(nc->flags & NC_F_INIT))
		return;
	tp->snd_cwnd_stamp = now;

	/* 4.2: samples measure the data acknowledged over one RTT; a round
	 * ends when everything outstanding at its start has been ACKed.
	 * No samples while recovering from congestion.
	 */
	if (inet_csk(sk)->icsk_ca_state <= TCP_CA_Disorder &&
	    !before(tp->snd_una, nc->round_end) &&
	    tp->delivered != nc->round_delivered) {
		nc_add_sample(nc, tp->delivered - nc->round_delivered, now, psp);
		nc->round_end = tp->snd_nxt;
		nc->round_delivered = tp->delivered;
	} else if (inet_csk(sk)->icsk_ca_state > TCP_CA_Disorder) {
		nc->round_end = tp->snd_nxt;
		nc->round_delivered = tp->delivered;
	}
	nc_update_pipeack(nc, now, psp);
	nc_check_phase(sk, now);
	/* Published by a connection that has sent more than it received: the
	 * server's side of a download, not the client's.
	 */
	if (tp->bytes_acked > tp->bytes_received) {
		WRITE_ONCE(last_pipeack, nc->pipeack);
		WRITE_ONCE(last_cwnd, tcp_snd_cwnd(tp));
	}
}

/* NewReno growth (tcp_reno_cong_avoid), but none in the non-validated
 * phase: the ACKs of a rate-limited sender do not show that a larger cwnd
 * is safe (4.3).
 */
static void newcwv_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct newcwv *nc = inet_csk_ca(sk);

	if (nc->flags & NC_F_NONVAL)
		return;
	tcp_reno_cong_avoid(sk, ack, acked);
}

/* Congestion detected (loss or ECN). Validated: Reno, cwnd / 2.
 * Non-validated (4.4.1): cwnd overstates what was in use, so the reduction
 * is based on max(pipeACK, LossFlightSize); the final cwnd is set when the
 * recovery completes (CA_EVENT_COMPLETE_CWR).
 */
static u32 newcwv_ssthresh(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct newcwv *nc = inet_csk_ca(sk);
	u32 used;

	if (!(nc->flags & NC_F_NONVAL))
		return max(tcp_snd_cwnd(tp) >> 1U, 2U);

	nc->loss_flight = tp->packets_out;	/* RFC 5681 FlightSize */
	nc->loss_pipeack = nc->pipeack == NC_UNDEF ? 0 : nc->pipeack;
	nc->loss_retrans = tp->total_retrans;
	nc->flags |= NC_F_NV_LOSS;
	used = max(nc->loss_pipeack, nc->loss_flight);
	return max(used >> 1, 2U);
}

/* 4.4.1, at the end of the recovery: cwnd = (max(pipeACK, LFS) - R) / 2,
 * at least one segment; ssthresh follows (as NewReno's cwnd = ssthresh),
 * at least 2; pipeACK becomes undefined, so the sender is validated.
 */
static void nc_end_nv_recovery(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct newcwv *nc = inet_csk_ca(sk);
	u32 used = max(nc->loss_pipeack, nc->loss_flight);
	u32 retrans = tp->total_retrans - nc->loss_retrans;
	u32 cwnd = used > retrans ? (used - retrans) >> 1 : 0;

	cwnd = max(cwnd, 1U);
	tcp_snd_cwnd_set(tp, cwnd);
	tp->snd_ssthresh = max(cwnd, 2U);
	nc->flags &= ~NC_F_NV_LOSS;
	nc_reset_pipeack(nc, tp);
}

static void newcwv_cwnd_event(struct sock *sk, enum tcp_ca_event ev)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct newcwv *nc = inet_csk_ca(sk);
	u32 now = tcp_jiffies32;

	if (!(nc->flags & NC_F_INIT))
		return;
	switch (ev) {
	case CA_EVENT_CWND_RESTART:
		/* Sent before tcp_cwnd_restart() shrinks cwnd after idle. */
		nc->saved_cwnd = tcp_snd_cwnd(tp);
		nc->saved_ssthresh = tp->snd_ssthresh;
		nc->flags |= NC_F_RESTART;
		break;
	case CA_EVENT_TX_START:
		/* First transmission with nothing in flight, e.g. after idle:
		 * keep the pre-idle cwnd (4.3), then see whether the idle
		 * time ended the NVP (4.4.3).
		 */
		if (nc->flags & NC_F_RESTART) {
			tcp_snd_cwnd_set(tp, max(tcp_snd_cwnd(tp), nc->saved_cwnd));
			tp->snd_ssthresh = nc->saved_ssthresh;
			nc->flags &= ~NC_F_RESTART;
		}
		tp->snd_cwnd_stamp = now;
		nc_update_pipeack(nc, now, nc_psp(tp));
		nc_check_phase(sk, now);
		break;
	case CA_EVENT_COMPLETE_CWR:
		/* Recovery or CWR finished (the kernel just set cwnd to
		 * ssthresh).
		 */
		if (nc->flags & NC_F_NV_LOSS)
			nc_end_nv_recovery(sk);
		break;
	case CA_EVENT_LOSS:
		/* RTO: Reno restarts from one segment up to the ssthresh set
		 * above; pipeACK measured before no longer applies.
		 */
		nc->flags &= ~NC_F_NV_LOSS;
		nc_reset_pipeack(nc, tp);
		break;
	default:
		break;
	}
}

/* A spurious reduction undone: forget the pending 4.4.1 adjustment. */
static u32 newcwv_undo_cwnd(struct sock *sk)
{
	struct newcwv *nc = inet_csk_ca(sk);

	nc->flags &= ~NC_F_NV_LOSS;
	return tcp_reno_undo_cwnd(sk);
}

static struct tcp_congestion_ops newcwv __read_mostly = {
	.init		= newcwv_init,
	.ssthresh	= newcwv_ssthresh,
	.cong_avoid	= newcwv_cong_avoid,
	.cwnd_event	= newcwv_cwnd_event,
	.in_ack_event	= newcwv_in_ack_event,
	.undo_cwnd	= newcwv_undo_cwnd,
	.owner		= THIS_MODULE,
	.name		= "newcwv",
};

static int __init newcwv_register(void)
{
	BUILD_BUG_ON(sizeof(struct newcwv) > ICSK_CA_PRIV_SIZE);
	pr_info("nvp_ms: %u, pacing: %u, no_filter: %u\n", nvp_ms, pacing,
		no_filter);
	return tcp_register_congestion_control(&newcwv);
}

static void __exit newcwv_unregister(void)
{
	tcp_unregister_congestion_control(&newcwv);
}

module_init(newcwv_register);
module_exit(newcwv_unregister);

MODULE_AUTHOR("netrepro");
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("NewReno with RFC 7661 congestion window validation (newCWV)");
