// SPDX-License-Identifier: GPL-2.0
/*
 * scalable.bpf.c - Scalable TCP (Kelly, "Scalable TCP: improving performance
 * in highspeed wide area networks", CCR 33(2), 2003) as a BPF struct_ops
 * port of the kernel's tcp_scalable.
 *
 * Slow start is Reno's. Above ssthresh the window grows by a = 0.01 segment
 * per ACK, as the kernel does it: one segment per min(cwnd, 100) segments
 * ACKed, so Reno's increase below a window of 100 segments. A loss cuts the
 * window by b = 1/8: ssthresh = max(cwnd - cwnd / 8, 2). Undo is Reno's.
 * The module has no parameters; the map holds only the counters.
 *
 * Build: make -C kmod bpf. Load: bpftool struct_ops register scalable.bpf.o
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "port.h"

char _license[] SEC("license") = "GPL";

#define SCALABLE_AI_CNT		100U	/* 1/a: one segment per 100 ACKed */
#define SCALABLE_MD_SHIFT	3	/* b = 1/8 */

/* Map value: only the counters (port.h). */
struct scalable_params {
	PORT_COUNTERS;
};
PORT_PARAM_MAP(scalable_params, scalable_params)

struct scalable_ca {
	struct ss_guard guard;
};

SEC("struct_ops/scalable_init")
void BPF_PROG(scalable_init, struct sock *sk)
{
	PORT_START(&PORT_CA(scalable_ca, sk)->guard, sk, scalable_params_get());
}

SEC("struct_ops/scalable_in_ack_event")
void BPF_PROG(scalable_in_ack_event, struct sock *sk, __u32 flags)
{
	PORT_GUARD(&PORT_CA(scalable_ca, sk)->guard, sk, scalable_params_get());
}

SEC("struct_ops/scalable_cong_avoid")
void BPF_PROG(scalable_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	PORT_GUARD(&PORT_CA(scalable_ca, sk)->guard, sk, scalable_params_get());
	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	tcp_cong_avoid_ai(tp, min(tp->snd_cwnd, SCALABLE_AI_CNT), acked);
}

SEC("struct_ops/scalable_ssthresh")
__u32 BPF_PROG(scalable_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct scalable_ca *ca = PORT_CA(scalable_ca, sk);
	__u32 ss;

	PORT_GUARD(&ca->guard, sk, scalable_params_get());
	ss = max(tp->snd_cwnd - (tp->snd_cwnd >> SCALABLE_MD_SHIFT), 2U);
	ca->guard.ss_last = ss;		/* the kernel stores what we return */
	return ss;
}

SEC("struct_ops/scalable_undo_cwnd")
__u32 BPF_PROG(scalable_undo_cwnd, struct sock *sk)
{
	PORT_GUARD(&PORT_CA(scalable_ca, sk)->guard, sk, scalable_params_get());
	return reno_undo_cwnd(tcp_sk(sk));
}

SEC(".struct_ops")
struct tcp_congestion_ops PORT_OPS(scalable) = {
	.init		= (void *)scalable_init,
	.ssthresh	= (void *)scalable_ssthresh,
	.cong_avoid	= (void *)scalable_cong_avoid,
	.in_ack_event	= (void *)scalable_in_ack_event,
	.undo_cwnd	= (void *)scalable_undo_cwnd,
	.name		= PORT_NAME(scalable),
};
