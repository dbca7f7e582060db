// SPDX-License-Identifier: GPL-2.0
/*
 * westwood.bpf.c - TCP Westwood+ (Mascolo, Casetti, Gerla, Sanadidi and
 * Wang, "TCP Westwood: bandwidth estimation for enhanced transport over
 * wireless links", MobiCom 2001; Grieco and Mascolo, "Performance
 * evaluation and comparison of Westwood+, New Reno and Vegas TCP
 * congestion control", CCR 34(2), 2004) as a BPF struct_ops port of the
 * kernel's tcp_westwood.
 *
 * The window grows as Reno's (slow start, then one segment per window,
 * the kernel's own tcp_reno_cong_avoid). What Westwood+ changes is the
 * window after congestion: instead of halving blindly, it sets
 *
 *     ssthresh = max(BWE * RTTmin / MSS, 2)
 *
 * the window that just fills the path at the bandwidth the flow has been
 * getting, so a random (non-congestion) loss costs little. It does so when
 * a CWR or fast-recovery episode completes (cwnd = ssthresh too) and on an
 * RTO (ssthresh only; cwnd restarts from the loss window as always). The
 * ssthresh callback itself is Reno's halving, which sets the target of the
 * rate-halving reduction during the episode, as in the module.
 *
 * BWE: every ACK adds the bytes it acknowledges (from snd_una; on the slow
 * path, duplicate ACKs count one MSS each, and a cumulative ACK after them
 * only what was not counted yet) to a sample; once per RTT, but not more
 * often than every 50 ms (HZ / 20 jiffies), the sample over its duration
 * (bytes per jiffy) goes through two cascaded 7/8 low-pass filters. RTTmin
 * is the smallest jiffy-rounded RTT since the last RTO (the first after an
 * RTO replaces it), starting at 20 s. All in jiffies, as in the module.
 *
 * The module has no parameters; the map holds only the counters.
 *
 * Callbacks: init, ssthresh (Reno), cong_avoid (Reno), undo_cwnd (Reno),
 * cwnd_event, in_ack_event, pkts_acked, as the module. get_info (the
 * module reports RTT and RTTmin over inet_diag as vegas info) is left out:
 * BPF congestion controls cannot provide it.
 *
 * Differences from the module: none in the arithmetic (all 32-bit, as
 * there, including the product BWE * RTTmin). The two places that write
 * tp->snd_ssthresh here (CA_EVENT_COMPLETE_CWR, CA_EVENT_LOSS) are fields
 * a struct_ops program may write, and the port records the value as the
 * ssthresh guard's last (ss_guard.h). The guard may put back an ssthresh
 * that something outside the algorithm overwrote; such repairs are counted
 * in ss_repairs. The module would divide by zero if mss_cache were 0; BPF
 * division by zero gives 0 here, so the result would be 2 (mss_cache is
 * never 0 on a connected socket).
 *
 * Build: make -C kmod bpf. Load: bpftool struct_ops register westwood.bpf.o
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "port.h"

char _license[] SEC("license") = "GPL";

#define WW_RTT_MIN	(HZ / 20)	/* shortest sample window, 50 ms */
#define WW_INIT_RTT	(20 * HZ)	/* RTT and RTTmin before any sample */

/* Map value: only the counters (port.h). */
struct westwood_params {
	PORT_COUNTERS;
};
PORT_PARAM_MAP(westwood_params, westwood_params)

/* Per-connection state, 48 bytes of icsk_ca_priv. */
struct westwood_ca {
	__u32 bw_ns_est;	/* first filter's output, bytes per jiffy */
	__u32 bw_est;		/* BWE: second filter's output */
	__u32 rtt_win_sx;	/* jiffies when this sample began */
	__u32 bk;		/* bytes ACKed in this sample */
	__u32 snd_una;		/* snd_una at the last ACK */
	__u32 cumul_ack;	/* bytes credited to the last slow-path ACK */
	__u32 accounted;	/* bytes credited ahead by duplicate ACKs */
	__u32 rtt;		/* last RTT sample, jiffies */
	__u32 rtt_min;		/* RTTmin, jiffies */
	__u8 first_ack;		/* no ACK seen yet */
	__u8 reset_rtt_min;	/* the next RTT replaces RTTmin */
	struct ss_guard guard;
};

/* One step of the 7/8 low-pass filter. */
static __always_inline __u32 ww_lowpass(__u32 old, __u32 sample)
{
	return (7 * old + sample) >> 3;
}

/* Close a sample of `span` jiffies: feed its rate to both filters. */
static __always_inline void ww_filter(struct westwood_ca *w, __u32 span)
{
	if (w->bw_ns_est == 0 && w->bw_est == 0) {
		/* empty filters start at the first sample */
		w->bw_ns_est = w->bk / span;
		w->bw_est = w->bw_ns_est;
	} else {
		w->bw_ns_est = ww_lowpass(w->bw_ns_est, w->bk / span);
		w->bw_est = ww_lowpass(w->bw_est, w->bw_ns_est);
	}
}

/* Close the sample if it has lasted more than max(RTT, 50 ms). */
static __always_inline void ww_update_window(const struct sock *sk,
					     struct westwood_ca *w)
{
	__u32 now = tcp_jiffies32;
	/* signed in the module, then compared as unsigned against the bound */
	__s32 span = (__s32)(now - w->rtt_win_sx);

	/* the first ACK only sets the reference snd_una */
	if (w->first_ack) {
		w->snd_una = tcp_sk(sk)->snd_una;
		w->first_ack = 0;
	}

	if (w->rtt && (__u32)span > max(w->rtt, WW_RTT_MIN)) {
		ww_filter(w, (__u32)span);
		w->bk = 0;
		w->rtt_win_sx = now;
	}
}

static __always_inline void ww_update_rtt_min(struct westwood_ca *w)
{
	if (w->reset_rtt_min) {
		w->rtt_min = w->rtt;
		w->reset_rtt_min = 0;
	} else {
		w->rtt_min = min(w->rtt, w->rtt_min);
	}
}

/* Bytes to credit to a slow-path ACK, duplicate ACKs counted ahead. */
static __always_inline __u32 ww_acked_count(const struct sock *sk,
					    struct westwood_ca *w)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	__u32 mss = tp->mss_cache;

	w->cumul_ack = tp->snd_una - w->snd_una;

	/* a duplicate ACK: a segment has left the network, credit one MSS */
	if (!w->cumul_ack) {
		w->accounted += mss;
		w->cumul_ack = mss;
	}

	/* a delayed or partial ACK: take off what duplicates credited */
	if (w->cumul_ack > mss) {
		if (w->accounted >= w->cumul_ack) {
			w->accounted -= w->cumul_ack;
			w->cumul_ack = mss;
		} else {
			w->cumul_ack -= w->accounted;
			w->accounted = 0;
		}
	}

	w->snd_una = tp->snd_una;
	return w->cumul_ack;
}

/* BWE * RTTmin in segments, at least 2. */
static __always_inline __u32 ww_bw_rttmin(const struct sock *sk,
					  const struct westwood_ca *w)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	return max((w->bw_est * w->rtt_min) / tp->mss_cache, 2U);
}

SEC("struct_ops/westwood_init")
void BPF_PROG(westwood_init, struct sock *sk)
{
	struct westwood_ca *w = PORT_CA(westwood_ca, sk);

	w->bk = 0;
	w->bw_ns_est = 0;
	w->bw_est = 0;
	w->accounted = 0;
	w->cumul_ack = 0;
	w->reset_rtt_min = 1;
	w->rtt_min = w->rtt = WW_INIT_RTT;
	w->rtt_win_sx = tcp_jiffies32;
	w->snd_una = tcp_sk(sk)->snd_una;
	w->first_ack = 1;
	PORT_START(&w->guard, sk, westwood_params_get());
}

/* Every ACK: the bytes it acknowledged go into the bandwidth sample. */
SEC("struct_ops/westwood_in_ack_event")
void BPF_PROG(westwood_in_ack_event, struct sock *sk, __u32 flags)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct westwood_ca *w = PORT_CA(westwood_ca, sk);

	PORT_GUARD(&w->guard, sk, westwood_params_get());

	if (flags & CA_ACK_SLOWPATH) {
		ww_update_window(sk, w);
		w->bk += ww_acked_count(sk, w);
		ww_update_rtt_min(w);
		return;
	}

	/* fast path: an in-order ACK, all of its bytes count */
	ww_update_window(sk, w);
	w->bk += tp->snd_una - w->snd_una;
	w->snd_una = tp->snd_una;
	ww_update_rtt_min(w);
}

/* The last RTT sample, in jiffies. */
SEC("struct_ops/westwood_pkts_acked")
void BPF_PROG(westwood_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct westwood_ca *w = PORT_CA(westwood_ca, sk);
	__s32 rtt_us = sample->rtt_us;

	PORT_GUARD(&w->guard, sk, westwood_params_get());
	if (rtt_us > 0)
		w->rtt = usecs_to_jiffies((__u32)rtt_us);
}

SEC("struct_ops/westwood_cwnd_event")
void BPF_PROG(westwood_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct westwood_ca *w = PORT_CA(westwood_ca, sk);

	PORT_GUARD(&w->guard, sk, westwood_params_get());

	switch (event) {
	case CA_EVENT_COMPLETE_CWR:
		/* a CWR or recovery episode is over: resume at BWE * RTTmin */
		tp->snd_ssthresh = ww_bw_rttmin(sk, w);
		w->guard.ss_last = tp->snd_ssthresh;
		tp->snd_cwnd = tp->snd_ssthresh;
		break;
	case CA_EVENT_LOSS:
		/* an RTO: slow start up to BWE * RTTmin */
		tp->snd_ssthresh = ww_bw_rttmin(sk, w);
		w->guard.ss_last = tp->snd_ssthresh;
		w->reset_rtt_min = 1;	/* the next RTT sample becomes RTTmin */
		break;
	default:
		break;
	}
}

SEC("struct_ops/westwood_ssthresh")
__u32 BPF_PROG(westwood_ssthresh, struct sock *sk)
{
	struct westwood_ca *w = PORT_CA(westwood_ca, sk);
	__u32 ss;

	PORT_GUARD(&w->guard, sk, westwood_params_get());
	ss = reno_ssthresh(tcp_sk(sk));
	w->guard.ss_last = ss;		/* the kernel stores what we return */
	return ss;
}

SEC("struct_ops/westwood_cong_avoid")
void BPF_PROG(westwood_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	PORT_GUARD(&PORT_CA(westwood_ca, sk)->guard, sk, westwood_params_get());
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops/westwood_undo_cwnd")
__u32 BPF_PROG(westwood_undo_cwnd, struct sock *sk)
{
	PORT_GUARD(&PORT_CA(westwood_ca, sk)->guard, sk, westwood_params_get());
	return reno_undo_cwnd(tcp_sk(sk));
}

SEC(".struct_ops")
struct tcp_congestion_ops PORT_OPS(westwood) = {
	.init		= (void *)westwood_init,
	.ssthresh	= (void *)westwood_ssthresh,
	.cong_avoid	= (void *)westwood_cong_avoid,
	.undo_cwnd	= (void *)westwood_undo_cwnd,
	.cwnd_event	= (void *)westwood_cwnd_event,
	.in_ack_event	= (void *)westwood_in_ack_event,
	.pkts_acked	= (void *)westwood_pkts_acked,
	.name		= PORT_NAME(westwood),
};
