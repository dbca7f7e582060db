/* SPDX-License-Identifier: GPL-2.0 */
/*
 * port.h - what the BPF ports of Linux's congestion controls share.
 *
 * The ports (bic, highspeed, htcp, hybla, illinois, lp, scalable, vegas,
 * veno, westwood, yeah) behave as the kernel's own modules do on the same
 * ACK stream. This header holds what they have in common, so that no port
 * repeats it:
 *
 *  - the socket accessors and sequence arithmetic of include/net/tcp.h;
 *  - Reno, as the kernel's own kfuncs: slow start (tcp_slow_start), the
 *    additive increase of one segment per w ACKed (tcp_cong_avoid_ai), the
 *    whole of tcp_reno_cong_avoid, the halving of tcp_reno_ssthresh and the
 *    undo of tcp_reno_undo_cwnd;
 *  - the kernel's clock (HZ from its config, jiffies, tcp_mstamp in us);
 *  - the ssthresh guard of ss_guard.h, counted in the port's parameter map,
 *    and its settling of ssthresh() returns in set_state (PORT_SETTLE);
 *  - the parameter map's shape and the name the port registers under.
 *
 * Naming. A port registers under the kernel's name (`vegas`) where the
 * kernel does not have the algorithm, and under `bpf_vegas` where it does,
 * so that the module and the port can run side by side. The Makefile builds
 * both objects from one source: bpf/vegas.bpf.o, and bpf/build/bpf_vegas.bpf.o
 * with -DPORT_PREFIXED. Each port ends with
 *
 *     SEC(".struct_ops")
 *     struct tcp_congestion_ops PORT_OPS(vegas) = { ..., .name = PORT_NAME(vegas) };
 *
 * Parameters. Each port has one ARRAY map of one entry, all fields __u32,
 * named in the port's source (e.g. vegas_params). It starts with the
 * module's parameters, under the module's names, and ends with
 * PORT_COUNTERS. While `set` is 0 the port uses the module's defaults; the
 * loader (kmod/loader.py) writes the defaults and set = 1 right after
 * registering, and later values at any time: every callback reads the map,
 * so a change reaches established connections at their next ACK or loss.
 *
 * netrepro's own variants (cubic_plus, newcwv, reno_beta) include this
 * header too, for the accessors, Reno, the clock and the guard; their maps
 * keep their own layouts (kmod/README.md), without PORT_COUNTERS' `set`,
 * and they count a repair with PORT_GUARD_LAZY.
 */
#ifndef NETREPRO_PORT_H
#define NETREPRO_PORT_H

#include "ss_guard.h"

/* -- the name registered ------------------------------------------------- */

#ifdef PORT_PREFIXED
#define PORT_OPS(n)	bpf_##n
#define PORT_NAME(n)	"bpf_" #n
#else
#define PORT_OPS(n)	n
#define PORT_NAME(n)	#n
#endif

/* -- the parameter map ----------------------------------------------------- */

/* The last fields of every port's parameter map. */
#define PORT_COUNTERS							\
	__u32 set;		/* 0: the module's defaults are in use */	\
	__u32 conns;		/* connections initialised */		\
	__u32 ss_repairs;	/* implausible ssthresh values undone */	\
	__u32 ss_caught		/* altered ssthresh returns put right in set_state */

/* Declare the one-entry map `map_` of struct `struct_`, and `map__get()`. */
#define PORT_PARAM_MAP(struct_, map_)					\
	struct {							\
		__uint(type, BPF_MAP_TYPE_ARRAY);			\
		__uint(max_entries, 1);					\
		__type(key, __u32);					\
		__type(value, struct struct_);				\
	} map_ SEC(".maps");						\
	static __always_inline struct struct_ *map_##_get(void)		\
	{								\
		__u32 key = 0;						\
									\
		return bpf_map_lookup_elem(&map_, &key);		\
	}

/* A parameter: the map's value once the loader has set it, else the default
 * (p: a variable holding the map's pointer; it is read more than once). */
#define PORT_PARAM(p, field, dflt)	((p) && (p)->set ? (p)->field : (dflt))

/* -- the kernel's clock ---------------------------------------------------- */

extern unsigned long CONFIG_HZ __kconfig;
#define HZ		((__u32)CONFIG_HZ)
#define USEC_PER_SEC	1000000U
#define USEC_PER_MSEC	1000U
#define MSEC_PER_SEC	1000U

#define tcp_jiffies32	((__u32)bpf_jiffies64())

static __always_inline __u32 msecs_to_jiffies(__u32 ms)
{
	return (__u32)(((__u64)ms * HZ + MSEC_PER_SEC - 1) / MSEC_PER_SEC);
}

static __always_inline __u32 usecs_to_jiffies(__u32 us)
{
	return (__u32)(((__u64)us * HZ + USEC_PER_SEC - 1) / USEC_PER_SEC);
}

static __always_inline __u32 jiffies_to_usecs(__u32 j)
{
	return (__u32)((__u64)j * USEC_PER_SEC / HZ);
}

/* The same in 64 bits, for arithmetic that stays in __u64: HZ_U64 needs no
 * zero-extension from HZ's __u32 first, and the conversions return __u64
 * (netrepro's own variants were written, and measured, with these). */
#define HZ_U64		((__u64)CONFIG_HZ)

static __always_inline __u64 msecs_to_jiffies64(__u64 ms)
{
	return (ms * HZ_U64 + MSEC_PER_SEC - 1) / MSEC_PER_SEC;
}

static __always_inline __u64 usecs_to_jiffies64(__u64 us)
{
	return (us * HZ_U64 + USEC_PER_SEC - 1) / USEC_PER_SEC;
}

/* -- Reno, as the kernel's kfuncs ------------------------------------------ */

extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

/* -- include/net/tcp.h ----------------------------------------------------- */

#ifndef min
#define min(a, b)	((a) < (b) ? (a) : (b))
#define max(a, b)	((a) > (b) ? (a) : (b))
#endif

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

/* The port's per-connection state, in icsk_ca_priv (at most 104 bytes). */
#define PORT_CA(struct_, sk)	((struct struct_ *)inet_csk(sk)->icsk_ca_priv)

static __always_inline bool before(__u32 seq1, __u32 seq2)
{
	return (__s32)(seq1 - seq2) < 0;
}
#define after(seq2, seq1)	before(seq1, seq2)

static __always_inline bool tcp_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

static __always_inline bool tcp_is_cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited))
		return true;
	if (tcp_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return false;
}

static __always_inline __u32 tcp_packets_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

/* The socket's clock, in microseconds (tp->tcp_mstamp). */
static __always_inline __u32 tcp_clock_us(const struct sock *sk)
{
	return (__u32)tcp_sk(sk)->tcp_mstamp;
}

/* Reno's reduction, max(cwnd / 2, 2), for ports that keep it. */
static __always_inline __u32 reno_ssthresh(const struct tcp_sock *tp)
{
	return max(tp->snd_cwnd >> 1U, 2U);
}

/* tcp_reno_undo_cwnd(): back to the cwnd before the (spurious) reduction. */
static __always_inline __u32 reno_undo_cwnd(const struct tcp_sock *tp)
{
	return max(tp->snd_cwnd, tp->prior_cwnd);
}

/* -- the ssthresh guard ---------------------------------------------------- */

/* Check ssthresh (ss_guard.h); count a repair in the map's ss_repairs. */
#define PORT_GUARD(guard, sk, p)					\
	do {								\
		typeof(p) port_p_ = (p);				\
									\
		if (ss_guard_check((guard), tcp_sk(sk)) && port_p_)	\
			__sync_fetch_and_add(&port_p_->ss_repairs, 1);	\
	} while (0)

/* As PORT_GUARD, but `get` (an expression giving the map's pointer, such as
 * map__get()) is evaluated only when there is a repair to count, so that a
 * callback looks the map up only then; as netrepro's own variants do. */
#define PORT_GUARD_LAZY(guard, sk, get)					\
	do {								\
		if (ss_guard_check((guard), tcp_sk(sk))) {		\
			typeof(get) port_p_ = (get);			\
									\
			if (port_p_)					\
				__sync_fetch_and_add(&port_p_->ss_repairs, 1); \
		}							\
	} while (0)

/* First thing in set_state: put back the value ssthresh() returned if the
 * kernel stored another (ss_guard.h), counted in the map's ss_caught; `get`
 * evaluated only then. */
#define PORT_SETTLE(guard, sk, get)					\
	do {								\
		if (ss_guard_settle((guard), tcp_sk(sk))) {		\
			typeof(get) port_p_ = (get);			\
									\
			if (port_p_)					\
				__sync_fetch_and_add(&port_p_->ss_caught, 1); \
		}							\
	} while (0)

/* At init: count the connection and start the guard. */
#define PORT_START(guard, sk, p)					\
	do {								\
		typeof(p) port_p_ = (p);				\
									\
		if (port_p_)						\
			__sync_fetch_and_add(&port_p_->conns, 1);	\
		ss_guard_start((guard), tcp_sk(sk));			\
	} while (0)

#endif /* NETREPRO_PORT_H */
