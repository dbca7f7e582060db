// SPDX-License-Identifier: GPL-2.0
/*
 * cubic_plus.c - CUBIC+ TCP congestion control as a loadable module.
 *
 * Linux's tcp_cubic (CUBIC with HyStart, fast convergence and the
 * TCP-friendly region; the same logic in 6.1 and 6.18) with two changes:
 *
 *  - seed 003 / seed 000: the multiplicative decrease uses
 *        beta_effective = 1024 - (1024 - beta) / n      (integer arithmetic)
 *    for cwnd and ssthresh (and W_max under fast convergence), so one
 *    connection backs off like one of n parallel ones; the TCP-friendly
 *    slope beta_scale stays CUBIC's, from beta (kmod/README.md says why);
 *  - seed 000 section V (after Kozu et al., CANDAR 2013): with rtt_scaled=1
 *    each epoch's cubic curve is stretched in time by
 *        f(RTT) = clamp(rtt_ref_us / min_rtt, 1/2, 2)  (fixed point, 1/1024)
 *    so that it starts from the reduced window and regains W_max after
 *    K' = f * K.
 *
 * With n = 1 and rtt_scaled = 0 it computes exactly what tcp_cubic computes.
 *
 * Parameters (/sys/module/cubic_plus/parameters/, writable at run time):
 *   beta        1..1023 (1/1024), default 717
 *   n           1..10, default 1
 *   rtt_scaled  0 or 1, default 0
 *   rtt_ref_us  1000..10000000 microseconds, default 100000
 *   beta_effective  read only
 * Out-of-range writes fail with -EINVAL. Every callback reads the current
 * values, so established connections follow a change at their next event.
 * The kernel-side BPF twin is bpf/cubic_plus.bpf.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <net/tcp.h>

#define BICTCP_BETA_SCALE	1024	/* beta is in 1/1024 */
#define BICTCP_HZ		10	/* BIC HZ 2^10 = 1024 */

#define CP_BETA_MIN		1U
#define CP_BETA_MAX		1023U
#define CP_N_MIN		1U
#define CP_N_MAX		10U
#define CP_RTT_REF_MIN		1000U
#define CP_RTT_REF_MAX		10000000U

/* HyStart (Ha and Rhee), as in tcp_cubic */
#define HYSTART_ACK_TRAIN	0x1
#define HYSTART_DELAY		0x2
#define HYSTART_MIN_SAMPLES	8
#define HYSTART_DELAY_MIN	(4000U)		/* 4 ms */
#define HYSTART_DELAY_MAX	(16000U)	/* 16 ms */
#define HYSTART_DELAY_THRESH(x)	clamp(x, HYSTART_DELAY_MIN, HYSTART_DELAY_MAX)

/* tcp_cubic's fixed settings, kept as its defaults */
static const int fast_convergence = 1;
static const int tcp_friendliness = 1;
static const int hystart = 1;
static const int hystart_detect = HYSTART_ACK_TRAIN | HYSTART_DELAY;
static const u32 hystart_low_window = 16;
static const u32 hystart_ack_delta_us = 2000;
static const u32 bic_scale = 41;

/* Run-time parameters. beta_effective is derived from beta and n whenever
 * either is written, and is read (once) by each callback that needs it.
 */
static unsigned int beta = 717;
static unsigned int n = 1;
static unsigned int rtt_scaled;
static unsigned int rtt_ref_us = 100000;
static unsigned int beta_effective = 717;
static unsigned int backoff_pct = 70;	/* beta_effective * 100 / 1024, truncated */

static u32 cube_rtt_scale __read_mostly;
static u64 cube_factor __read_mostly;

/* seed 003: 1024 - (1024 - beta) / n. Capped at 1023: beta near 1024 with
 * n > 1 would give 1024, i.e. no backoff and a zero divisor below.
 */
static unsigned int calc_beta_effective(unsigned int b, unsigned int nconn)
{
	return min(1024U - (1024U - b) / nconn, CP_BETA_MAX);
}

static void report_params(void)
{
	unsigned int be = READ_ONCE(beta_effective);

	pr_info("beta/n: %u/%u, effective_beta: %u, backoff rate: %u%%, rtt_scaled: %u, rtt_ref_us: %u\n",
		READ_ONCE(beta), READ_ONCE(n), be, be * 100 / 1024,
		READ_ONCE(rtt_scaled), READ_ONCE(rtt_ref_us));
}

/* One set callback for the four writable parameters: parse, check the
 * range of this particular parameter, store, recompute, report.
 */
static int param_set_ranged(const char *val, const struct kernel_param *kp)
{
	unsigned int v, lo, hi;
	int ret;

	ret = kstrtouint(val, 0, &v);
	if (ret)
		return ret;

	if (kp->arg == &beta) {
		lo = CP_BETA_MIN;
		hi = CP_BETA_MAX;
	} else if (kp->arg == &n) {
		lo = CP_N_MIN;
		hi = CP_N_MAX;
	} else if (kp->arg == &rtt_scaled) {
		lo = 0;
		hi = 1;
	} else {
		lo = CP_RTT_REF_MIN;
		hi = CP_RTT_REF_MAX;
	}
	if (v < lo || v > hi)
		return -EINVAL;

	WRITE_ONCE(*(unsigned int *)kp->arg, v);
	WRITE_ONCE(beta_effective,
		   calc_beta_effective(READ_ONCE(beta), READ_ONCE(n)));
	WRITE_ONCE(backoff_pct, READ_ONCE(beta_effective) * 100 / 1024);
	report_params();
	return 0;
}

static const struct kernel_param_ops ranged_ops = {
	.set = param_set_ranged,
	.get = param_get_uint,
};

module_param_cb(beta, &ranged_ops, &beta, 0644);
MODULE_PARM_DESC(beta, "beta for multiplicative decrease, 1/1024 (1..1023, default 717)");
module_param_cb(n, &ranged_ops, &n, 0644);
MODULE_PARM_DESC(n, "number of parallel connections emulated (1..10, default 1)");
module_param_cb(rtt_scaled, &ranged_ops, &rtt_scaled, 0644);
MODULE_PARM_DESC(rtt_scaled, "scale the recovery time K by clamp(rtt_ref/min_rtt, 1/2, 2) (0/1)");
module_param_cb(rtt_ref_us, &ranged_ops, &rtt_ref_us, 0644);
MODULE_PARM_DESC(rtt_ref_us, "reference RTT at which the K scaling is 1, us (1000..10000000)");
module_param(beta_effective, uint, 0444);
MODULE_PARM_DESC(beta_effective, "1024 - (1024 - beta) / n, in use (read only)");
module_param(backoff_pct, uint, 0444);
MODULE_PARM_DESC(backoff_pct, "share of cwnd kept on loss, beta_effective * 100 / 1024 in % (read only)");

/* Per-connection state: tcp_cubic's struct bictcp */
struct cplus {
	u32	cnt;		/* increase cwnd by 1 after this many ACKed pkts */
	u32	last_max_cwnd;	/* W_max: cwnd before the last reduction */
	u32	last_cwnd;	/* cwnd when cnt was last computed */
	u32	last_time;	/* jiffies when cnt was last computed */
	u32	bic_origin_point;/* origin of the cubic curve */
	u32	bic_K;		/* time to origin from epoch start, 2^-10 s */
	u32	delay_min;	/* min RTT, us */
	u32	epoch_start;	/* jiffies when the current epoch began */
	u32	ack_cnt;	/* packets ACKed in the epoch (friendliness) */
	u32	tcp_cwnd;	/* estimated Reno cwnd */
	u32	k_factor;	/* CUBIC+: this epoch's time stretch f, 1/1024 */
	u16	unused;
	u8	sample_cnt;	/* HyStart: RTT samples in this round */
	u8	found;		/* HyStart: exit point found */
	u32	round_start;	/* HyStart: start of the round, us */
	u32	end_seq;	/* HyStart: snd_nxt at start of the round */
	u32	last_ack;	/* HyStart: time of the last closely spaced ACK */
	u32	curr_rtt;	/* HyStart: min RTT of this round */
};

static inline void cplus_reset(struct cplus *ca)
{
	memset(ca, 0, offsetof(struct cplus, unused));
	ca->found = 0;
}

static inline u32 cplus_clock_us(const struct sock *sk)
{
	return tcp_sk(sk)->tcp_mstamp;
}

static inline void cplus_hystart_reset(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cplus *ca = inet_csk_ca(sk);

	ca->round_start = ca->last_ack = cplus_clock_us(sk);
	ca->end_seq = tp->snd_nxt;
	ca->curr_rtt = ~0U;
	ca->sample_cnt = 0;
}

static void cplus_init(struct sock *sk)
{
	struct cplus *ca = inet_csk_ca(sk);

	cplus_reset(ca);
	if (hystart)
		cplus_hystart_reset(sk);
}

static void cplus_cwnd_event(struct sock *sk, enum tcp_ca_event event)
{
	if (event == CA_EVENT_TX_START) {
		struct cplus *ca = inet_csk_ca(sk);
		u32 now = tcp_jiffies32;
		s32 delta;

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

/* Cube root: lookup of the top bits (same table as tcp_cubic, so results
 * are identical), then one Newton-Raphson step.
 */
static u32 cubic_root(u64 a)
{
	static const u8 v[] = {
		/* 0x00 */    0,   54,   54,   54,  118,  118,  118,  118,
		/* 0x08 */  123,  129,  134,  138,  143,  147,  151,  156,
		/* 0x10 */  157,  161,  164,  168,  170,  173,  176,  179,
		/* 0x18 */  181,  185,  187,  190,  192,  194,  197,  199,
		/* 0x20 */  200,  202,  204,  206,  209,  211,  213,  215,
		/* 0x28 */  217,  219,  221,  222,  224,  225,  227,  229,
		/* 0x30 */  231,  232,  234,  236,  237,  239,  240,  242,
		/* 0x38 */  244,  245,  246,  248,  250,  251,  252,  254,
	};
	u32 x, b, shift;

	b = fls64(a);
	if (b < 7)	/* a in [0..63] */
		return ((u32)v[(u32)a] + 35) >> 6;

	b = ((b * 84) >> 8) - 1;
	shift = (a >> (b * 3));

	x = ((u32)(((u32)v[shift] + 10) << b)) >> 6;

	/* x(k+1) = (2 * x(k) + a / x(k)^2) / 3 */
	x = (2 * x + (u32)div64_u64(a, (u64)x * (u64)(x - 1)));
	x = ((x * 341) >> 10);
	return x;
}

/* f(RTT) in 1/1024: rtt_ref / min_rtt clamped to [1/2, 2]; monotonically
 * decreasing in RTT, 1.0 at rtt_ref, 1.0 without an RTT sample.
 */
static u32 k_rtt_factor(const struct sock *sk, const struct cplus *ca)
{
	u32 rtt = ca->delay_min;
	u64 f;

	if (!rtt)	/* reset after an RTO: use the socket's windowed min RTT */
		rtt = tcp_min_rtt(tcp_sk(sk));
	if (!rtt || rtt == ~0U)
		return 1024;
	f = div_u64((u64)READ_ONCE(rtt_ref_us) << 10, rtt);
	return (u32)clamp_t(u64, f, 512, 2048);
}

/* tcp_cubic's bictcp_update(): compute ca->cnt for this ACK */
static void cplus_update(struct sock *sk, struct cplus *ca, u32 cwnd,
			 u32 acked, u32 beta_base)
{
	u32 delta, bic_target, max_cnt;
	u64 offs, t;

	ca->ack_cnt += acked;	/* count the number of ACKed packets */

	if (ca->last_cwnd == cwnd &&
	    (s32)(tcp_jiffies32 - ca->last_time) <= HZ / 32)
		return;

	/* The CUBIC function can update ca->cnt at most once per jiffy.
	 * On all cwnd reduction events, ca->epoch_start is set to 0,
	 * which will force a recalculation of ca->cnt.
	 */
	if (ca->epoch_start && tcp_jiffies32 == ca->last_time)
		goto tcp_friendliness;

	ca->last_cwnd = cwnd;
	ca->last_time = tcp_jiffies32;

	if (ca->epoch_start == 0) {
		ca->epoch_start = tcp_jiffies32;	/* record beginning */
		ca->ack_cnt = acked;			/* start counting */
		ca->tcp_cwnd = cwnd;			/* sync with cubic */

		if (ca->last_max_cwnd <= cwnd) {
			ca->bic_K = 0;
			ca->bic_origin_point = cwnd;
		} else {
			/* K = cbrt((W_max - cwnd) * rtt / C) in 2^-10 s */
			ca->bic_K = cubic_root(cube_factor
					       * (ca->last_max_cwnd - cwnd));
			ca->bic_origin_point = ca->last_max_cwnd;
		}
		/* CUBIC+: this epoch's clock runs f(RTT) times slower, so W_max
		 * is regained after K' = f * K, from the same starting window.
		 */
		ca->k_factor = READ_ONCE(rtt_scaled) ? k_rtt_factor(sk, ca) : 1024;
	}

	/* time since epoch start plus one min RTT, in 2^-10 s */
	t = (s32)(tcp_jiffies32 - ca->epoch_start);
	t += usecs_to_jiffies(ca->delay_min);
	t <<= BICTCP_HZ;
	do_div(t, HZ);
	if (ca->k_factor && ca->k_factor != 1024)	/* CUBIC+: t / f */
		t = div_u64(t << 10, ca->k_factor);

	if (t < ca->bic_K)		/* t - K */
		offs = ca->bic_K - t;
	else
		offs = t - ca->bic_K;

	/* c/rtt * (t-K)^3 */
	delta = (cube_rtt_scale * offs * offs * offs) >> (10 + 3 * BICTCP_HZ);
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
	/* TCP-friendly region: follow the Reno estimate if it is faster.
	 * beta_scale = 8*(1024+beta)/3/(1024-beta) as in tcp_cubic, from beta
	 * (not beta_effective: seed 000 changes only cwnd and ssthresh), read
	 * now instead of once at load.
	 */
	if (tcp_friendliness) {
		u32 scale = 8 * (BICTCP_BETA_SCALE + beta_base) / 3 /
			    (BICTCP_BETA_SCALE - beta_base);

		delta = (cwnd * scale) >> 3;
		while (ca->ack_cnt > delta) {		/* update tcp cwnd */
			ca->ack_cnt -= delta;
			ca->tcp_cwnd++;
		}

		if (ca->tcp_cwnd > cwnd) {	/* if bic is slower than tcp */
			delta = ca->tcp_cwnd - cwnd;
			max_cnt = cwnd / delta;
			if (ca->cnt > max_cnt)
				ca->cnt = max_cnt;
		}
	}

	/* At most 1 packet per 2 ACKed: cwnd grows at most 1.5x per RTT */
	ca->cnt = max(ca->cnt, 2U);
}

static void cplus_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cplus *ca = inet_csk_ca(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;

	if (tcp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	cplus_update(sk, ca, tcp_snd_cwnd(tp), acked, READ_ONCE(beta));
	tcp_cong_avoid_ai(tp, ca->cnt, acked);
}

static u32 cplus_recalc_ssthresh(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct cplus *ca = inet_csk_ca(sk);
	u32 beta_eff = READ_ONCE(beta_effective);

	ca->epoch_start = 0;	/* end of epoch */

	/* W_max and fast convergence: if this loss came below the previous
	 * W_max, release more bandwidth: W_max = cwnd * (1 + beta) / 2.
	 */
	if (tcp_snd_cwnd(tp) < ca->last_max_cwnd && fast_convergence)
		ca->last_max_cwnd = (tcp_snd_cwnd(tp) *
				     (BICTCP_BETA_SCALE + beta_eff)) /
				    (2 * BICTCP_BETA_SCALE);
	else
		ca->last_max_cwnd = tcp_snd_cwnd(tp);

	return max((tcp_snd_cwnd(tp) * beta_eff) / BICTCP_BETA_SCALE, 2U);
}

static void cplus_state(struct sock *sk, u8 new_state)
{
	if (new_state == TCP_CA_Loss) {
		cplus_reset(inet_csk_ca(sk));
		cplus_hystart_reset(sk);
	}
}

/* Account for TSO/GRO delays (tcp_cubic's hystart_ack_delay()) */
static u32 hystart_ack_delay(const struct sock *sk)
{
	unsigned long rate;

	rate = READ_ONCE(sk->sk_pacing_rate);
	if (!rate)
		return 0;
	return min_t(u64, USEC_PER_MSEC,
		     div64_ul((u64)sk->sk_gso_max_size * 4 * USEC_PER_SEC, rate));
}

static void hystart_update(struct sock *sk, u32 delay)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cplus *ca = inet_csk_ca(sk);
	u32 threshold;

	if (after(tp->snd_una, ca->end_seq))
		cplus_hystart_reset(sk);

	/* hystart triggers when cwnd is larger than some threshold */
	if (tcp_snd_cwnd(tp) < hystart_low_window)
		return;

	if (hystart_detect & HYSTART_ACK_TRAIN) {
		u32 now = cplus_clock_us(sk);

		/* first detection parameter - ack-train detection */
		if ((s32)(now - ca->last_ack) <= hystart_ack_delta_us) {
			ca->last_ack = now;

			threshold = ca->delay_min + hystart_ack_delay(sk);

			/* Hystart ack train triggers if we get ack past
			 * ca->delay_min/2. Pacing might have delayed packets
			 * up to RTT/2 during slow start.
			 */
			if (sk->sk_pacing_status == SK_PACING_NONE)
				threshold >>= 1;

			if ((s32)(now - ca->round_start) > threshold) {
				ca->found = 1;
				NET_INC_STATS(sock_net(sk),
					      LINUX_MIB_TCPHYSTARTTRAINDETECT);
				NET_ADD_STATS(sock_net(sk),
					      LINUX_MIB_TCPHYSTARTTRAINCWND,
					      tcp_snd_cwnd(tp));
				tp->snd_ssthresh = tcp_snd_cwnd(tp);
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
			if (ca->curr_rtt > ca->delay_min +
			    HYSTART_DELAY_THRESH(ca->delay_min >> 3)) {
				ca->found = 1;
				NET_INC_STATS(sock_net(sk),
					      LINUX_MIB_TCPHYSTARTDELAYDETECT);
				NET_ADD_STATS(sock_net(sk),
					      LINUX_MIB_TCPHYSTARTDELAYCWND,
					      tcp_snd_cwnd(tp));
				tp->snd_ssthresh = tcp_snd_cwnd(tp);
			}
		}
	}
}

static void cplus_acked(struct sock *sk, const struct ack_sample *sample)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct cplus *ca = inet_csk_ca(sk);
	u32 delay;

	/* Some calls are for duplicates without timestamps */
	if (sample->rtt_us < 0)
		return;

	/* Discard delay samples right after fast recovery */
	if (ca->epoch_start && (s32)(tcp_jiffies32 - ca->epoch_start) < HZ)
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

static struct tcp_congestion_ops cubic_plus __read_mostly = {
	.init		= cplus_init,
	.ssthresh	= cplus_recalc_ssthresh,
	.cong_avoid	= cplus_cong_avoid,
	.set_state	= cplus_state,
	.undo_cwnd	= tcp_reno_undo_cwnd,
	.cwnd_event	= cplus_cwnd_event,
	.pkts_acked	= cplus_acked,
	.owner		= THIS_MODULE,
	.name		= "cubic_plus",
};

static int __init cplus_register(void)
{
	BUILD_BUG_ON(sizeof(struct cplus) > ICSK_CA_PRIV_SIZE);

	/* Load-time values come through the same checks as run-time writes
	 * (module_param_cb calls the set callback), so they are valid here.
	 */
	beta_effective = calc_beta_effective(beta, n);

	/* tcp_cubic's constants for C = bic_scale/1024 and an RTT of 100 ms:
	 * 1024*c/rtt, and 2^40 / (bic_scale * 10) for K = cbrt(dW * rtt / c)
	 */
	cube_rtt_scale = (bic_scale * 10);
	cube_factor = 1ull << (10 + 3 * BICTCP_HZ);
	do_div(cube_factor, bic_scale * 10);

	report_params();
	return tcp_register_congestion_control(&cubic_plus);
}

static void __exit cplus_unregister(void)
{
	tcp_unregister_congestion_control(&cubic_plus);
}

module_init(cplus_register);
module_exit(cplus_unregister);

MODULE_AUTHOR("netrepro");
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("CUBIC+ TCP: CUBIC with run-time backoff 1-(1-beta)/n and optional RTT-scaled K");
