// SPDX-License-Identifier: GPL-2.0
/*
 * highspeed.bpf.c - HighSpeed TCP (S. Floyd, "HighSpeed TCP for Large
 * Congestion Windows", RFC 3649, 2003) as a BPF struct_ops port of the
 * kernel's tcp_highspeed.
 *
 * Slow start is Reno's (tcp_slow_start; ACKs left over at ssthresh are
 * dropped, as in the kernel). Above ssthresh the window grows by a(w)
 * segments per window of ACKs and a loss cuts it by the fraction b(w),
 * both looked up in RFC 3649's table by the current window w:
 *
 *   w <= 38:                a = 1,  b = 0.5    (Reno)
 *   38 < w <= 118:          a = 2,  b = 0.44
 *   79517 < w <= 84035:     a = 71, b = 0.1    (High_Window 83000)
 *   w > 84035:              a = 72, b = 0.094
 *
 * The row is the first whose threshold is >= cwnd (the last row, 89053,
 * also beyond it). It is kept per connection, walked up or down only on
 * ACKs above ssthresh, and a loss uses the row of the last such ACK: a
 * loss still in the first slow start (row 0) halves the window whatever
 * its size. Increase: snd_cwnd_cnt += a per ACK (however much it
 * acknowledges), and cwnd += 1 each time the count reaches cwnd.
 * Decrease: ssthresh = max(cwnd - cwnd * md / 256, 2), md = b(w) in 1/256.
 * Undo is Reno's.
 * The module has no parameters; the map holds only the counters.
 *
 * Differences from the module: tcp_highspeed's init lowers snd_cwnd_clamp
 * to 0xffffffff / 128 so that cwnd * md cannot overflow 32 bits; a BPF
 * program may not write snd_cwnd_clamp, so the port stops its own additive
 * increase at min(snd_cwnd_clamp, 0xffffffff / 128) instead and multiplies
 * in 64 bits. Only Reno's slow start could then take cwnd past 33554431
 * segments, which the module's clamp would stop: unreachable in practice.
 * Per-connection state: 12 bytes (the module's 4 and the guard's 8).
 *
 * Build: make -C kmod bpf. Load: bpftool struct_ops register highspeed.bpf.o
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "port.h"

char _license[] SEC("license") = "GPL";

#define HSTCP_CWND_MAX		(0xffffffffU / 128)	/* the module's clamp */

/*
 * RFC 3649's response function as a table: row i applies to windows above
 * row i - 1's threshold w up to its own, with a(w) = i + 1 and b(w) in 1/256.
 *  - w: the w column of RFC 3649 Appendix B (Low_Window 38, High_Window
 *    83000, High_P 1e-7, High_Decrease 0.1); a(w) = i + 1 is the a column,
 *    which is round(w^2 * p(w) * 2 b(w) / (2 - b(w))) with
 *    p(w) = 0.078 / w^1.2 (section 5);
 *  - md: floor(256 * b(w)), b(w) = 0.5 - 0.4 * ln(w / 38) / ln(83000 / 38)
 *    (section 5). These are the kernel tcp_highspeed table's values (each
 *    checked against the formulas).
 */
struct hstcp_row {
	__u32 cwnd;	/* w: the row applies up to this window */
	__u32 md;	/* b(w) * 256 */
};

static const struct hstcp_row hstcp_table[] = {
	{    38, 128 }, {   118, 112 }, {   221, 104 }, {   347,  98 },	/* a 1..4 */
	{   495,  93 }, {   663,  89 }, {   851,  86 }, {  1058,  83 },	/* a 5..8 */
	{  1284,  81 }, {  1529,  78 }, {  1793,  76 }, {  2076,  74 },	/* a 9..12 */
	{  2378,  72 }, {  2699,  71 }, {  3039,  69 }, {  3399,  68 },	/* a 13..16 */
	{  3778,  66 }, {  4177,  65 }, {  4596,  64 }, {  5036,  62 },	/* a 17..20 */
	{  5497,  61 }, {  5979,  60 }, {  6483,  59 }, {  7009,  58 },	/* a 21..24 */
	{  7558,  57 }, {  8130,  56 }, {  8726,  55 }, {  9346,  54 },	/* a 25..28 */
	{  9991,  53 }, { 10661,  52 }, { 11358,  52 }, { 12082,  51 },	/* a 29..32 */
	{ 12834,  50 }, { 13614,  49 }, { 14424,  48 }, { 15265,  48 },	/* a 33..36 */
	{ 16137,  47 }, { 17042,  46 }, { 17981,  45 }, { 18955,  45 },	/* a 37..40 */
	{ 19965,  44 }, { 21013,  43 }, { 22101,  43 }, { 23230,  42 },	/* a 41..44 */
	{ 24402,  41 }, { 25618,  41 }, { 26881,  40 }, { 28193,  39 },	/* a 45..48 */
	{ 29557,  39 }, { 30975,  38 }, { 32450,  38 }, { 33986,  37 },	/* a 49..52 */
	{ 35586,  36 }, { 37253,  36 }, { 38992,  35 }, { 40808,  35 },	/* a 53..56 */
	{ 42707,  34 }, { 44694,  33 }, { 46776,  33 }, { 48961,  32 },	/* a 57..60 */
	{ 51258,  32 }, { 53677,  31 }, { 56230,  30 }, { 58932,  30 },	/* a 61..64 */
	{ 61799,  29 }, { 64851,  28 }, { 68113,  28 }, { 71617,  27 },	/* a 65..68 */
	{ 75401,  26 }, { 79517,  26 }, { 84035,  25 }, { 89053,  24 },	/* a 69..72 */
};

#define HSTCP_ROWS	(sizeof(hstcp_table) / sizeof(hstcp_table[0]))

/* Map value: only the counters (port.h). */
struct hstcp_params {
	PORT_COUNTERS;
};
PORT_PARAM_MAP(hstcp_params, hstcp_params)

struct hstcp_ca {
	__u32 ai;		/* the table row in use; a(w) = ai + 1 */
	struct ss_guard guard;
};
_Static_assert(sizeof(struct hstcp_ca) <= 104, "icsk_ca_priv holds 104 bytes");

/* The row in use, always a valid index (for the verifier as well). */
static __always_inline __u32 hstcp_ai(const struct hstcp_ca *ca)
{
	__u32 ai = ca->ai;

	return ai < HSTCP_ROWS ? ai : HSTCP_ROWS - 1;
}

/* Row i's threshold; i is made opaque first, so that clang computes each
 * address from a checked index (which the verifier can follow) rather than
 * stepping a pointer along the table.
 */
static __always_inline __u32 hstcp_row_cwnd(__u32 i)
{
	barrier_var(i);
	return i < HSTCP_ROWS ? hstcp_table[i].cwnd : 0xffffffffU;
}

/*
 * Move the row so that table[ai - 1].cwnd < cwnd <= table[ai].cwnd (row 0
 * at the bottom, the last row beyond the top): up while cwnd is above the
 * row's threshold, else down while it is within the row below's.
 */
static __always_inline __u32 hstcp_find_row(__u32 ai, __u32 cwnd)
{
	__u32 i;

	for (i = 0; i < HSTCP_ROWS; i++) {
		if (ai >= HSTCP_ROWS - 1 || cwnd <= hstcp_row_cwnd(ai))
			break;
		ai++;
	}
	for (i = 0; i < HSTCP_ROWS; i++) {
		if (ai == 0 || cwnd > hstcp_row_cwnd(ai - 1))
			break;
		ai--;
	}
	return ai;
}

SEC("struct_ops/hstcp_init")
void BPF_PROG(hstcp_init, struct sock *sk)
{
	struct hstcp_ca *ca = PORT_CA(hstcp_ca, sk);

	PORT_START(&ca->guard, sk, hstcp_params_get());
	ca->ai = 0;
	/* the module's snd_cwnd_clamp cut is applied in cong_avoid instead */
}

/* Not in tcp_highspeed: called on every ACK before loss recovery runs, it
 * only hosts the ssthresh guard.
 */
SEC("struct_ops/hstcp_in_ack_event")
void BPF_PROG(hstcp_in_ack_event, struct sock *sk, __u32 flags)
{
	PORT_GUARD(&PORT_CA(hstcp_ca, sk)->guard, sk, hstcp_params_get());
}

SEC("struct_ops/hstcp_cong_avoid")
void BPF_PROG(hstcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct hstcp_ca *ca = PORT_CA(hstcp_ca, sk);
	__u32 cwnd, ai;

	PORT_GUARD(&ca->guard, sk, hstcp_params_get());
	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
		return;
	}

	cwnd = tp->snd_cwnd;
	ai = hstcp_find_row(hstcp_ai(ca), cwnd);
	ca->ai = ai;

	/* additive increase: cwnd += a(w) / cwnd per ACK */
	if (cwnd < min(tp->snd_cwnd_clamp, HSTCP_CWND_MAX)) {
		tp->snd_cwnd_cnt += ai + 1;
		if (tp->snd_cwnd_cnt >= cwnd) {
			tp->snd_cwnd_cnt -= cwnd;
			tp->snd_cwnd = cwnd + 1;
		}
	}
}

SEC("struct_ops/hstcp_ssthresh")
__u32 BPF_PROG(hstcp_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct hstcp_ca *ca = PORT_CA(hstcp_ca, sk);
	__u32 cwnd, cut, ss;

	PORT_GUARD(&ca->guard, sk, hstcp_params_get());
	cwnd = tp->snd_cwnd;
	/* multiplicative decrease by b(w) */
	cut = (__u32)(((__u64)cwnd * hstcp_table[hstcp_ai(ca)].md) >> 8);
	ss = max(cwnd - cut, 2U);
	ca->guard.ss_last = ss;		/* the kernel stores what we return */
	return ss;
}

SEC("struct_ops/hstcp_undo_cwnd")
__u32 BPF_PROG(hstcp_undo_cwnd, struct sock *sk)
{
	PORT_GUARD(&PORT_CA(hstcp_ca, sk)->guard, sk, hstcp_params_get());
	return reno_undo_cwnd(tcp_sk(sk));
}

SEC(".struct_ops")
struct tcp_congestion_ops PORT_OPS(highspeed) = {
	.init		= (void *)hstcp_init,
	.ssthresh	= (void *)hstcp_ssthresh,
	.cong_avoid	= (void *)hstcp_cong_avoid,
	.in_ack_event	= (void *)hstcp_in_ack_event,
	.undo_cwnd	= (void *)hstcp_undo_cwnd,
	.name		= PORT_NAME(highspeed),
};
