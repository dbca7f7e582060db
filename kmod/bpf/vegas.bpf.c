// SPDX-License-Identifier: GPL-2.0
/*
 * vegas.bpf.c - TCP Vegas (Brakmo & Peterson, "TCP Vegas: end to end
 * congestion avoidance on a global Internet", IEEE JSAC 13(8), 1995) as a
 * BPF struct_ops port of the kernel's tcp_vegas.
 *
 * Vegas compares the rate it expects, cwnd / BaseRTT, with the rate it gets,
 * cwnd / RTT, where BaseRTT is the smallest RTT ever measured and RTT the
 * smallest of the last round trip. Their difference, in segments, is the
 * number of its own segments it keeps queued in the network. Once per round
 * trip (when the ACK for the first segment sent in the previous round
 * arrives) and with at least 3 RTT samples in that round:
 *
 *  - in slow start, if diff > gamma, it leaves slow start: cwnd is set to
 *    the window the measured rate supports, min(cwnd, cwnd * BaseRTT / RTT
 *    + 1), and ssthresh to min(ssthresh, cwnd); else it slow-starts;
 *  - in congestion avoidance, cwnd -= 1 (and ssthresh = min(ssthresh, cwnd))
 *    if diff > beta, cwnd += 1 if diff < alpha, else it is left alone;
 *  - cwnd is kept within [2, snd_cwnd_clamp], and ssthresh is raised to 3/4
 *    of cwnd unless TCP is in CWR or Recovery (tcp_current_ssthresh()).
 *
 * Between those once-per-RTT points it only slow-starts (in slow start).
 * With fewer than 3 samples in a round, outside the Open state, and until a
 * full round has been measured after a restart (connection start, end of
 * recovery or loss, restart after idle), it is Reno. Loss response and undo
 * are Reno's: ssthresh = max(cwnd / 2, 2).
 *
 * As in the module (and unlike the paper, whose Diff is
 * cwnd * (RTT - BaseRTT) / RTT), diff = cwnd * (RTT - BaseRTT) / BaseRTT, in
 * 32-bit unsigned arithmetic, with RTTs in microseconds plus one. The RTT
 * filters and restart rules are in vegas.h, shared with yeah.bpf.c.
 *
 * Parameters (map vegas_params; the module's module_params, same defaults):
 *   alpha  2  segments  increase cwnd while diff < alpha
 *   beta   4  segments  decrease cwnd while diff > beta
 *   gamma  1  segments  leave slow start once diff > gamma
 * The module declares them int and compares them with the unsigned diff,
 * so they act as unsigned there too: every __u32 value is accepted as is
 * (nothing in the arithmetic depends on them, so no clamp is needed), and
 * a negative value written as its 32-bit pattern behaves as in the module.
 *
 * Differences from the module:
 *  - no get_info (ss -i shows no "vegas:" line), which BPF does not need;
 *  - an in_ack_event callback, not in the module, that only runs the
 *    ssthresh guard (as scalable.bpf.c); the guard (ss_guard.h) may put
 *    back an ssthresh that no congestion control set.
 *
 * Build: make -C kmod bpf. Load: bpftool struct_ops register vegas.bpf.o
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "port.h"
#include "vegas.h"

char _license[] SEC("license") = "GPL";

#define VEGAS_ALPHA	2U	/* segments */
#define VEGAS_BETA	4U	/* segments */
#define VEGAS_GAMMA	1U	/* segments */

/* Map value: the module's parameters, then the counters (port.h). */
struct vegas_params {
	__u32 alpha;
	__u32 beta;
	__u32 gamma;
	PORT_COUNTERS;
};
PORT_PARAM_MAP(vegas_params, vegas_params)

/* 32 bytes of icsk_ca_priv's 104 */
struct vegas_ca {
	struct vegas_state v;
	struct ss_guard guard;
};
_Static_assert(sizeof(struct vegas_ca) <=
	       sizeof(((struct inet_connection_sock *)0)->icsk_ca_priv),
	       "struct vegas_ca does not fit in icsk_ca_priv");

SEC("struct_ops/vegas_init")
void BPF_PROG(vegas_init_cb, struct sock *sk)
{
	struct vegas_ca *ca = PORT_CA(vegas_ca, sk);

	PORT_START(&ca->guard, sk, vegas_params_get());
	vegas_init(&ca->v, tcp_sk(sk));
}

SEC("struct_ops/vegas_pkts_acked")
void BPF_PROG(vegas_pkts_acked_cb, struct sock *sk,
	      const struct ack_sample *sample)
{
	struct vegas_ca *ca = PORT_CA(vegas_ca, sk);

	PORT_GUARD(&ca->guard, sk, vegas_params_get());
	vegas_pkts_acked(&ca->v, sample->rtt_us);
}

SEC("struct_ops/vegas_set_state")
void BPF_PROG(vegas_set_state_cb, struct sock *sk, __u8 new_state)
{
	struct vegas_ca *ca = PORT_CA(vegas_ca, sk);

	PORT_GUARD(&ca->guard, sk, vegas_params_get());
	vegas_set_state(&ca->v, tcp_sk(sk), new_state);
}

SEC("struct_ops/vegas_cwnd_event")
void BPF_PROG(vegas_cwnd_event_cb, struct sock *sk, enum tcp_ca_event ev)
{
	struct vegas_ca *ca = PORT_CA(vegas_ca, sk);

	PORT_GUARD(&ca->guard, sk, vegas_params_get());
	vegas_cwnd_event(&ca->v, tcp_sk(sk), ev);
}

SEC("struct_ops/vegas_in_ack_event")
void BPF_PROG(vegas_in_ack_event, struct sock *sk, __u32 flags)
{
	PORT_GUARD(&PORT_CA(vegas_ca, sk)->guard, sk, vegas_params_get());
}

/* The once-per-RTT Vegas decision, from at least 3 samples of the round. */
static __always_inline void vegas_adjust(struct sock *sk, struct vegas_ca *ca,
					 struct vegas_params *p, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 rtt = ca->v.minRTT, base = ca->v.baseRTT;
	__u32 cwnd = tp->snd_cwnd, diff, target;

	/* the window the measured rate fills at the propagation delay */
	target = (__u32)((__u64)cwnd * base / rtt);
	/* segments queued, in the module's form and 32-bit arithmetic */
	diff = cwnd * (rtt - base) / base;

	if (tcp_in_slow_start(tp)) {
		if (diff > PORT_PARAM(p, gamma, VEGAS_GAMMA)) {
			/* too fast: go to the actual rate, and avoid congestion */
			tp->snd_cwnd = min(cwnd, target + 1);
			tp->snd_ssthresh = vegas_ssthresh_cap(tp);
		} else {
			tcp_slow_start(tp, acked);
		}
	} else if (diff > PORT_PARAM(p, beta, VEGAS_BETA)) {
		tp->snd_cwnd = cwnd - 1;
		tp->snd_ssthresh = vegas_ssthresh_cap(tp);
	} else if (diff < PORT_PARAM(p, alpha, VEGAS_ALPHA)) {
		tp->snd_cwnd = cwnd + 1;
	}

	if (tp->snd_cwnd < 2)
		tp->snd_cwnd = 2;
	else if (tp->snd_cwnd > tp->snd_cwnd_clamp)
		tp->snd_cwnd = tp->snd_cwnd_clamp;

	tp->snd_ssthresh = tcp_current_ssthresh(sk);
	ca->guard.ss_last = tp->snd_ssthresh;	/* we set it ourselves */
}

SEC("struct_ops/vegas_cong_avoid")
void BPF_PROG(vegas_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct vegas_ca *ca = PORT_CA(vegas_ca, sk);
	struct vegas_params *p = vegas_params_get();

	PORT_GUARD(&ca->guard, sk, p);

	if (!ca->v.doing_vegas_now) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}

	if (!after(ack, ca->v.beg_snd_nxt)) {
		/* within the round: only slow start moves cwnd */
		if (tcp_in_slow_start(tp))
			tcp_slow_start(tp, acked);
		return;
	}

	/* A round trip is over: the next ends when what is sent now is ACKed. */
	ca->v.beg_snd_nxt = tp->snd_nxt;

	/* Two samples or fewer in a round are likely all delayed ACKs. */
	if (ca->v.cntRTT <= 2)
		tcp_reno_cong_avoid(sk, ack, acked);
	else
		vegas_adjust(sk, ca, p, acked);

	ca->v.cntRTT = 0;
	ca->v.minRTT = VEGAS_RTT_NONE;
}

/* tcp_reno_ssthresh(), as the module uses */
SEC("struct_ops/vegas_ssthresh")
__u32 BPF_PROG(vegas_ssthresh, struct sock *sk)
{
	struct vegas_ca *ca = PORT_CA(vegas_ca, sk);
	__u32 ss;

	PORT_GUARD(&ca->guard, sk, vegas_params_get());
	ss = reno_ssthresh(tcp_sk(sk));
	ca->guard.ss_last = ss;		/* the kernel stores what we return */
	return ss;
}

/* tcp_reno_undo_cwnd(), as the module uses */
SEC("struct_ops/vegas_undo_cwnd")
__u32 BPF_PROG(vegas_undo_cwnd, struct sock *sk)
{
	PORT_GUARD(&PORT_CA(vegas_ca, sk)->guard, sk, vegas_params_get());
	return reno_undo_cwnd(tcp_sk(sk));
}

SEC(".struct_ops")
struct tcp_congestion_ops PORT_OPS(vegas) = {
	.init		= (void *)vegas_init_cb,
	.ssthresh	= (void *)vegas_ssthresh,
	.undo_cwnd	= (void *)vegas_undo_cwnd,
	.cong_avoid	= (void *)vegas_cong_avoid,
	.pkts_acked	= (void *)vegas_pkts_acked_cb,
	.set_state	= (void *)vegas_set_state_cb,
	.cwnd_event	= (void *)vegas_cwnd_event_cb,
	.in_ack_event	= (void *)vegas_in_ack_event,
	.name		= PORT_NAME(vegas),
};
