// SPDX-License-Identifier: GPL-2.0
/*
 * reno_beta.c - NewReno with a tunable window reduction factor, as a
 * loadable TCP congestion-control module.
 *
 * Slow start, congestion avoidance and undo are Linux's reno ones; only the
 * multiplicative decrease changes (seed 000, section V, Reno sensitivity
 * analysis over the reduction factor):
 *
 *     ssthresh = max(cwnd * (1000 - r) / 1000, 2)       r in per mille
 *
 * r = 500 is standard Reno (cwnd / 2); r = 900 keeps only 10 % of cwnd.
 *
 * Parameter (/sys/module/reno_beta/parameters/r, writable at run time):
 *   r  1..999 per mille, default 500. Out-of-range writes fail with -EINVAL.
 * It is read at every loss, so established connections follow a change at
 * their next loss. The BPF twin is bpf/reno_beta.bpf.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <net/tcp.h>

#define RB_R_MIN	1U
#define RB_R_MAX	999U

static unsigned int r = 500;
static unsigned int backoff_permille = 500;	/* 1000 - r: share of cwnd kept */

static int param_set_r(const char *val, const struct kernel_param *kp)
{
	unsigned int v;
	int ret;

	ret = kstrtouint(val, 0, &v);
	if (ret)
		return ret;
	if (v < RB_R_MIN || v > RB_R_MAX)
		return -EINVAL;
	WRITE_ONCE(r, v);
	WRITE_ONCE(backoff_permille, 1000 - v);
	pr_info("r: %u/1000, backoff: %u%% of cwnd kept\n", v, (1000 - v) / 10);
	return 0;
}

static const struct kernel_param_ops r_ops = {
	.set = param_set_r,
	.get = param_get_uint,
};

module_param_cb(r, &r_ops, &r, 0644);
MODULE_PARM_DESC(r, "window reduction factor on loss, per mille (1..999, default 500 = Reno)");
module_param(backoff_permille, uint, 0444);
MODULE_PARM_DESC(backoff_permille, "share of cwnd kept on loss, 1000 - r, per mille (read only)");

static u32 reno_beta_ssthresh(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	u64 ss = (u64)tcp_snd_cwnd(tp) * (1000 - READ_ONCE(r));

	return max_t(u32, div_u64(ss, 1000), 2U);
}

static struct tcp_congestion_ops reno_beta __read_mostly = {
	.ssthresh	= reno_beta_ssthresh,
	.cong_avoid	= tcp_reno_cong_avoid,
	.undo_cwnd	= tcp_reno_undo_cwnd,
	.owner		= THIS_MODULE,
	.name		= "reno_beta",
};

static int __init reno_beta_register(void)
{
	pr_info("r: %u/1000, backoff: %u%% of cwnd kept\n", r, (1000 - r) / 10);
	return tcp_register_congestion_control(&reno_beta);
}

static void __exit reno_beta_unregister(void)
{
	tcp_unregister_congestion_control(&reno_beta);
}

module_init(reno_beta_register);
module_exit(reno_beta_unregister);

MODULE_AUTHOR("netrepro");
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("NewReno with a run-time window reduction factor r");
