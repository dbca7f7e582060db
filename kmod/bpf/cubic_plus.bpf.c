// SPDX-License-Identifier: GPL-2.0
/*
 * cubic_plus.bpf.c - CUBIC+ as a BPF struct_ops TCP congestion control.
 *
 * This is the BPF twin of kmod/cubic_plus.c, for kernels without loadable
 * modules but with BPF struct_ops congestion control. It follows Linux's
 * tcp_cubic (CUBIC with HyStart, fast convergence and the TCP-friendly
 * region; identical in 6.1 and 6.18) with two changes (seed 000, seed 003):
 *
 *  - the multiplicative decrease uses
 *        beta_effective = 1024 - (1024 - beta) / n      (integer arithmetic)
 *    instead of beta for cwnd and ssthresh (and W_max under fast
 *    convergence), as seed 000 says; the TCP-friendly slope stays CUBIC's,
 *    from beta itself, as in seed 003's copy of tcp_cubic (kmod/README.md);
 *  - optionally (rtt_scaled = 1) the epoch's cubic curve is stretched in
 *    time by f(RTT) = clamp(rtt_ref_us / min_rtt, 1/2, 2) (fixed point,
 *    1/1024): it still starts from the reduced window, and regains W_max
 *    after K' = f * K, so long-RTT flows regain it sooner (after Kozu et
 *    al., 2013).
 *
 * With n = 1 and rtt_scaled = 0 it computes exactly what tcp_cubic computes.
 *
 * Parameters live in the one-entry ARRAY map `cplus_params` (layout below).
 * Every callback reads the map afresh, so a change reaches established
 * connections at their next ACK or loss. Inputs of 0 mean "default"; a
 * non-zero value out of range is ignored (default used) and flagged in
 * `invalid`. The program writes the values it actually uses back into the
 * output fields, so user space can read beta_effective from the kernel.
 *
 * Every callback runs the ssthresh guard of ss_guard.h first; repairs are
 * counted in ss_repairs.
 *
 * Build: make -C kmod bpf. Load: bpftool struct_ops register cubic_plus.bpf.o
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "port.h"	/* tcp.h's helpers, PORT_CA, the clock, Reno, the guard */

char _license[] SEC("license") = "GPL";

/* ---- parameters ------------------------------------------------------ */

#define CP_BETA_DEFAULT		717U	/* tcp_cubic's beta, 1/1024 units */
#define CP_BETA_MIN		1U
#define CP_BETA_MAX		1023U
#define CP_N_DEFAULT		1U
#define CP_N_MIN		1U
#define CP_N_MAX		10U
#define CP_RTT_REF_DEFAULT	100000U		/* 100 ms */
#define CP_RTT_REF_MIN		1000U		/* 1 ms */
#define CP_RTT_REF_MAX		10000000U	/* 10 s */

/* bits of cplus_params.invalid: which inputs were out of range */
#define CP_BAD_BETA		0x1
#define CP_BAD_N		0x2
#define CP_BAD_RTT_SCALED	0x4
#define CP_BAD_RTT_REF		0x8

/*
 * Map value, 56 bytes, all __u32, little endian. Byte offsets:
 *   0 beta              in   1..1023, 0 = default 717
 *   4 n                 in   1..10, 0 = default 1
 *   8 rtt_scaled        in   0 or 1
 *  12 rtt_ref_us        in   1000..10000000, 0 = default 100000
 *  16 beta_effective    out  1024 - (1024 - beta) / n, capped at 1023
 *  20 backoff_pct       out  beta_effective * 100 / 1024 (truncated)
 *  24 beta_in_use       out  beta after validation
 *  28 n_in_use          out  n after validation
 *  32 rtt_scaled_in_use out
 *  36 rtt_ref_in_use    out  microseconds
 *  40 invalid           out  CP_BAD_* bits of rejected inputs
 *  44 conns             out  connections initialised (init callback count)
 *  48 last_k_factor     out  f(RTT) * 1024 last applied to K (1024 = 1.0)
 *  52 last_rtt_us       out  min RTT used for that f(RTT)
 *  56 ss_repairs        out  implausible ssthresh values undone (see below)
 */
struct cplus_params {
	__u32 beta;
	__u32 n;
	__u32 rtt_scaled;
	__u32 rtt_ref_us;
	__u32 beta_effective;
	__u32 backoff_pct;
	__u32 beta_in_use;
	__u32 n_in_use;
	__u32 rtt_scaled_in_use;
	__u32 rtt_ref_in_use;
	__u32 invalid;
	__u32 conns;
	__u32 last_k_factor;
	__u32 last_rtt_us;
	__u32 ss_repairs;
};

PORT_PARAM_MAP(cplus_params, cplus_params)	/* and cplus_params_get() */

/* What one callback works with: validated inputs and derived constants. */
struct cplus_cfg {
	__u32 beta_eff;		/* 1/1024 */
	__u32 beta_scale;	/* TCP-friendly slope, tcp_cubic's beta_scale of beta */
	__u32 rtt_scaled;
	__u32 rtt_ref_us;
};

#define RD32(x)		(*(volatile __u32 *)&(x))
#define WR_IF_CHANGED(field, val)				\
	do {							\
		if (RD32(p->field) != (val))			\
			RD32(p->field) = (val);			\
	} while (0)

/*
 * Read the map, validate, derive. The map may hold anything (bpftool writes
 * raw bytes), so every input is range-checked and replaced by its default
 * when out of range. The derived values are published back into the map.
 */
static __always_inline void cfg_load(struct cplus_cfg *c)
{
	struct cplus_params *p = cplus_params_get();
	__u32 beta = CP_BETA_DEFAULT, n = CP_N_DEFAULT;
	__u32 rs = 0, ref = CP_RTT_REF_DEFAULT, bad = 0, v;

	if (p) {
		v = RD32(p->beta);
		if (v >= CP_BETA_MIN && v <= CP_BETA_MAX)
			beta = v;
		else if (v)
			bad |= CP_BAD_BETA;
		v = RD32(p->n);
		if (v >= CP_N_MIN && v <= CP_N_MAX)
			n = v;
		else if (v)
			bad |= CP_BAD_N;
		v = RD32(p->rtt_scaled);
		if (v <= 1)
			rs = v;
		else
			bad |= CP_BAD_RTT_SCALED;
		v = RD32(p->rtt_ref_us);
		if (v >= CP_RTT_REF_MIN && v <= CP_RTT_REF_MAX)
			ref = v;
		else if (v)
			bad |= CP_BAD_RTT_REF;
	}

	/* seed 003: beta_effective = 1024 - (1024 - beta) / n. With beta close
	 * to 1024 and n > 1 this reaches 1024 (no backoff at all, and a zero
	 * divisor in beta_scale), so it is capped at 1023.
	 */
	c->beta_eff = 1024 - (1024 - beta) / n;
	if (c->beta_eff > CP_BETA_MAX)
		c->beta_eff = CP_BETA_MAX;
	/* tcp_cubic: beta_scale = 8*(1024+beta)/3/(1024-beta), the ACK count
	 * per cwnd after which the Reno estimate grows by one. From beta, not
	 * beta_effective: seed 000 changes only cwnd and ssthresh, and seed
	 * 003's module computes this once, from beta, as tcp_cubic does.
	 */
	c->beta_scale = 8 * (1024 + beta) / 3 / (1024 - beta);
	c->rtt_scaled = rs;
	c->rtt_ref_us = ref;

	if (p) {
		WR_IF_CHANGED(beta_effective, c->beta_eff);
		WR_IF_CHANGED(backoff_pct, c->beta_eff * 100 / 1024);
		WR_IF_CHANGED(beta_in_use, beta);
		WR_IF_CHANGED(n_in_use, n);
		WR_IF_CHANGED(rtt_scaled_in_use, rs);
		WR_IF_CHANGED(rtt_ref_in_use, ref);
		WR_IF_CHANGED(invalid, bad);
	}
}

/* ---- CUBIC constants (tcp_cubic defaults, not tunable here) ----------- */

#define BICTCP_BETA_SCALE	1024
#define BICTCP_HZ		10	/* BIC HZ 2^10 = 1024 */

#define HYSTART_ACK_TRAIN	0x1
#define HYSTART_DELAY		0x2
#define HYSTART_MIN_SAMPLES	8
#define HYSTART_DELAY_MIN	4000U	/* 4 ms */
#define HYSTART_DELAY_MAX	16000U	/* 16 ms */

static const int fast_convergence = 1;
static const int tcp_friendliness = 1;
static const int hystart = 1;
static const int hystart_detect = HYSTART_ACK_TRAIN | HYSTART_DELAY;
static const __u32 hystart_low_window = 16;
static const __u32 hystart_ack_delta_us = 2000;
static const __u32 bic_scale = 41;

/* 1024*c/rtt with rtt = 100 ms, and 2^40/(bic_scale*10): see tcp_cubic */
#define CUBE_RTT_SCALE		(bic_scale * 10)
#define CUBE_FACTOR		((__u64)(1ULL << (10 + 3 * BICTCP_HZ)) / (bic_scale * 10))

#define HZ_S32		((__s32)CONFIG_HZ)	/* for signed jiffies comparisons */

/* Per-connection state, in icsk_ca_priv (104 bytes); same layout and
 * meaning as tcp_cubic's struct bictcp.
 */
struct cplus_ca {
	__u32 cnt;		/* increase cwnd by 1 after this many ACKed pkts */
	__u32 last_max_cwnd;	/* W_max: cwnd before the last reduction */
	__u32 last_cwnd;	/* cwnd when cnt was last computed */
	__u32 last_time;	/* jiffies when cnt was last computed */
	__u32 bic_origin_point;	/* origin of the cubic curve */
	__u32 bic_K;		/* time to origin from epoch start, 2^-10 s */
	__u32 delay_min;	/* min RTT, us */
	__u32 epoch_start;	/* jiffies when the current epoch began */
	__u32 ack_cnt;		/* packets ACKed in the epoch (friendliness) */
	__u32 tcp_cwnd;		/* estimated Reno cwnd */
	__u32 k_factor;		/* CUBIC+: this epoch's time stretch f, 1/1024 */
	__u16 unused;
	__u8 sample_cnt;	/* HyStart: RTT samples in this round */
	__u8 found;		/* HyStart: exit point found */
	__u32 round_start;	/* HyStart: start of the round, us */
	__u32 end_seq;		/* HyStart: snd_nxt at start of the round */
	__u32 last_ack;		/* HyStart: time of the last closely spaced ACK */
	__u32 curr_rtt;		/* HyStart: min RTT of this round */
	struct ss_guard guard;	/* the ssthresh guard's state (ss_guard.h) */
};

/* tcp_cubic's inet_csk_ca(): the connection's state (port.h's PORT_CA) */
static __always_inline struct cplus_ca *inet_csk_ca(const struct sock *sk)
{
	return PORT_CA(cplus_ca, sk);
}

/* The ssthresh guard (ss_guard.h), counted in the parameter map. */
static __always_inline void ss_guard(struct sock *sk)
{
	PORT_GUARD_LAZY(&inet_csk_ca(sk)->guard, sk, cplus_params_get());
}

static __always_inline void bictcp_reset(struct cplus_ca *ca)
{
	/* tcp_cubic clears everything up to 'unused', then 'found' */
	ca->cnt = 0;
	ca->last_max_cwnd = 0;
	ca->last_cwnd = 0;
	ca->last_time = 0;
	ca->bic_origin_point = 0;
	ca->bic_K = 0;
	ca->delay_min = 0;
	ca->epoch_start = 0;
	ca->ack_cnt = 0;
	ca->tcp_cwnd = 0;
	ca->k_factor = 0;
	ca->found = 0;
}

static __always_inline void bictcp_hystart_reset(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cplus_ca *ca = inet_csk_ca(sk);

	ca->round_start = ca->last_ack = tcp_clock_us(sk);
	ca->end_seq = tp->snd_nxt;
	ca->curr_rtt = ~0U;
	ca->sample_cnt = 0;
}

/* fls64(): index of the most significant set bit, 1-based, 0 for 0.
 * Binary search, so no loop for the verifier.
 */
static __always_inline __u32 fls64(__u64 x)
{
	__u32 r = 64;

	if (!x)
		return 0;
	if (!(x & 0xffffffff00000000ULL)) { x <<= 32; r -= 32; }
	if (!(x & 0xffff000000000000ULL)) { x <<= 16; r -= 16; }
	if (!(x & 0xff00000000000000ULL)) { x <<= 8; r -= 8; }
	if (!(x & 0xf000000000000000ULL)) { x <<= 4; r -= 4; }
	if (!(x & 0xc000000000000000ULL)) { x <<= 2; r -= 2; }
	if (!(x & 0x8000000000000000ULL)) { r -= 1; }
	return r;
}

/* cbrt(x << 18) - 1 for x in 0..63: the same lookup table as tcp_cubic,
 * so that cubic_root() returns bit-identical results.
 */
static const __u8 cbrt_tab[64] = {
	0,   54,  54,  54,  118, 118, 118, 118,
	123, 129, 134, 138, 143, 147, 151, 156,
	157, 161, 164, 168, 170, 173, 176, 179,
	181, 185, 187, 190, 192, 194, 197, 199,
	200, 202, 204, 206, 209, 211, 213, 215,
	217, 219, 221, 222, 224, 225, 227, 229,
	231, 232, 234, 236, 237, 239, 240, 242,
	244, 245, 246, 248, 250, 251, 252, 254,
};

/* Cube root: table lookup on the top bits, then one Newton-Raphson step */
static __always_inline __u32 cubic_root(__u64 a)
{
	__u32 x, b, shift;

	b = fls64(a);
	if (b < 7)	/* a in [0..63] */
		return ((__u32)cbrt_tab[(__u32)a & 63] + 35) >> 6;

	b = ((b * 84) >> 8) - 1;
	shift = (a >> (b * 3)) & 63;	/* always < 64; the mask is for the verifier */

	x = ((__u32)(((__u32)cbrt_tab[shift] + 10) << b)) >> 6;

	/* x(k+1) = (2 * x(k) + a / x(k)^2) / 3 */
	x = (2 * x + (__u32)(a / ((__u64)x * (__u64)(x - 1))));
	x = ((x * 341) >> 10);
	return x;
}

/*
 * f(RTT) in 1/1024: rtt_ref / min_rtt clamped to [1/2, 2]. Monotonically
 * decreasing in RTT, 1.0 at rtt_ref. Without an RTT sample it is 1.0.
 */
static __always_inline __u32 k_rtt_factor(const struct sock *sk,
					   const struct cplus_ca *ca,
					   const struct cplus_cfg *c,
					   __u32 *rtt_out)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	__u32 rtt = ca->delay_min;
	__u64 f;

	if (!rtt)	/* cubic's own min RTT is reset on RTO; use the socket's */
		rtt = tp->rtt_min.s[0].v;
	*rtt_out = rtt;
	if (!rtt || rtt == ~0U)
		return 1024;
	f = ((__u64)c->rtt_ref_us << 10) / rtt;
	if (f < 512)
		f = 512;
	if (f > 2048)
		f = 2048;
	return (__u32)f;
}

/* tcp_cubic's bictcp_update(): compute ca->cnt for this ACK */
static __always_inline void bictcp_update(struct sock *sk, struct cplus_ca *ca,
					  __u32 cwnd, __u32 acked,
					  const struct cplus_cfg *c)
{
	__u32 delta, bic_target, max_cnt, now = tcp_jiffies32;
	__u64 offs, t;

	ca->ack_cnt += acked;	/* count the number of ACKed packets */

	if (ca->last_cwnd == cwnd && (__s32)(now - ca->last_time) <= (__s32)(HZ_U64 / 32))
		return;

	/* The CUBIC function can update ca->cnt at most once per jiffy.
	 * On all cwnd reduction events, ca->epoch_start is set to 0,
	 * which will force a recalculation of ca->cnt.
	 */
	if (ca->epoch_start && now == ca->last_time)
		goto tcp_friendliness;

	ca->last_cwnd = cwnd;
	ca->last_time = now;

	if (ca->epoch_start == 0) {
		ca->epoch_start = now;		/* record beginning */
		ca->ack_cnt = acked;		/* start counting */
		ca->tcp_cwnd = cwnd;		/* sync with cubic */

		if (ca->last_max_cwnd <= cwnd) {
			ca->bic_K = 0;
			ca->bic_origin_point = cwnd;
		} else {
			/* K = cbrt((W_max - cwnd) * rtt / C) in 2^-10 s */
			ca->bic_K = cubic_root(CUBE_FACTOR *
					       (ca->last_max_cwnd - cwnd));
			ca->bic_origin_point = ca->last_max_cwnd;
		}

		/* CUBIC+: this epoch's clock runs f(RTT) times slower, so W_max
		 * is regained after K' = f * K, from the same starting window.
		 */
		ca->k_factor = 1024;
		if (c->rtt_scaled) {
			struct cplus_params *p = cplus_params_get();
			__u32 rtt = 0;

			ca->k_factor = k_rtt_factor(sk, ca, c, &rtt);
			if (p) {
				WR_IF_CHANGED(last_k_factor, ca->k_factor);
				WR_IF_CHANGED(last_rtt_us, rtt);
			}
		}
	}

	/* time since epoch start plus one min RTT, in 2^-10 s */
	t = (__u64)(__s64)(__s32)(now - ca->epoch_start);
	t += usecs_to_jiffies64(ca->delay_min);
	t <<= BICTCP_HZ;
	t /= HZ_U64;
	if (ca->k_factor && ca->k_factor != 1024)	/* CUBIC+: t / f */
		t = (t << 10) / ca->k_factor;

	if (t < ca->bic_K)		/* t - K */
		offs = ca->bic_K - t;
	else
		offs = t - ca->bic_K;

	/* c/rtt * (t-K)^3 */
	delta = (CUBE_RTT_SCALE * offs * offs * offs) >> (10 + 3 * BICTCP_HZ);
	if (t < ca->bic_K)		/* below origin */
		bic_target = ca->bic_origin_point - delta;
	else				/* above origin */
		bic_target = ca->bic_origin_point + delta;

	if (bic_target > cwnd)
		ca->cnt = cwnd / (bic_target - cwnd);
	else
		ca->cnt = 100 * cwnd;	/* very small increment */

	/* The initial growth of the cubic function may be too conservative
	 * when the available bandwidth is still unknown.
	 */
	if (ca->last_max_cwnd == 0 && ca->cnt > 20)
		ca->cnt = 20;	/* increase cwnd 5% per RTT */

tcp_friendliness:
	/* TCP-friendly region: follow Reno (with this beta) if it is faster */
	if (tcp_friendliness) {
		delta = (cwnd * c->beta_scale) >> 3;
		/* tcp_cubic loops "while (ack_cnt > delta) { ack_cnt -= delta;
		 * tcp_cwnd++; }"; this is the same in closed form.
		 */
		if (delta && ca->ack_cnt > delta) {
			__u32 k = (ca->ack_cnt - 1) / delta;

			ca->ack_cnt -= k * delta;
			ca->tcp_cwnd += k;
		}

		if (ca->tcp_cwnd > cwnd) {	/* if bic is slower than tcp */
			delta = ca->tcp_cwnd - cwnd;
			max_cnt = cwnd / delta;
			if (ca->cnt > max_cnt)
				ca->cnt = max_cnt;
		}
	}

	/* At most 1 packet per 2 ACKed: cwnd grows at most 1.5x per RTT */
	if (ca->cnt < 2)
		ca->cnt = 2;
}

SEC("struct_ops/cplus_init")
void BPF_PROG(cplus_init, struct sock *sk)
{
	struct cplus_ca *ca = inet_csk_ca(sk);
	struct cplus_params *p;
	struct cplus_cfg c;

	/* validate and publish the parameters now, so that a loader can read
	 * beta_effective back as soon as one connection has used us
	 */
	cfg_load(&c);
	p = cplus_params_get();
	if (p)
		__sync_fetch_and_add(&p->conns, 1);

	bictcp_reset(ca);
	if (hystart)
		bictcp_hystart_reset(sk);
	ss_guard_start(&ca->guard, tcp_sk(sk));
}

SEC("struct_ops/cplus_cwnd_event")
void BPF_PROG(cplus_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	ss_guard(sk);
	if (event == CA_EVENT_TX_START) {
		struct cplus_ca *ca = inet_csk_ca(sk);
		__u32 now = tcp_jiffies32;
		__s32 delta;

		delta = now - tcp_sk(sk)->lsndtime;

		/* We were application limited (idle) for a while.
		 * Shift epoch_start to keep cwnd growth to the cubic curve.
		 */
		if (ca->epoch_start && delta > 0) {
			ca->epoch_start += delta;
			if (after(ca->epoch_start, now))
				ca->epoch_start = now;
		}
	}
}

SEC("struct_ops/cplus_cong_avoid")
void BPF_PROG(cplus_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cplus_ca *ca = inet_csk_ca(sk);
	struct cplus_cfg c;

	ss_guard(sk);
	if (!tcp_is_cwnd_limited(sk))
		return;

	if (tcp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	cfg_load(&c);
	bictcp_update(sk, ca, tp->snd_cwnd, acked, &c);
	tcp_cong_avoid_ai(tp, ca->cnt, acked);
}

SEC("struct_ops/cplus_ssthresh")
__u32 BPF_PROG(cplus_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct cplus_ca *ca = inet_csk_ca(sk);
	__u32 cwnd = tp->snd_cwnd, ss;
	struct cplus_cfg c;

	ss_guard(sk);
	cfg_load(&c);
	ca->epoch_start = 0;	/* end of epoch */

	/* W_max and fast convergence: if this loss came below the previous
	 * W_max, release more bandwidth: W_max = cwnd * (1 + beta) / 2.
	 */
	if (cwnd < ca->last_max_cwnd && fast_convergence)
		ca->last_max_cwnd = (cwnd * (BICTCP_BETA_SCALE + c.beta_eff)) /
				    (2 * BICTCP_BETA_SCALE);
	else
		ca->last_max_cwnd = cwnd;

	ss = (cwnd * c.beta_eff) / BICTCP_BETA_SCALE;
	if (ss < 2)
		ss = 2;
	ca->guard.ss_last = ss;	/* the kernel stores what we return */
	return ss;
}

SEC("struct_ops/cplus_state")
void BPF_PROG(cplus_state, struct sock *sk, __u8 new_state)
{
	ss_guard(sk);
	if (new_state == TCP_CA_Loss) {
		bictcp_reset(inet_csk_ca(sk));
		bictcp_hystart_reset(sk);
	}
}

/* tcp_reno_undo_cwnd(), as tcp_cubic uses */
SEC("struct_ops/cplus_undo_cwnd")
__u32 BPF_PROG(cplus_undo_cwnd, struct sock *sk)
{
	ss_guard(sk);
	return reno_undo_cwnd(tcp_sk(sk));
}

/* Not in tcp_cubic: called on every ACK before loss recovery runs, it only
 * hosts the ssthresh guard.
 */
SEC("struct_ops/cplus_in_ack_event")
void BPF_PROG(cplus_in_ack_event, struct sock *sk, __u32 flags)
{
	ss_guard(sk);
}

/* Account for TSO/GRO delays (tcp_cubic's hystart_ack_delay()) */
static __always_inline __u32 hystart_ack_delay(const struct sock *sk)
{
	unsigned long rate = sk->sk_pacing_rate;
	__u64 d;

	if (!rate)
		return 0;
	d = (__u64)sk->sk_gso_max_size * 4 * USEC_PER_SEC / rate;
	return d < USEC_PER_MSEC ? (__u32)d : (__u32)USEC_PER_MSEC;
}

static __always_inline void hystart_update(struct sock *sk, __u32 delay)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cplus_ca *ca = inet_csk_ca(sk);
	__u32 threshold;

	if (after(tp->snd_una, ca->end_seq))
		bictcp_hystart_reset(sk);

	/* hystart triggers when cwnd is larger than some threshold */
	if (tp->snd_cwnd < hystart_low_window)
		return;

	if (hystart_detect & HYSTART_ACK_TRAIN) {
		__u32 now = tcp_clock_us(sk);

		/* first detection parameter - ack-train detection */
		if ((__s32)(now - ca->last_ack) <= (__s32)hystart_ack_delta_us) {
			ca->last_ack = now;

			threshold = ca->delay_min + hystart_ack_delay(sk);

			/* Hystart ack train triggers if we get ack past
			 * ca->delay_min/2. Pacing might have delayed packets
			 * up to RTT/2 during slow start.
			 */
			if (sk->sk_pacing_status == SK_PACING_NONE)
				threshold >>= 1;

			if ((__s32)(now - ca->round_start) > (__s32)threshold) {
				ca->found = 1;
				tp->snd_ssthresh = tp->snd_cwnd;
				ca->guard.ss_last = tp->snd_ssthresh;
			}
		}
	}

	if (hystart_detect & HYSTART_DELAY) {
		/* obtain the minimum delay of more than sampling packets */
		if (ca->curr_rtt > delay)
			ca->curr_rtt = delay;
		if (ca->sample_cnt < HYSTART_MIN_SAMPLES) {
			ca->sample_cnt++;
		} else {
			__u32 thr = ca->delay_min >> 3;

			if (thr < HYSTART_DELAY_MIN)
				thr = HYSTART_DELAY_MIN;
			if (thr > HYSTART_DELAY_MAX)
				thr = HYSTART_DELAY_MAX;
			if (ca->curr_rtt > ca->delay_min + thr) {
				ca->found = 1;
				tp->snd_ssthresh = tp->snd_cwnd;
				ca->guard.ss_last = tp->snd_ssthresh;
			}
		}
	}
}

SEC("struct_ops/cplus_acked")
void BPF_PROG(cplus_acked, struct sock *sk, const struct ack_sample *sample)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct cplus_ca *ca = inet_csk_ca(sk);
	__u32 delay;

	ss_guard(sk);
	/* Some calls are for duplicates without timestamps */
	if (sample->rtt_us < 0)
		return;

	/* Discard delay samples right after fast recovery */
	if (ca->epoch_start && (__s32)(tcp_jiffies32 - ca->epoch_start) < HZ_S32)
		return;

	delay = sample->rtt_us;
	if (delay == 0)
		delay = 1;

	/* first time call or link delay decreases */
	if (ca->delay_min == 0 || ca->delay_min > delay)
		ca->delay_min = delay;

	if (!ca->found && tcp_in_slow_start(tp) && hystart)
		hystart_update(sk, delay);
}

SEC(".struct_ops")
struct tcp_congestion_ops cubic_plus = {
	.init		= (void *)cplus_init,
	.ssthresh	= (void *)cplus_ssthresh,
	.cong_avoid	= (void *)cplus_cong_avoid,
	.set_state	= (void *)cplus_state,
	.undo_cwnd	= (void *)cplus_undo_cwnd,
	.cwnd_event	= (void *)cplus_cwnd_event,
	.pkts_acked	= (void *)cplus_acked,
	.in_ack_event	= (void *)cplus_in_ack_event,
	.name		= "cubic_plus",
};
