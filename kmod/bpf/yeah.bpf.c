// SPDX-License-Identifier: GPL-2.0
/*
 * yeah.bpf.c - YeAH-TCP (Baiocchi, Castellani & Vacirca, "YeAH-TCP: yet
 * another highspeed TCP", PFLDnet 2007) as a BPF struct_ops port of the
 * kernel's tcp_yeah.
 *
 * YeAH runs in one of two modes, chosen once per round trip from a
 * Vegas-style estimate of its own backlog in the bottleneck queue,
 * Q = cwnd * (RTT - BaseRTT) / RTT (RTT the smallest sample of the round,
 * BaseRTT the smallest ever, us plus one), and of the queueing delay
 * RTT - BaseRTT:
 *
 *  - Fast mode (Q <= 80 segments and RTT - BaseRTT <= BaseRTT / 8): above
 *    ssthresh cwnd grows as Scalable TCP does, one segment per
 *    min(cwnd, 100) segments ACKed. After more than 50 such rounds in a
 *    row, reno_count (below) is reset to 2.
 *  - Slow mode (otherwise): Reno's one segment per cwnd ACKed. If Q > 80 and
 *    cwnd > reno_count, it also drains the queue at once ("precautionary
 *    decongestion"): cwnd -= min(Q, cwnd / 2), not below reno_count, and
 *    ssthresh = cwnd. reno_count, YeAH's estimate of what a competing Reno
 *    flow would have, starts at max(cwnd / 2, 2) and grows by one per slow
 *    round; doing_reno_now counts the slow rounds in a row (up to 2^24 - 1).
 *  - Loss (ssthresh): after fewer than 16 slow rounds in a row (no Reno
 *    competitor detected), cwnd is cut by the last Q, but by at least
 *    cwnd / 8 and at most max(cwnd / 2, 2); otherwise by max(cwnd / 2, 2),
 *    as Reno. ssthresh = max(cwnd - cut, 2) (signed, as the module).
 *    reno_count is halved (not below 2).
 *
 * Slow start is Reno's; the round trips and the RTT filters are Vegas's
 * (vegas.h, the code vegas.bpf.c uses), as the module calls tcp_vegas's own
 * init, set_state, pkts_acked and cwnd_event. With 2 samples or fewer in a
 * round the mode is left as it was. Undo is Reno's. The mode is decided
 * whether or not Vegas is "doing_vegas_now" (the module ignores that flag).
 *
 * The module has no parameters: its constants (alpha 80, gamma 1, delta 3,
 * epsilon 1, phy 8, rho 16, zeta 50) are fixed, and the Vegas functions it
 * uses do not read tcp_vegas's alpha, beta or gamma (only tcp_vegas's own
 * cong_avoid does, which YeAH does not call). The map holds the counters
 * of port.h and three of netrepro's own, which the module does not have:
 * fast_rounds and slow_rounds (the rounds decided in each mode) and
 * decongestions (slow rounds that drained the queue), over all connections.
 *
 * Differences from the module:
 *  - the module lowers tp->snd_cwnd_clamp to 0xffffffff / 128 at init so
 *    that cwnd * 128 cannot overflow; struct_ops programs may not write
 *    snd_cwnd_clamp, so this port caps cwnd at that value itself after each
 *    increase in cong_avoid (where the module's clamp would stop it). Other
 *    places where TCP applies the clamp (e.g. restoring a cached cwnd) are
 *    not capped; the cap is 33554431 segments, far beyond any experiment;
 *  - no get_info (ss -i shows no "vegas:" line), which BPF does not need;
 *  - an in_ack_event callback, not in the module, that only runs the
 *    ssthresh guard (as scalable.bpf.c); the guard (ss_guard.h) may put
 *    back an ssthresh that no congestion control set.
 *
 * Build: make -C kmod bpf. Load: bpftool struct_ops register yeah.bpf.o
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "port.h"
#include "vegas.h"

char _license[] SEC("license") = "GPL";

#define YEAH_ALPHA	80U	/* segments queued that mean congestion */
#define YEAH_GAMMA	1U	/* decongestion removes Q / gamma segments */
#define YEAH_DELTA	3	/* a loss cuts at least cwnd >> delta */
#define YEAH_EPSILON	1	/* decongestion cuts at most cwnd >> epsilon */
#define YEAH_PHY	8U	/* queueing delay above BaseRTT / phy is slow */
#define YEAH_RHO	16U	/* slow rounds in a row that mean Reno competes */
#define YEAH_ZETA	50U	/* fast rounds in a row that reset reno_count */
#define YEAH_SCALABLE_AI_CNT	100U	/* fast mode: 1 segment per 100 ACKed */
#define YEAH_SLOW_MAX	0xffffffU	/* doing_reno_now saturates here */
#define YEAH_CWND_MAX	(0xffffffffU / 128)	/* the module's cwnd clamp */

/* Map value: the counters (port.h), then the rounds spent in each mode and
 * the precautionary decongestions, over all connections: netrepro's own
 * counters, for tests and experiments to see the modes switch (the module
 * has no such counters).
 */
struct yeah_params {
	PORT_COUNTERS;
	__u32 fast_rounds;	/* rounds decided fast (Scalable) */
	__u32 slow_rounds;	/* rounds decided slow (Reno) */
	__u32 decongestions;	/* slow rounds that drained the queue */
};
PORT_PARAM_MAP(yeah_params, yeah_params)

/* The module's struct yeah (Vegas's state first), then the guard: 48 bytes
 * of icsk_ca_priv's 104.
 */
struct yeah_ca {
	struct vegas_state v;
	__u32 lastQ;		/* the last round's backlog estimate, segments */
	__u32 doing_reno_now;	/* slow rounds in a row; 0 = fast mode */
	__u32 reno_count;	/* estimated cwnd of a competing Reno flow */
	__u32 fast_count;	/* fast rounds since the last reset or loss */
	struct ss_guard guard;
};
_Static_assert(sizeof(struct yeah_ca) <=
	       sizeof(((struct inet_connection_sock *)0)->icsk_ca_priv),
	       "struct yeah_ca does not fit in icsk_ca_priv");

SEC("struct_ops/yeah_init")
void BPF_PROG(yeah_init, struct sock *sk)
{
	struct yeah_ca *ca = PORT_CA(yeah_ca, sk);

	PORT_START(&ca->guard, sk, yeah_params_get());
	vegas_init(&ca->v, tcp_sk(sk));
	ca->doing_reno_now = 0;
	ca->lastQ = 0;
	ca->reno_count = 2;
	/* the module's snd_cwnd_clamp = min(clamp, YEAH_CWND_MAX): see above */
}

SEC("struct_ops/yeah_pkts_acked")
void BPF_PROG(yeah_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct yeah_ca *ca = PORT_CA(yeah_ca, sk);

	PORT_GUARD(&ca->guard, sk, yeah_params_get());
	vegas_pkts_acked(&ca->v, sample->rtt_us);
}

SEC("struct_ops/yeah_set_state")
void BPF_PROG(yeah_set_state, struct sock *sk, __u8 new_state)
{
	struct yeah_ca *ca = PORT_CA(yeah_ca, sk);

	PORT_GUARD(&ca->guard, sk, yeah_params_get());
	vegas_set_state(&ca->v, tcp_sk(sk), new_state);
}

SEC("struct_ops/yeah_cwnd_event")
void BPF_PROG(yeah_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct yeah_ca *ca = PORT_CA(yeah_ca, sk);

	PORT_GUARD(&ca->guard, sk, yeah_params_get());
	vegas_cwnd_event(&ca->v, tcp_sk(sk), ev);
}

SEC("struct_ops/yeah_in_ack_event")
void BPF_PROG(yeah_in_ack_event, struct sock *sk, __u32 flags)
{
	PORT_GUARD(&PORT_CA(yeah_ca, sk)->guard, sk, yeah_params_get());
}

/* End of a round with at least 3 samples: choose the mode for the next. */
static __always_inline void yeah_round(struct tcp_sock *tp, struct yeah_ca *ca,
				       struct yeah_params *p)
{
	__u32 rtt = ca->v.minRTT, base = ca->v.baseRTT;
	__u32 queue, cut;

	/* backlog: cwnd * queueing delay / RTT, truncated to 32 bits */
	queue = (__u32)((__u64)tp->snd_cwnd * (rtt - base) / rtt);

	if (queue > YEAH_ALPHA || rtt - base > base / YEAH_PHY) {
		/* slow mode */
		if (queue > YEAH_ALPHA && tp->snd_cwnd > ca->reno_count) {
			/* precautionary decongestion: drain our queue now */
			cut = min(queue / YEAH_GAMMA,
				  tp->snd_cwnd >> YEAH_EPSILON);
			tp->snd_cwnd = max(tp->snd_cwnd - cut, ca->reno_count);
			tp->snd_ssthresh = tp->snd_cwnd;
			ca->guard.ss_last = tp->snd_ssthresh;
			if (p)
				__sync_fetch_and_add(&p->decongestions, 1);
		}
		if (p)
			__sync_fetch_and_add(&p->slow_rounds, 1);
		if (ca->reno_count <= 2)
			ca->reno_count = max(tp->snd_cwnd >> 1, 2U);
		else
			ca->reno_count++;
		ca->doing_reno_now = min(ca->doing_reno_now + 1, YEAH_SLOW_MAX);
	} else {
		/* fast mode */
		if (p)
			__sync_fetch_and_add(&p->fast_rounds, 1);
		ca->fast_count++;
		if (ca->fast_count > YEAH_ZETA) {
			ca->reno_count = 2;
			ca->fast_count = 0;
		}
		ca->doing_reno_now = 0;
	}
	ca->lastQ = queue;
}

SEC("struct_ops/yeah_cong_avoid")
void BPF_PROG(yeah_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct yeah_ca *ca = PORT_CA(yeah_ca, sk);
	struct yeah_params *p = yeah_params_get();

	PORT_GUARD(&ca->guard, sk, p);
	if (!tcp_is_cwnd_limited(sk))
		return;

	if (tcp_in_slow_start(tp))
		acked = tcp_slow_start(tp, acked);
	if (acked) {
		if (!ca->doing_reno_now)	/* fast: Scalable */
			tcp_cong_avoid_ai(tp, min(tp->snd_cwnd,
						  YEAH_SCALABLE_AI_CNT), acked);
		else				/* slow: Reno */
			tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked);
	}
	if (tp->snd_cwnd > YEAH_CWND_MAX)	/* the module's clamp */
		tp->snd_cwnd = YEAH_CWND_MAX;

	if (!after(ack, ca->v.beg_snd_nxt))
		return;

	/* A round trip is over (Vegas's rounds). */
	if (ca->v.cntRTT > 2)
		yeah_round(tp, ca, p);

	ca->v.beg_snd_una = ca->v.beg_snd_nxt;
	ca->v.beg_snd_nxt = tp->snd_nxt;
	ca->v.beg_snd_cwnd = tp->snd_cwnd;
	ca->v.cntRTT = 0;
	ca->v.minRTT = VEGAS_RTT_NONE;
}

SEC("struct_ops/yeah_ssthresh")
__u32 BPF_PROG(yeah_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct yeah_ca *ca = PORT_CA(yeah_ca, sk);
	__u32 cwnd = tp->snd_cwnd, half = max(cwnd >> 1, 2U), cut, ss;

	PORT_GUARD(&ca->guard, sk, yeah_params_get());
	if (ca->doing_reno_now < YEAH_RHO) {
		/* no Reno competitor: remove our backlog, within bounds */
		cut = min(ca->lastQ, half);
		cut = max(cut, cwnd >> YEAH_DELTA);
	} else {
		cut = half;			/* behave as Reno */
	}
	ca->fast_count = 0;
	ca->reno_count = max(ca->reno_count >> 1, 2U);

	/* max_t(int, cwnd - cut, 2) */
	ss = (__s32)(cwnd - cut) > 2 ? cwnd - cut : 2;
	ca->guard.ss_last = ss;		/* the kernel stores what we return */
	return ss;
}

/* tcp_reno_undo_cwnd(), as the module uses */
SEC("struct_ops/yeah_undo_cwnd")
__u32 BPF_PROG(yeah_undo_cwnd, struct sock *sk)
{
	PORT_GUARD(&PORT_CA(yeah_ca, sk)->guard, sk, yeah_params_get());
	return reno_undo_cwnd(tcp_sk(sk));
}

SEC(".struct_ops")
struct tcp_congestion_ops PORT_OPS(yeah) = {
	.init		= (void *)yeah_init,
	.ssthresh	= (void *)yeah_ssthresh,
	.undo_cwnd	= (void *)yeah_undo_cwnd,
	.cong_avoid	= (void *)yeah_cong_avoid,
	.pkts_acked	= (void *)yeah_pkts_acked,
	.set_state	= (void *)yeah_set_state,
	.cwnd_event	= (void *)yeah_cwnd_event,
	.in_ack_event	= (void *)yeah_in_ack_event,
	.name		= PORT_NAME(yeah),
};
