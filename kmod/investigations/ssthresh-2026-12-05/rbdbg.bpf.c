// Diagnostic copy of reno_beta (Reno's halving) used on 2026-12-05 for kmod/README.md's "When" paragraph:
// a per-socket history of the last 32 callbacks and tracepoints (codes: 1 init, 2 ssthresh entered,
// 3 ssthresh returning, 4 cong_avoid, 5 in_ack_event, 7 set_state, 8 tp tcp_cong_state_set,
// 9 tp tcp_probe, 98 set_state rewrote the stored return, 99 the guard repaired), printed with
// bpf_printk when ssthresh goes wrong (trace.txt).  port.h and ss_guard.h here are the tried shape's
// versions (ss_guard_returned/ss_guard_settle), not the project's.  Build:
//   clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I kmod/bpf/build/$(uname -r) -I . -c rbdbg.bpf.c
// Load (struct_ops and the two tp_btf programs): python3 load.py rbdbg.bpf.o, then
// run.sh bench ssthresh --algorithms rbdbg (bench.csv); info.c reads recursion_misses.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "port.h"
char _license[] SEC("license") = "GPL";

struct ev { __u8 code, state, pending, pad; __u32 ss, cwnd, prior_ss, prior_cwnd, last; };
#define NEV 32
struct hist { __u32 idx; __u32 dumped; struct ev ev[NEV]; };
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 256); __type(key, __u64); __type(value, struct hist); } hists SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct hist); } zero SEC(".maps");

struct rbeta_ca { struct ss_guard guard; };

static __always_inline void logev(struct sock *sk, __u8 code)
{
	__u64 key = (__u64)sk;
	struct hist *h = bpf_map_lookup_elem(&hists, &key);
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct ev *e;
	__u32 i;
	if (!h) return;
	i = h->idx & (NEV - 1);
	h->idx++;
	e = &h->ev[i];
	e->code = code;
	e->state = BPF_CORE_READ_BITFIELD_PROBED((struct inet_connection_sock *)sk, icsk_ca_state);
	e->ss = BPF_CORE_READ(tp, snd_ssthresh);
	e->cwnd = BPF_CORE_READ(tp, snd_cwnd);
	e->prior_ss = BPF_CORE_READ(tp, prior_ssthresh);
	e->prior_cwnd = BPF_CORE_READ(tp, prior_cwnd);
	{
		struct ss_guard g = {};
		bpf_probe_read_kernel(&g, sizeof(g), (void *)sk + bpf_core_field_offset(struct inet_connection_sock, icsk_ca_priv));
		e->last = g.ss_last;
		e->pending = g.ss_pending;
	}
}

static __always_inline void dump(struct sock *sk, int why)
{
	__u64 key = (__u64)sk;
	struct hist *h = bpf_map_lookup_elem(&hists, &key);
	__u32 n, j;
	if (!h || h->dumped > 6) return;
	h->dumped++;
	bpf_printk("DUMP sk=%llx why=%d idx=%u", key, why, h->idx);
	for (j = 0; j < NEV; j++) {
		struct ev *e;
		n = (h->idx + j) & (NEV - 1);
		if (n >= NEV) break;
		e = &h->ev[n];
		bpf_printk(" ev code=%d st=%d pend=%d", e->code, e->state, e->pending);
		bpf_printk("    ss=%u cwnd=%u last=%u", e->ss, e->cwnd, e->last);
		bpf_printk("    prior_ss=%u prior_cwnd=%u", e->prior_ss, e->prior_cwnd);
	}
}

static __always_inline void guard(struct sock *sk, __u8 code)
{
	logev(sk, code);
	if (ss_guard_check(&PORT_CA(rbeta_ca, sk)->guard, tcp_sk(sk))) {
		logev(sk, 99);
		dump(sk, code);
	}
}

SEC("struct_ops/dbg_init")
void BPF_PROG(dbg_init, struct sock *sk)
{
	__u64 key = (__u64)sk; __u32 z = 0;
	struct hist *zz = bpf_map_lookup_elem(&zero, &z);
	if (zz) bpf_map_update_elem(&hists, &key, zz, BPF_ANY);
	ss_guard_start(&PORT_CA(rbeta_ca, sk)->guard, tcp_sk(sk));
	logev(sk, 1);
}
SEC("struct_ops/dbg_ssthresh")
__u32 BPF_PROG(dbg_ssthresh, struct sock *sk)
{
	guard(sk, 2);
	__u32 ss = max(tcp_sk(sk)->snd_cwnd >> 1, 2U);
	ss_guard_returned(&PORT_CA(rbeta_ca, sk)->guard, ss);
	logev(sk, 3);
	return ss;
}
SEC("struct_ops/dbg_cong_avoid")
void BPF_PROG(dbg_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	guard(sk, 4);
	tcp_reno_cong_avoid(sk, ack, acked);
}
SEC("struct_ops/dbg_in_ack_event")
void BPF_PROG(dbg_in_ack_event, struct sock *sk, __u32 flags) { guard(sk, 5); }
SEC("struct_ops/dbg_undo_cwnd")
__u32 BPF_PROG(dbg_undo_cwnd, struct sock *sk) { guard(sk, 6); return reno_undo_cwnd(tcp_sk(sk)); }
SEC("struct_ops/dbg_set_state")
void BPF_PROG(dbg_set_state, struct sock *sk, __u8 new_state)
{
	if (ss_guard_settle(&PORT_CA(rbeta_ca, sk)->guard, tcp_sk(sk))) { logev(sk, 98); dump(sk, 98); }
	guard(sk, 7);
}
SEC("struct_ops/dbg_release")
void BPF_PROG(dbg_release, struct sock *sk) { __u64 key = (__u64)sk; bpf_map_delete_elem(&hists, &key); }

SEC("tp_btf/tcp_probe")
int BPF_PROG(tp_probe, struct sock *sk, struct sk_buff *skb)
{
	__u32 ss;
	logev(sk, 9);
	ss = BPF_CORE_READ((struct tcp_sock *)sk, snd_ssthresh);
	if (ss > 100000000 && ss != 0x7fffffff) dump(sk, 9);
	return 0;
}
SEC("tp_btf/tcp_cong_state_set")
int BPF_PROG(tp_state, struct sock *sk, __u8 ca_state) { logev(sk, 8); return 0; }

SEC(".struct_ops")
struct tcp_congestion_ops rbdbg = {
	.init = (void *)dbg_init, .ssthresh = (void *)dbg_ssthresh, .cong_avoid = (void *)dbg_cong_avoid,
	.in_ack_event = (void *)dbg_in_ack_event, .undo_cwnd = (void *)dbg_undo_cwnd,
	.set_state = (void *)dbg_set_state, .release = (void *)dbg_release, .name = "rbdbg",
};
