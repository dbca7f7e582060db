/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vegas.h - the Vegas part shared by the BPF ports vegas.bpf.c and
 * yeah.bpf.c.
 *
 * The kernel's tcp_yeah calls four of tcp_vegas's own functions (its init,
 * set_state, pkts_acked and cwnd_event callbacks) on a struct vegas that
 * sits at the head of its private state. This kernel exports no
 * tcp_vegas_* kfuncs, so both ports take that part from here instead:
 *
 *  - struct vegas_state, the per-connection RTT bookkeeping;
 *  - vegas_init(), vegas_enable(), vegas_disable(): the (re)start rules;
 *  - vegas_pkts_acked(): the RTT filters (Brakmo & Peterson 1995, section
 *    3.2): BaseRTT, the smallest RTT ever seen, and the smallest RTT seen in
 *    the current round trip, with a count of samples in that round trip;
 *  - vegas_set_state(), vegas_cwnd_event(): the state and event rules;
 *  - vegas_ssthresh_cap() and tcp_current_ssthresh(): the ssthresh
 *    arithmetic Vegas's cong_avoid uses when it leaves slow start or
 *    backs off.
 *
 * Units are those of the module: RTTs in microseconds, plus one so that
 * no RTT is ever 0; 0x7fffffff means "no sample yet".
 *
 * None of these helpers run the ssthresh guard or count anything: the
 * callers' struct_ops programs do that (port.h), once per callback.
 *
 * Users must include "vmlinux.h", the libbpf headers and "port.h" first.
 */
#ifndef NETREPRO_VEGAS_H
#define NETREPRO_VEGAS_H

#define VEGAS_RTT_NONE		0x7fffffffU	/* no RTT sample yet */

/* TCPF_CA_CWR | TCPF_CA_Recovery (include/net/tcp.h; #defines, so not in
 * vmlinux.h): the states in which TCP is reducing cwnd.
 */
#define VEGAS_TCPF_CWND_REDUCTION	((1U << TCP_CA_CWR) | (1U << TCP_CA_Recovery))

/*
 * Per-connection Vegas state: the module's struct vegas, field for field
 * and in the same types, 24 bytes. cntRTT is 16 bits as in the module (it
 * is reset every round trip, so it cannot wrap in practice).
 */
struct vegas_state {
	__u32 beg_snd_nxt;	/* snd_nxt when the current round trip began */
	__u32 beg_snd_una;	/* yeah only: its previous beg_snd_nxt (never read) */
	__u32 beg_snd_cwnd;	/* yeah only: cwnd at the round's start (never read) */
	__u8 doing_vegas_now;	/* 1: take samples and adjust once per RTT */
	__u16 cntRTT;		/* RTT samples in the current round trip */
	__u32 minRTT;		/* smallest RTT of this round trip, us (+1) */
	__u32 baseRTT;		/* smallest RTT ever seen, us (+1) */
};

/*
 * Start a fresh round trip of measurements. Vegas cannot judge a window from
 * samples that predate a restart (connection start, RTO, end of recovery,
 * restart after idle): it waits until everything sent from now on has been
 * acknowledged.
 */
static __always_inline void vegas_enable(struct vegas_state *v,
					 const struct tcp_sock *tp)
{
	v->doing_vegas_now = 1;
	v->beg_snd_nxt = tp->snd_nxt;
	v->cntRTT = 0;
	v->minRTT = VEGAS_RTT_NONE;
}

/* Stop taking Vegas decisions (outside the Open state). */
static __always_inline void vegas_disable(struct vegas_state *v)
{
	v->doing_vegas_now = 0;
}

/* The module's init: forget BaseRTT too, and start measuring. */
static __always_inline void vegas_init(struct vegas_state *v,
				       const struct tcp_sock *tp)
{
	v->baseRTT = VEGAS_RTT_NONE;
	vegas_enable(v, tp);
}

/*
 * One RTT sample (rtt_us < 0: the ACK carried none). Both filters are
 * minima: BaseRTT over the whole connection (the propagation delay), minRTT
 * over this round trip (propagation plus queueing, with the minimum
 * filtering out the extra delay of delayed ACKs).
 */
static __always_inline void vegas_pkts_acked(struct vegas_state *v,
					     __s32 rtt_us)
{
	__u32 vrtt;

	if (rtt_us < 0)
		return;
	vrtt = (__u32)rtt_us + 1;	/* never 0 */
	if (vrtt < v->baseRTT)
		v->baseRTT = vrtt;
	if (vrtt < v->minRTT)
		v->minRTT = vrtt;
	v->cntRTT++;
}

/* Entering Open restarts the measurements; any other state stops them. */
static __always_inline void vegas_set_state(struct vegas_state *v,
					    const struct tcp_sock *tp,
					    __u8 ca_state)
{
	if (ca_state == TCP_CA_Open)
		vegas_enable(v, tp);
	else
		vegas_disable(v);
}

/*
 * Sending again after idle (TX_START) or after a cwnd restart: the samples
 * and even BaseRTT are stale, so start over as at connection start.
 */
static __always_inline void vegas_cwnd_event(struct vegas_state *v,
					     const struct tcp_sock *tp,
					     enum tcp_ca_event ev)
{
	if (ev == CA_EVENT_CWND_RESTART || ev == CA_EVENT_TX_START)
		vegas_init(v, tp);
}

/* The ssthresh Vegas sets when it cuts cwnd itself: never above cwnd. */
static __always_inline __u32 vegas_ssthresh_cap(const struct tcp_sock *tp)
{
	return min(tp->snd_ssthresh, tp->snd_cwnd);
}

/* include/net/tcp.h: in CWR or Recovery, TCP is reducing cwnd. */
static __always_inline bool tcp_in_cwnd_reduction(const struct sock *sk)
{
	__u8 state = BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state);

	return (VEGAS_TCPF_CWND_REDUCTION >> (state & 31)) & 1;
}

/*
 * include/net/tcp.h's tcp_current_ssthresh(): outside a reduction, ssthresh
 * is raised to at least 3/4 of cwnd, so that after a restart TCP slow-starts
 * quickly back to where it was.
 */
static __always_inline __u32 tcp_current_ssthresh(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (tcp_in_cwnd_reduction(sk))
		return tp->snd_ssthresh;
	return max(tp->snd_ssthresh,
		   (tp->snd_cwnd >> 1) + (tp->snd_cwnd >> 2));
}

#endif /* NETREPRO_VEGAS_H */
