// second diagnostic: counters in icsk_ca_priv (no map in the path) and an array map for the tracepoint
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "port.h"
char _license[] SEC("license") = "GPL";

struct dbg_ca {
	struct ss_guard guard;
	__u32 n_ss, n_set, n_ack, n_avoid, n_undo;	/* callback entries */
	__u32 last_ret;				/* what ssthresh() last returned */
};
struct snap { __u32 n_ss, n_set, n_state, n_ack, n_avoid, st, ss, cwnd; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4096); __type(key, __u32); __type(value, struct snap); } prev SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4096); __type(key, __u32); __type(value, __u32); } states SEC(".maps");

static __always_inline __u32 slot(struct sock *sk) { return ((__u32)BPF_CORE_READ(sk, __sk_common.skc_num) * 65537u ^ (__u32)BPF_CORE_READ(sk, __sk_common.skc_dport)) & 4095; }
#define CA(sk) ((struct dbg_ca *)inet_csk(sk)->icsk_ca_priv)

SEC("struct_ops/d2_init")
void BPF_PROG(d2_init, struct sock *sk)
{
	struct dbg_ca *ca = CA(sk);
	ss_guard_start(&ca->guard, tcp_sk(sk));
	ca->n_ss = ca->n_set = ca->n_ack = ca->n_avoid = ca->n_undo = 0;
}
SEC("struct_ops/d2_ssthresh")
__u32 BPF_PROG(d2_ssthresh, struct sock *sk)
{
	struct dbg_ca *ca = CA(sk);
	__u32 ss;
	ca->n_ss++;
	ss_guard_check(&ca->guard, tcp_sk(sk));
	ss = max(tcp_sk(sk)->snd_cwnd >> 1, 2U);
	ca->last_ret = ss;
	ca->guard.ss_last = ss;
	return ss;
}
SEC("struct_ops/d2_cong_avoid")
void BPF_PROG(d2_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	CA(sk)->n_avoid++;
	ss_guard_check(&CA(sk)->guard, tcp_sk(sk));
	tcp_reno_cong_avoid(sk, ack, acked);
}
SEC("struct_ops/d2_in_ack_event")
void BPF_PROG(d2_in_ack_event, struct sock *sk, __u32 flags)
{
	struct dbg_ca *ca = CA(sk);
	ca->n_ack++;
	if (ss_guard_check(&ca->guard, tcp_sk(sk)))
		bpf_printk("REPAIR in_ack sk=%llx n_ss=%u", (__u64)sk, ca->n_ss);
}
SEC("struct_ops/d2_undo_cwnd")
__u32 BPF_PROG(d2_undo_cwnd, struct sock *sk) { CA(sk)->n_undo++; ss_guard_check(&CA(sk)->guard, tcp_sk(sk)); return reno_undo_cwnd(tcp_sk(sk)); }
SEC("struct_ops/d2_set_state")
void BPF_PROG(d2_set_state, struct sock *sk, __u8 new_state) { CA(sk)->n_set++; ss_guard_check(&CA(sk)->guard, tcp_sk(sk)); }

SEC("tp_btf/tcp_cong_state_set")
int BPF_PROG(t2_state, struct sock *sk, __u8 ca_state)
{
	__u32 k = slot(sk), *v = bpf_map_lookup_elem(&states, &k);
	if (v) __sync_fetch_and_add(v, 1);
	return 0;
}
SEC("tp_btf/tcp_probe")
int BPF_PROG(t2_probe, struct sock *sk, struct sk_buff *skb)
{
	struct dbg_ca ca = {};
	__u32 k = slot(sk), *v = bpf_map_lookup_elem(&states, &k), nstate = v ? *v : 0;
	struct snap *pv = bpf_map_lookup_elem(&prev, &k);
	__u32 ss = BPF_CORE_READ((struct tcp_sock *)sk, snd_ssthresh);
	__u32 cwnd = BPF_CORE_READ((struct tcp_sock *)sk, snd_cwnd);
	__u8 st = BPF_CORE_READ_BITFIELD_PROBED((struct inet_connection_sock *)sk, icsk_ca_state);
	void *priv = (void *)sk + bpf_core_field_offset(struct inet_connection_sock, icsk_ca_priv);

	if (!pv || bpf_probe_read_kernel(&ca, sizeof(ca), priv))
		return 0;
	if (ss > 100000000 && ss != 0x7fffffff) {
		bpf_printk("GARBAGE sk=%llx st %u -> %u", (__u64)sk, pv->st, st);
		bpf_printk("  ss %u -> %u, cwnd %u", pv->ss, ss, cwnd);
		bpf_printk("  ssthresh() entries %u -> %u, last_ret %u", pv->n_ss, ca.n_ss, ca.last_ret);
		bpf_printk("  set_state() entries %u -> %u", pv->n_set, ca.n_set, 0);
		bpf_printk("  tp cong_state_set %u -> %u", pv->n_state, nstate, 0);
		bpf_printk("  in_ack %u -> %u, cong_avoid %u", pv->n_ack, ca.n_ack, ca.n_avoid);
	}
	pv->n_ss = ca.n_ss; pv->n_set = ca.n_set; pv->n_state = nstate; pv->n_ack = ca.n_ack;
	pv->n_avoid = ca.n_avoid; pv->st = st; pv->ss = ss; pv->cwnd = cwnd;
	return 0;
}

SEC(".struct_ops")
struct tcp_congestion_ops rbdbg2 = {
	.init = (void *)d2_init, .ssthresh = (void *)d2_ssthresh, .cong_avoid = (void *)d2_cong_avoid,
	.in_ack_event = (void *)d2_in_ack_event, .undo_cwnd = (void *)d2_undo_cwnd,
	.set_state = (void *)d2_set_state, .name = "rbdbg2",
};
