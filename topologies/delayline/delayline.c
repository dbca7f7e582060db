/*
 * delayline - a userspace delay/loss line built on NFQUEUE.
 *
 * Why it exists: the kernel this project runs on has no sch_netem, so link
 * delay and random loss are emulated here instead.  iptables sends each packet
 * of a path direction to an NFQUEUE; this program learns only the packet's id
 * (metadata-only copy mode, no payload crosses to userspace), decides loss at
 * once with a seeded PRNG, and otherwise holds the packet in a FIFO until
 * arrival + delay, then gives the kernel an NF_ACCEPT verdict for it.
 *
 * Why it must run in a namespace *between* the hosts (a bridge namespace with
 * br_netfilter and `-m physdev` rules), never on an end host:
 *  - On the sender's egress, a held skb is still charged to the socket by TCP
 *    Small Queues, so TCP starves (1.1 Mbit/s instead of 18.8 on a
 *    20 Mbit/s link with a 50 ms hold).
 *    netem avoids that by orphaning the skb; a queue verdict cannot.
 *  - On the receiver's ingress, ping (and every tool using kernel receive
 *    timestamps) reads the time the packet hit the interface, before the hold,
 *    so the delay becomes invisible to the measurement.
 * After a packet has crossed a veth into the bridge namespace neither applies.
 *
 * Usage: delayline --queue NUM [--queue NUM ...] [--capacity PACKETS]
 *                  [--rt-priority N]
 *   Each queue starts with delay 0, jitter 0, loss 0, seed 1.  The process asks for
 *   SCHED_FIFO priority N (default 10, 0 = stay SCHED_OTHER; if refused, a
 *   warning on stderr and it carries on): with the CPUs busy, an ordinary
 *   task waited up to several ms to be scheduled after its timer fired,
 *   which went straight into the emulated delay.  After all queues are
 *   bound it prints {"ready":true,"queues":[...]}; on a startup failure
 *   {"ready":false,"error":"..."} (and a message on stderr), exit status 1.
 *
 * Control protocol: one command per line on stdin, exactly one JSON line on
 * stdout in reply (blank lines are ignored and get no reply):
 *   set Q [delay_us=D] [jitter_us=J] [loss=P] [seed=S]
 *                                          -> {"ok":true} | {"ok":false,"error":..}
 *       all-or-nothing; delay and jitter apply to packets arriving from now
 *       on; seed restarts the queue's two PRNGs (loss, jitter); 0 <= P < 1.
 *       With jitter J each packet's delay is drawn uniformly from D - J to
 *       D + J (at least 0), as netem's `delay D J` draws it, but a packet
 *       still never leaves before the one ahead of it: a link does not
 *       reorder, so a short draw waits for the longer one in front.
 *   stats -> {"ok":true,"queues":{"Q":{"received","released","dropped_loss",
 *       "dropped_overflow","held","held_max","dropped_socket","late_ns_sum",
 *       "late_ns_max"},..},"enobufs":N,"wake_early_ns":N}
 *       late_ns_*: how long after its due time each packet was released;
 *       dropped_overflow includes packets the kernel dropped because the queue
 *       already held --capacity packets (they never reach us, so they are not
 *       in "received"); dropped_socket counts packets lost because our socket
 *       buffer was full (enobufs counts those overflow events).
 *   lateness -> {"ok":true,"count":N,"max_ns":M,"buckets":[[B,N],..]}
 *       every queue's releases since the last `lateness` (or the start), and
 *       starts a new window: how many packets were released, the latest
 *       one's lateness (release time - due time), and a histogram of them
 *       (only buckets that hold packets): bucket B < 16 holds lateness of B
 *       us; above, eight buckets per power of two of us, bucket
 *       16 + 8 (e - 4) + s holding [(8 + s) 2^(e-3), (9 + s) 2^(e-3)) us.
 * stdin EOF, SIGTERM or SIGINT: held packets are accepted, queues unbound,
 * exit status 0.  EOF means the controller is gone, so the delay line never
 * outlives its owner.  The controller must read every reply: a full stdout
 * pipe blocks this process and with it every held packet.
 *
 * Time-critical design points:
 *  - A single netlink socket serves all queues; it and stdin are waited on
 *    with ppoll(), whose timeout is the time to the earliest due packet
 *    (nanosecond timespec, timer slack 1 ns), infinite when nothing is held.
 *  - A timer wake-up is late, and later the longer the sleep and the idler
 *    the (virtual) CPU: 5 us after 100 us, 80 us after 25 ms on the
 *    project's VMs, which added up to +0.5 ms on a 40 ms RTT.  So the loop
 *    keeps an estimate of that lateness (a moving average of what each
 *    long sleep measured) and asks to be woken that much early; the short
 *    rest of the wait is a second sleep, late by a few us only.  It does
 *    not spin: a spinning SCHED_FIFO task would hold off, on its CPU, the
 *    very senders and receivers whose packets it times.
 *  - Packets are read in bursts with recvmmsg() and stamped with
 *    CLOCK_MONOTONIC when read.  Releases use NFQNL_MSG_VERDICT_BATCH: one
 *    message accepts every packet of a queue up to an id, which is exactly the
 *    FIFO prefix that has become due (loss/overflow drops are verdicted
 *    individually and earlier in the same send buffer, so the batch never
 *    covers them).  All verdicts of one loop turn go out in one sendmsg.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

#define MAX_QUEUES        64
#define DEFAULT_CAPACITY  65536u
#define MAX_CAPACITY      (1u << 24)
#define RCVBUF_BYTES      (32 * 1024 * 1024)
#define MAX_DELAY_US      3600000000ull         /* one hour: keeps ns in int64 */
#define RX_BATCH          64                    /* datagrams per recvmmsg() */
#define RX_MSG_BYTES      4096                  /* metadata-only msgs are ~200 B */
#define DRAIN_BUDGET      1024                  /* msgs per turn before releasing */
#define TX_BUF_BYTES      (64 * 1024)
#define LINE_MAX_BYTES    4096

/* ------------------------------------------------------------------ */
/* Per-queue state                                                     */

struct held {
	uint32_t id;       /* kernel packet id (increasing within a queue) */
	int64_t due_ns;    /* CLOCK_MONOTONIC release time */
};

struct queue {
	uint16_t num;
	/* parameters, changed at run time */
	uint64_t delay_ns;
	uint64_t jitter_ns;        /* each delay drawn from delay +- this */
	uint64_t loss_threshold;   /* drop when prng output < this (P * 2^64) */
	uint64_t prng;             /* splitmix64 state of the loss draws */
	uint64_t jitter_prng;      /* and of the jitter draws, a stream of its own */
	/* FIFO ring of held packets; size == capacity, allocated once */
	struct held *ring;
	uint32_t head, count;
	/* counters */
	uint64_t received, released, dropped_loss, dropped_overflow, held_max;
	uint64_t late_ns_sum, late_ns_max;   /* release time - due time */
};

static struct queue queues[MAX_QUEUES];
static unsigned nqueues;
static uint32_t capacity = DEFAULT_CAPACITY;
static int rt_priority = 10;       /* SCHED_FIFO priority, 0 = none */

static struct mnl_socket *nl;
static int nl_fd = -1;
static unsigned nl_portid;
static uint64_t enobufs;           /* times the socket buffer overflowed */
static int64_t wake_early_ns;      /* estimate of a timer wake-up's lateness */
#define WAKE_EARLY_MAX_NS 1000000  /* beyond that, something else is wrong */
/* Lateness of each release since the last `lateness` command (see the protocol above). */
#define LATE_BUCKETS 256
static uint64_t late_hist[LATE_BUCKETS];
static uint64_t late_count, late_window_max_ns;
static uint64_t verdict_errors;    /* NLMSG_ERROR replies to verdicts */
static uint64_t send_errors;       /* failed verdict sends */

/* pending startup config request: seq and its result (1 = still waiting) */
static uint32_t cfg_seq;
static int cfg_result;

/* set when stdout is gone: the controller cannot hear us any more */
static bool stop_requested;

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */

static int64_t now_ns(void)
{
	struct timespec ts;

	/* CLOCK_MONOTONIC cannot fail with a valid pointer; checked anyway. */
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
		perror("delayline: clock_gettime");
		exit(1);
	}
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void log_err(const char *fmt, ...)
{
	va_list ap;

	fputs("delayline: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* splitmix64: tiny, fast, and fully determined by the 64-bit seed. */
static uint64_t prng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static struct queue *find_queue(unsigned num)
{
	for (unsigned i = 0; i < nqueues; i++)
		if (queues[i].num == num)
			return &queues[i];
	return NULL;
}

/* Write one reply line and flush; a dead stdout means a dead controller. */
static void reply(const char *line)
{
	if (fputs(line, stdout) == EOF || fputc('\n', stdout) == EOF ||
	    fflush(stdout) == EOF) {
		log_err("stdout write failed (%s), exiting", strerror(errno));
		stop_requested = true;
	}
}

/* Copy msg into out as the body of a JSON string (quotes not included). */
static void json_escape(char *out, size_t outlen, const char *msg)
{
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
		if (o + 7 >= outlen)
			break;
		if (*p == '"' || *p == '\\')
			o += (size_t)snprintf(out + o, outlen - o, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			o += (size_t)snprintf(out + o, outlen - o, "\\u%04x", *p);
		else
			out[o++] = (char)*p;
	}
	out[o] = '\0';
}

/* Reply {"ok":false,"error":msg}. */
static void reply_error(const char *fmt, ...)
{
	char msg[512], esc[1024], line[1100];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_escape(esc, sizeof(esc), msg);
	snprintf(line, sizeof(line), "{\"ok\":false,\"error\":\"%s\"}", esc);
	reply(line);
}

/* ------------------------------------------------------------------ */
/* Outgoing verdicts: appended to one buffer, sent once per loop turn  */

static char tx_buf[TX_BUF_BYTES];
static size_t tx_len;

static void tx_flush(void)
{
	if (tx_len == 0)
		return;
	/* A lost ACCEPT batch is repaired by the next one (it covers all
	 * lower ids); report the first few failures only. */
	if (mnl_socket_sendto(nl, tx_buf, tx_len) < 0 && send_errors++ < 10)
		log_err("sending verdicts failed: %s", strerror(errno));
	tx_len = 0;
}

/* type is NFQNL_MSG_VERDICT (one id) or NFQNL_MSG_VERDICT_BATCH (ids <= id). */
static void tx_verdict(int type, uint16_t qnum, uint32_t id, int verdict)
{
	/* nlmsghdr + nfgenmsg + verdict attribute, with room to spare */
	if (tx_len + 64 > sizeof(tx_buf))
		tx_flush();
	struct nlmsghdr *nlh = nfq_nlmsg_put(tx_buf + tx_len, type, qnum);
	nfq_nlmsg_verdict_put(nlh, (int)id, verdict);
	tx_len += NLMSG_ALIGN(nlh->nlmsg_len);
}

/* ------------------------------------------------------------------ */
/* Holding and releasing                                               */

static void on_packet(struct queue *q, uint32_t id, int64_t arrival)
{
	q->received++;

	/* Draw for every packet, even at loss 0, so one seed gives one stream
	 * of decisions regardless of when loss is switched on. */
	if (prng_next(&q->prng) < q->loss_threshold) {
		q->dropped_loss++;
		tx_verdict(NFQNL_MSG_VERDICT, q->num, id, NF_DROP);
		return;
	}
	if (q->count >= capacity) {
		q->dropped_overflow++;
		tx_verdict(NFQNL_MSG_VERDICT, q->num, id, NF_DROP);
		return;
	}

	/* Drawn for every packet held, jitter or not, from a stream of its own,
	 * so that jitter leaves the loss decisions of a seed as they were. */
	uint64_t draw = prng_next(&q->jitter_prng);
	int64_t delay = (int64_t)q->delay_ns;
	if (q->jitter_ns > 0) {
		/* uniform in [delay - J, delay + J]: draw * (2J + 1) / 2^64 */
		uint64_t span = 2 * q->jitter_ns + 1;
		delay += (int64_t)(((unsigned __int128)draw * span) >> 64) - (int64_t)q->jitter_ns;
		if (delay < 0)
			delay = 0;
	}
	int64_t due = arrival + delay;
	/* After a delay decrease, or behind a longer draw of the jitter, a new
	 * packet may not overtake an older one. */
	if (q->count > 0) {
		const struct held *tail =
			&q->ring[(q->head + q->count - 1) % capacity];
		if (due < tail->due_ns)
			due = tail->due_ns;
	}
	q->ring[(q->head + q->count) % capacity] = (struct held){ id, due };
	q->count++;
	if (q->count > q->held_max)
		q->held_max = q->count;
}

/* The histogram bucket of a lateness (see `lateness` in the protocol). */
static unsigned late_bucket(uint64_t late_ns)
{
	uint64_t us = late_ns / 1000;
	if (us < 16)
		return (unsigned)us;
	unsigned e = 63u - (unsigned)__builtin_clzll(us);   /* 2^e <= us */
	unsigned b = 16u + (e - 4u) * 8u + (unsigned)((us >> (e - 3u)) & 7u);
	return b < LATE_BUCKETS ? b : LATE_BUCKETS - 1;
}

/* Accept the due prefix of every FIFO with one batch verdict per queue. */
static void release_due(int64_t now)
{
	for (unsigned i = 0; i < nqueues; i++) {
		struct queue *q = &queues[i];
		uint32_t n = 0, last_id = 0;

		while (n < q->count) {
			const struct held *h = &q->ring[(q->head + n) % capacity];
			if (h->due_ns > now)
				break;
			uint64_t late = (uint64_t)(now - h->due_ns);
			q->late_ns_sum += late;
			if (late > q->late_ns_max)
				q->late_ns_max = late;
			late_hist[late_bucket(late)]++;
			late_count++;
			if (late > late_window_max_ns)
				late_window_max_ns = late;
			last_id = h->id;
			n++;
		}
		if (n == 0)
			continue;
		tx_verdict(NFQNL_MSG_VERDICT_BATCH, q->num, last_id, NF_ACCEPT);
		q->head = (q->head + n) % capacity;
		q->count -= n;
		q->released += n;
	}
}

/* Earliest due time over all queues, or INT64_MAX when nothing is held. */
static int64_t earliest_due(void)
{
	int64_t t = INT64_MAX;

	for (unsigned i = 0; i < nqueues; i++)
		if (queues[i].count > 0 && queues[i].ring[queues[i].head].due_ns < t)
			t = queues[i].ring[queues[i].head].due_ns;
	return t;
}

/* On exit, let held packets go rather than have the kernel drop them. */
static void release_all(void)
{
	release_due(INT64_MAX);
	tx_flush();
}

/* ------------------------------------------------------------------ */
/* Receiving from netlink                                              */

static void handle_error_msg(const struct nlmsghdr *nlh)
{
	const struct nlmsgerr *err = mnl_nlmsg_get_payload(nlh);

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*err)))
		return;
	if (cfg_result == 1 && nlh->nlmsg_seq == cfg_seq) {
		cfg_result = err->error;      /* 0 is the ack */
		return;
	}
	if (err->error != 0) {
		/* Should not happen; report the first few, then count. */
		if (verdict_errors++ < 10)
			log_err("kernel rejected a request: %s",
				strerror(-err->error));
	}
}

static void handle_packet_msg(const struct nlmsghdr *nlh, int64_t arrival)
{
	const struct nfgenmsg *nfg = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *attr;

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*nfg)))
		return;
	struct queue *q = find_queue(ntohs(nfg->res_id));
	if (q == NULL)
		return;
	mnl_attr_for_each(attr, nlh, sizeof(*nfg)) {
		if (mnl_attr_get_type(attr) != NFQA_PACKET_HDR)
			continue;
		if (mnl_attr_get_payload_len(attr) <
		    sizeof(struct nfqnl_msg_packet_hdr))
			return;
		const struct nfqnl_msg_packet_hdr *ph =
			mnl_attr_get_payload(attr);
		on_packet(q, ntohl(ph->packet_id), arrival);
		return;
	}
}

/* Walk every netlink message in one datagram. */
static void handle_datagram(const char *buf, size_t len, int64_t arrival)
{
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)buf;
	int left = (int)len;

	for (; mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
		if (nlh->nlmsg_type == NLMSG_ERROR)
			handle_error_msg(nlh);
		else if (nlh->nlmsg_type ==
			 ((NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET))
			handle_packet_msg(nlh, arrival);
	}
}

static char rx_bufs[RX_BATCH][RX_MSG_BYTES];
static struct iovec rx_iov[RX_BATCH];
static struct mmsghdr rx_msgs[RX_BATCH];

/*
 * Read what is queued on the socket without blocking, up to budget messages.
 * Returns false only on an unexpected socket error.
 */
static bool drain_netlink(unsigned budget)
{
	while (budget > 0) {
		for (unsigned i = 0; i < RX_BATCH; i++) {
			rx_iov[i] = (struct iovec){ rx_bufs[i], RX_MSG_BYTES };
			rx_msgs[i].msg_hdr = (struct msghdr){
				.msg_iov = &rx_iov[i], .msg_iovlen = 1 };
		}
		int n = recvmmsg(nl_fd, rx_msgs, RX_BATCH, MSG_DONTWAIT, NULL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return true;
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				/* The kernel dropped messages (and their packets:
				 * see dropped_socket); keep going. */
				enobufs++;
				continue;
			}
			log_err("recvmmsg: %s", strerror(errno));
			return false;
		}
		int64_t arrival = now_ns();
		for (int i = 0; i < n; i++) {
			if (rx_msgs[i].msg_hdr.msg_flags & MSG_TRUNC)
				log_err("truncated netlink message ignored");
			else
				handle_datagram(rx_bufs[i], rx_msgs[i].msg_len,
						arrival);
		}
		if (n < RX_BATCH)
			return true;
		budget = budget > (unsigned)n ? budget - (unsigned)n : 0;
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* Socket setup                                                        */

/* Send one config message with an ack request and wait for the ack.
 * Packets of queues already bound may arrive meanwhile; they are held. */
static int send_config(struct nlmsghdr *nlh)
{
	static uint32_t seq;

	nlh->nlmsg_flags |= NLM_F_ACK;
	nlh->nlmsg_seq = cfg_seq = ++seq;
	cfg_result = 1;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;

	int64_t deadline = now_ns() + 2000000000;
	while (cfg_result == 1) {
		int64_t left = deadline - now_ns();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pfd = { .fd = nl_fd, .events = POLLIN };
		int r = poll(&pfd, 1, (int)(left / 1000000) + 1);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0 && !drain_netlink(DRAIN_BUDGET))
			return -EIO;
	}
	return cfg_result;
}

static int bind_queue(struct queue *q)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, q->num);

	/* Bind, metadata-only copy mode and queue length in one request. */
	nfq_nlmsg_cfg_put_cmd(nlh, AF_INET, NFQNL_CFG_CMD_BIND);
	nfq_nlmsg_cfg_put_params(nlh, NFQNL_COPY_META, 0);
	nfq_nlmsg_cfg_put_qmaxlen(nlh, capacity);
	return send_config(nlh);
}

static void unbind_queue(const struct queue *q)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, q->num);

	nfq_nlmsg_cfg_put_cmd(nlh, AF_INET, NFQNL_CFG_CMD_UNBIND);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		log_err("unbind queue %u: %s", q->num, strerror(errno));
}

/* Returns NULL on success, else a message for {"ready":false}. */
static const char *open_socket(char *err, size_t errlen)
{
	nl = mnl_socket_open(NETLINK_NETFILTER);
	if (nl == NULL) {
		snprintf(err, errlen, "netlink socket: %s", strerror(errno));
		return err;
	}
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		snprintf(err, errlen, "netlink bind: %s", strerror(errno));
		return err;
	}
	nl_fd = mnl_socket_get_fd(nl);
	nl_portid = mnl_socket_get_portid(nl);

	/* A large buffer absorbs bursts while we sleep or send verdicts. */
	int sz = RCVBUF_BYTES;
	if (setsockopt(nl_fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0) {
		log_err("SO_RCVBUFFORCE: %s; trying SO_RCVBUF", strerror(errno));
		if (setsockopt(nl_fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)) < 0)
			log_err("SO_RCVBUF: %s", strerror(errno));
	}
	/* ENOBUFS is left enabled on purpose: we count it (enobufs). */
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Commands from stdin                                                 */

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (*s < '0' || *s > '9')       /* strtoull would accept "-1", " 1" */
		return false;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return false;
	*out = v;
	return true;
}

/* set Q [delay_us=D] [jitter_us=J] [loss=P] [seed=S]: all or nothing. */
static void cmd_set(char *args)
{
	char *save = NULL, *tok = strtok_r(args, " \t", &save);
	uint64_t qnum, delay_us = 0, jitter_us = 0, seed = 0;
	double loss = 0;
	bool has_delay = false, has_jitter = false, has_loss = false, has_seed = false;

	if (tok == NULL || !parse_u64(tok, &qnum))
		return reply_error("usage: set QUEUE [delay_us=D] [jitter_us=J] [loss=P] [seed=S]");
	struct queue *q = qnum <= 65535 ? find_queue((unsigned)qnum) : NULL;
	if (q == NULL)
		return reply_error("unknown queue %s", tok);

	while ((tok = strtok_r(NULL, " \t", &save)) != NULL) {
		char *val = strchr(tok, '=');
		if (val == NULL)
			return reply_error("expected key=value, got '%s'", tok);
		*val++ = '\0';
		if (strcmp(tok, "delay_us") == 0) {
			if (!parse_u64(val, &delay_us) || delay_us > MAX_DELAY_US)
				return reply_error("delay_us must be an integer 0..%llu",
						   (unsigned long long)MAX_DELAY_US);
			has_delay = true;
		} else if (strcmp(tok, "jitter_us") == 0) {
			if (!parse_u64(val, &jitter_us) || jitter_us > MAX_DELAY_US)
				return reply_error("jitter_us must be an integer 0..%llu",
						   (unsigned long long)MAX_DELAY_US);
			has_jitter = true;
		} else if (strcmp(tok, "loss") == 0) {
			char *end;
			errno = 0;
			loss = strtod(val, &end);
			if (errno != 0 || end == val || *end != '\0' ||
			    !isfinite(loss) || loss < 0 || loss >= 1)
				return reply_error("loss must be a number with 0 <= loss < 1");
			has_loss = true;
		} else if (strcmp(tok, "seed") == 0) {
			if (!parse_u64(val, &seed))
				return reply_error("seed must be an unsigned 64-bit integer");
			has_seed = true;
		} else {
			return reply_error("unknown key '%s'", tok);
		}
	}

	if (has_delay)
		q->delay_ns = delay_us * 1000;
	if (has_jitter)
		q->jitter_ns = jitter_us * 1000;
	if (has_loss)   /* P * 2^64 < 2^64 because P < 1 */
		q->loss_threshold = (uint64_t)ldexp(loss, 64);
	if (has_seed) {
		q->prng = seed;
		q->jitter_prng = ~seed;   /* a different stream from the same seed */
	}
	reply("{\"ok\":true}");
}

/*
 * Kernel-side counters from /proc/net/netfilter/nfnetlink_queue for our
 * instances: packets dropped because the kernel queue held `capacity`
 * (queue_dropped) and because our socket buffer was full (user_dropped).
 */
static void kernel_drops(const struct queue *q, uint64_t *qdrop, uint64_t *udrop)
{
	FILE *f = fopen("/proc/net/netfilter/nfnetlink_queue", "r");
	unsigned num, portid, total, mode, range, qd, ud;

	*qdrop = *udrop = 0;
	if (f == NULL)
		return;
	while (fscanf(f, "%u %u %u %u %u %u %u %*u %*d", &num, &portid, &total,
		      &mode, &range, &qd, &ud) == 7) {
		if (num == q->num && portid == nl_portid) {
			*qdrop = qd;
			*udrop = ud;
			break;
		}
	}
	fclose(f);
}

static void cmd_stats(void)
{
	char line[256 * MAX_QUEUES + 128];
	size_t o = 0;

	o += (size_t)snprintf(line + o, sizeof(line) - o,
			      "{\"ok\":true,\"queues\":{");
	for (unsigned i = 0; i < nqueues; i++) {
		const struct queue *q = &queues[i];
		uint64_t kq, ku;

		kernel_drops(q, &kq, &ku);
		o += (size_t)snprintf(line + o, sizeof(line) - o,
			"%s\"%u\":{\"received\":%" PRIu64 ",\"released\":%" PRIu64
			",\"dropped_loss\":%" PRIu64 ",\"dropped_overflow\":%" PRIu64
			",\"held\":%u,\"held_max\":%" PRIu64
			",\"dropped_socket\":%" PRIu64 ",\"late_ns_sum\":%" PRIu64
			",\"late_ns_max\":%" PRIu64 "}",
			i ? "," : "", q->num, q->received, q->released,
			q->dropped_loss, q->dropped_overflow + kq, q->count,
			q->held_max, ku, q->late_ns_sum, q->late_ns_max);
	}
	snprintf(line + o, sizeof(line) - o,
		 "},\"enobufs\":%" PRIu64 ",\"wake_early_ns\":%" PRId64 "}",
		 enobufs, wake_early_ns);
	reply(line);
}

static void cmd_lateness(void)
{
	char line[32 * LATE_BUCKETS + 128];
	size_t o = 0;

	o += (size_t)snprintf(line + o, sizeof(line) - o,
			      "{\"ok\":true,\"count\":%" PRIu64 ",\"max_ns\":%" PRIu64
			      ",\"buckets\":[", late_count, late_window_max_ns);
	bool first = true;
	for (unsigned b = 0; b < LATE_BUCKETS; b++) {
		if (late_hist[b] == 0)
			continue;
		o += (size_t)snprintf(line + o, sizeof(line) - o, "%s[%u,%" PRIu64 "]",
				      first ? "" : ",", b, late_hist[b]);
		first = false;
	}
	snprintf(line + o, sizeof(line) - o, "]}");
	reply(line);
	memset(late_hist, 0, sizeof(late_hist));
	late_count = 0;
	late_window_max_ns = 0;
}

static void handle_command(char *line)
{
	char *cmd = line + strspn(line, " \t");
	size_t n = strcspn(cmd, " \t");

	if (*cmd == '\0')
		return;                 /* blank line: not a command, no reply */
	if (n == 3 && strncmp(cmd, "set", 3) == 0)
		cmd_set(cmd + 3);
	else if (n == 5 && strncmp(cmd, "stats", 5) == 0 &&
		 cmd[5 + strspn(cmd + 5, " \t")] == '\0')
		cmd_stats();
	else if (n == 8 && strncmp(cmd, "lateness", 8) == 0 &&
		 cmd[8 + strspn(cmd + 8, " \t")] == '\0')
		cmd_lateness();
	else
		reply_error("unknown command (expected 'set', 'stats' or 'lateness')");
}

static char line_buf[LINE_MAX_BYTES];
static size_t line_len;
static bool line_overlong;

/* Read what stdin has; run complete lines. Returns false on EOF/error. */
static bool read_stdin(void)
{
	ssize_t n = read(STDIN_FILENO, line_buf + line_len,
			 sizeof(line_buf) - line_len);
	if (n < 0) {
		if (errno == EINTR || errno == EAGAIN)
			return true;
		log_err("reading stdin: %s", strerror(errno));
		return false;
	}
	if (n == 0)
		return false;
	line_len += (size_t)n;

	char *start = line_buf, *nl_pos;
	while ((nl_pos = memchr(start, '\n', line_len - (size_t)(start - line_buf)))) {
		*nl_pos = '\0';
		if (nl_pos > start && nl_pos[-1] == '\r')
			nl_pos[-1] = '\0';
		if (line_overlong)
			reply_error("command line too long");
		else
			handle_command(start);
		line_overlong = false;
		start = nl_pos + 1;
	}
	line_len -= (size_t)(start - line_buf);
	memmove(line_buf, start, line_len);
	if (line_len == sizeof(line_buf)) {
		/* No newline in a full buffer: discard up to the next one. */
		line_overlong = true;
		line_len = 0;
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* Startup, main loop, shutdown                                        */

static void usage(void)
{
	fprintf(stderr,
		"usage: delayline --queue NUM [--queue NUM ...] [--capacity PACKETS]\n"
		"                 [--rt-priority N]   (SCHED_FIFO, default 10, 0 = off)\n"
		"stdin commands (one JSON reply line each on stdout):\n"
		"  set QUEUE [delay_us=D] [jitter_us=J] [loss=P] [seed=S]\n"
		"  stats\n"
		"  lateness\n"
		"exits on stdin EOF, SIGTERM or SIGINT\n");
}

static void fail_startup(const char *msg)
{
	char esc[1024];

	json_escape(esc, sizeof(esc), msg);
	printf("{\"ready\":false,\"error\":\"%s\"}\n", esc);
	fflush(stdout);
	log_err("%s", msg);
	exit(1);
}

static void parse_args(int argc, char **argv)
{
	char err[256];
	uint64_t v;

	for (int i = 1; i < argc; i++) {
		bool is_q = strcmp(argv[i], "--queue") == 0;
		bool is_c = strcmp(argv[i], "--capacity") == 0;
		bool is_p = strcmp(argv[i], "--rt-priority") == 0;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage();
			exit(0);
		}
		if (!is_q && !is_c && !is_p) {
			usage();
			snprintf(err, sizeof(err), "unknown argument '%.200s'",
				 argv[i]);
			fail_startup(err);
		}
		if (i + 1 >= argc || !parse_u64(argv[i + 1], &v)) {
			snprintf(err, sizeof(err), "%s needs a number", argv[i]);
			fail_startup(err);
		}
		i++;
		if (is_p) {
			if (v > 99)
				fail_startup("--rt-priority must be 0..99");
			rt_priority = (int)v;
			continue;
		}
		if (is_c) {
			if (v < 1 || v > MAX_CAPACITY)
				fail_startup("--capacity must be 1..16777216");
			capacity = (uint32_t)v;
			continue;
		}
		if (v > 65535)
			fail_startup("--queue must be 0..65535");
		if (find_queue((unsigned)v) != NULL)
			fail_startup("queue given twice");
		if (nqueues == MAX_QUEUES)
			fail_startup("too many queues");
		queues[nqueues++] = (struct queue){ .num = (uint16_t)v, .prng = 1, .jitter_prng = ~1ull };
	}
	if (nqueues == 0) {
		usage();
		fail_startup("at least one --queue is required");
	}
}

/*
 * SIGTERM/SIGINT arrive through a signalfd polled with the sockets.  A plain
 * handler is not enough: when ppoll() finds descriptors ready it returns
 * without delivering a pending signal, so under steady traffic (or a stdin
 * that is always readable) the signal could wait forever.
 */
static int setup_signals(void)
{
	sigset_t set;

	/* A dead controller must show up as EOF/EPIPE, not kill us silently. */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		fail_startup("cannot ignore SIGPIPE");
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		fail_startup("cannot block SIGTERM/SIGINT");
	int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		fail_startup("signalfd failed");
	return fd;
}

/* Run ahead of ordinary tasks, so a release is not late because a busy
 * CPU let us wait for a time slice.  We never spin, so this costs nothing
 * when idle; the kernel's RT throttling still bounds a runaway. */
static void set_realtime(void)
{
	struct sched_param sp = { .sched_priority = rt_priority };

	if (rt_priority == 0)
		return;
	if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
		log_err("SCHED_FIFO priority %d refused (%s); running without "
			"it, delays may be late when the CPUs are busy",
			rt_priority, strerror(errno));
}

static void startup(void)
{
	char err[300];

	/* Default slack (50 us) would add directly to every packet's delay. */
	if (prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0) < 0)
		log_err("PR_SET_TIMERSLACK: %s", strerror(errno));
	set_realtime();

	for (unsigned i = 0; i < nqueues; i++) {
		queues[i].ring = calloc(capacity, sizeof(struct held));
		if (queues[i].ring == NULL)
			fail_startup("out of memory for packet rings");
	}
	if (open_socket(err, sizeof(err)) != NULL)
		fail_startup(err);
	for (unsigned i = 0; i < nqueues; i++) {
		int r = bind_queue(&queues[i]);
		if (r != 0) {
			snprintf(err, sizeof(err), "binding queue %u failed: %s",
				 queues[i].num, strerror(-r));
			fail_startup(err);
		}
	}

	char line[64 + 8 * MAX_QUEUES];
	size_t o = (size_t)snprintf(line, sizeof(line), "{\"ready\":true,\"queues\":[");
	for (unsigned i = 0; i < nqueues; i++)
		o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%u",
				      i ? "," : "", queues[i].num);
	snprintf(line + o, sizeof(line) - o, "]}");
	reply(line);
}

/* Returns the exit status: 0 for EOF, a signal or a closed stdout,
 * 1 for an unexpected error. */
static int run(int sig_fd)
{
	struct pollfd pfd[3] = {
		{ .fd = nl_fd, .events = POLLIN },
		{ .fd = STDIN_FILENO, .events = POLLIN },
		{ .fd = sig_fd, .events = POLLIN },
	};

	while (!stop_requested) {
		int64_t now = now_ns();
		release_due(now);
		tx_flush();

		int64_t due = earliest_due();
		int64_t wake_at = INT64_MAX;
		struct timespec ts, *tsp = NULL;
		if (due != INT64_MAX) {
			/* Re-read the clock: sending verdicts re-injects the
			 * packets in our context and can take a while. */
			now = now_ns();
			int64_t wait = due > now ? due - now : 0;
			if (wait > 2 * wake_early_ns) {
				/* A long sleep: end it early by its expected
				 * lateness, and learn that lateness. */
				wait -= wake_early_ns;
				wake_at = now + wait;
			}       /* else the short rest, which comes on time */
			ts.tv_sec = wait / 1000000000;
			ts.tv_nsec = wait % 1000000000;
			tsp = &ts;
		}
		int r = ppoll(pfd, 3, tsp, NULL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			log_err("ppoll: %s", strerror(errno));
			return 1;
		}
		if (r == 0 && wake_at != INT64_MAX) {
			/* A timer wake-up: learn how late it came (1/8 gain). */
			int64_t late = now_ns() - wake_at;
			if (late < 0)
				late = 0;
			wake_early_ns += (late - wake_early_ns) / 8;
			if (wake_early_ns > WAKE_EARLY_MAX_NS)
				wake_early_ns = WAKE_EARLY_MAX_NS;
		}
		if (pfd[2].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				log_err("got signal %u, exiting", si.ssi_signo);
			return 0;
		}
		if (pfd[0].revents & POLLERR) {
			/* The socket error (ENOBUFS) is collected by recv. */
			pfd[0].revents |= POLLIN;
		}
		if ((pfd[0].revents & POLLIN) && !drain_netlink(DRAIN_BUDGET))
			return 1;
		if (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			if (!read_stdin())
				return 0;       /* EOF: our controller is gone */
		} else if (pfd[1].revents & POLLNVAL) {
			log_err("stdin is not open");
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	parse_args(argc, argv);
	int sig_fd = setup_signals();
	startup();
	int status = run(sig_fd);

	release_all();
	for (unsigned i = 0; i < nqueues; i++)
		unbind_queue(&queues[i]);
	if (mnl_socket_close(nl) < 0)
		log_err("closing netlink socket: %s", strerror(errno));
	close(sig_fd);
	for (unsigned i = 0; i < nqueues; i++)
		free(queues[i].ring);
	return status;
}
