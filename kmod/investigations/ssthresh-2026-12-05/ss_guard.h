/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ss_guard.h - the ssthresh guard shared by this project's BPF congestion
 * controls (cubic_plus, reno_beta, newcwv).
 *
 * On the 6.18 kernel these were developed on, every BPF struct_ops
 * congestion control tested (even a pass-through wrapper around the
 * kernel's own tcp_reno_* kfuncs) intermittently found tp->snd_ssthresh
 * overwritten, between two of its callbacks, with a value like 47506880
 * that no congestion-control code computed; the built-in reno and cubic
 * never showed it under the same test. Each callback therefore checks that
 * ssthresh is still something TCP could have set: infinite, or at most the
 * largest of the last value seen, cwnd, prior_cwnd and the highest cwnd
 * seen (undo, restart after idle and CWV only raise ssthresh up to about
 * cwnd). Otherwise it puts the last value back, and the program counts the
 * repair in its parameter map's ss_repairs, so that an experiment can see
 * and discard affected runs. See kmod/README.md.
 */
#ifndef NETREPRO_SS_GUARD_H
#define NETREPRO_SS_GUARD_H

#define TCP_INFINITE_SSTHRESH	0x7fffffff

/* Per-connection state, a member of each program's icsk_ca_priv struct. */
struct ss_guard {
	__u32 ss_last;		/* ssthresh as last seen or set */
	__u32 cwnd_hi;		/* highest cwnd seen */
	__u32 ss_pending;	/* 1: ssthresh() returned ss_last, set_state not yet run */
};

/* At init: start from what the socket has now. */
static __always_inline void ss_guard_start(struct ss_guard *g,
					   const struct tcp_sock *tp)
{
	g->ss_last = tp->snd_ssthresh;
	g->cwnd_hi = tp->snd_cwnd;
	g->ss_pending = 0;
}

/*
 * The corruption is of the value ssthresh() returns: the kernel stores it in
 * tp->snd_ssthresh (tcp_init_cwnd_reduction, tcp_enter_loss) and, on this
 * kernel, now and then stores a stale stack word instead. Every path that
 * takes that value calls set_state next (tcp_enter_recovery, tcp_enter_cwr,
 * tcp_enter_loss), before anything reads snd_ssthresh: the rate reduction
 * (PRR) that turns ssthresh into a window runs later in the same ACK. So
 * ssthresh() records what it returns (ss_guard_returned) and set_state
 * writes that value into snd_ssthresh itself when the kernel stored another
 * (ss_guard_settle): the window reduction then never sees the stale word.
 * The value written is the one ssthresh() computed, so the algorithm is the
 * module's; set_state counts each rewrite (ss_caught), the evidence that the
 * return was altered and put right before use.
 */
static __always_inline __u32 ss_guard_returned(struct ss_guard *g, __u32 ss)
{
	g->ss_last = ss;
	g->ss_pending = 1;
	return ss;
}

/* In set_state, first: true when snd_ssthresh was not what ssthresh()
 * returned and has been set to it. */
static __always_inline bool ss_guard_settle(struct ss_guard *g,
					    struct tcp_sock *tp)
{
	if (!g->ss_pending)
		return false;
	g->ss_pending = 0;
	if (tp->snd_ssthresh == g->ss_last)
		return false;
	tp->snd_ssthresh = g->ss_last;
	return true;
}

/* Check ssthresh; true when it was implausible and has been put back. */
static __always_inline bool ss_guard_check(struct ss_guard *g,
					   struct tcp_sock *tp)
{
	__u32 ss = tp->snd_ssthresh, bound;

	if (tp->snd_cwnd > g->cwnd_hi)
		g->cwnd_hi = tp->snd_cwnd;
	if (ss == g->ss_last || ss == TCP_INFINITE_SSTHRESH || !g->ss_last) {
		g->ss_last = ss;
		return false;
	}
	bound = g->ss_last == TCP_INFINITE_SSTHRESH ? 0 : g->ss_last;
	if (g->cwnd_hi > bound)
		bound = g->cwnd_hi;
	if (tp->prior_cwnd > bound)
		bound = tp->prior_cwnd;
	if (ss > bound) {
		tp->snd_ssthresh = g->ss_last;
		return true;
	}
	g->ss_last = ss;
	return false;
}

#endif /* NETREPRO_SS_GUARD_H */
