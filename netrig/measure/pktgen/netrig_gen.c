/* netrig_gen: a small UDP packet generator for netrig's `pps` measurement.
 *
 * Frames are built once (one per flow: the UDP source port varies, so ECMP can spread them)
 * and sent from an AF_PACKET socket with PACKET_QDISC_BYPASS, in sendmmsg batches, from one
 * or more threads, at full speed or paced to a rate, for a duration. The count it prints is
 * exact: every frame the kernel accepted is `sent`; every frame the first hop refused
 * (ENOBUFS: veth's peer backlog was full; ENETDOWN: the interface is down, as during a
 * `link … down` event on it, which must be measured, not end the run) is `refused`.
 *
 *   netrig_gen --dev eth0 --src-mac 02:.. --dst-mac 02:.. --src 198.18.0.1 --dst 198.18.0.6
 *              [--sport 10000] [--flows 256] [--dport 9] [--size 60] [--rate PPS]
 *              [--duration S] [--count N] [--threads N] [--batch 64] [--qdisc]
 * prints one JSON line: {"sent": N, "refused": N, "seconds": S, "threads": N}
 *
 * Built by netrig at first use (gcc -O2 -pthread); exit 2 on bad arguments, 1 on errors.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAME 1514
#define MAX_BATCH 1024

static volatile sig_atomic_t stop;

struct config {
	int ifindex, family, flows, size, threads, batch, qdisc;
	unsigned sport, dport;
	unsigned char smac[6], dmac[6];
	struct in6_addr src6, dst6;
	struct in_addr src4, dst4;
	double rate, duration;
	unsigned long long count;
};

struct worker {
	const struct config *cfg;
	int index;
	double start;
	unsigned long long sent, refused;
	double end;
	int error;
	pthread_t thread;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint32_t sum16(const void *data, size_t len, uint32_t sum)
{
	const uint8_t *p = data;
	for (; len > 1; len -= 2, p += 2)
		sum += (uint32_t)(p[0] << 8 | p[1]);
	if (len)
		sum += (uint32_t)(p[0] << 8);
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* One Ethernet/IP/UDP frame of cfg->size bytes for a given UDP source port. */
static void build_frame(const struct config *cfg, unsigned sport, uint8_t *f)
{
	memset(f, 0, cfg->size);
	memcpy(f, cfg->dmac, 6);
	memcpy(f + 6, cfg->smac, 6);
	int l3 = 14, l4, udp_len;
	uint32_t pseudo;
	if (cfg->family == 4) {
		f[12] = 0x08, f[13] = 0x00;
		uint8_t *ip = f + l3;
		int ip_len = cfg->size - l3;
		l4 = l3 + 20;
		ip[0] = 0x45, ip[2] = ip_len >> 8, ip[3] = ip_len & 0xff;
		ip[6] = 0x40; /* don't fragment */
		ip[8] = 64, ip[9] = 17;
		memcpy(ip + 12, &cfg->src4, 4);
		memcpy(ip + 16, &cfg->dst4, 4);
		uint16_t c = fold(sum16(ip, 20, 0));
		ip[10] = c >> 8, ip[11] = c & 0xff;
		udp_len = cfg->size - l4;
		pseudo = sum16(ip + 12, 8, 17 + udp_len);
	} else {
		f[12] = 0x86, f[13] = 0xdd;
		uint8_t *ip = f + l3;
		l4 = l3 + 40;
		udp_len = cfg->size - l4;
		ip[0] = 0x60, ip[4] = udp_len >> 8, ip[5] = udp_len & 0xff;
		ip[6] = 17, ip[7] = 64;
		memcpy(ip + 8, &cfg->src6, 16);
		memcpy(ip + 24, &cfg->dst6, 16);
		pseudo = sum16(ip + 8, 32, 17 + udp_len);
	}
	uint8_t *udp = f + l4;
	udp[0] = sport >> 8, udp[1] = sport & 0xff;
	udp[2] = cfg->dport >> 8, udp[3] = cfg->dport & 0xff;
	udp[4] = udp_len >> 8, udp[5] = udp_len & 0xff;
	for (int i = 8; i < udp_len; i++)
		udp[i] = (uint8_t)i;
	uint16_t c = fold(sum16(udp, udp_len, pseudo));
	if (c == 0)
		c = 0xffff;
	udp[6] = c >> 8, udp[7] = c & 0xff;
}

static void *run_worker(void *arg)
{
	struct worker *w = arg;
	const struct config *cfg = w->cfg;
	int fd = socket(AF_PACKET, SOCK_RAW, 0); /* protocol 0: send only, receive nothing */
	if (fd < 0) {
		w->error = errno;
		return NULL;
	}
	int one = 1;
	if (!cfg->qdisc) /* --qdisc: through the interface's qdisc, its rate limit or netem */
		setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one);
	struct sockaddr_ll addr = {.sll_family = AF_PACKET, .sll_ifindex = cfg->ifindex, .sll_halen = 6};
	memcpy(addr.sll_addr, cfg->dmac, 6);
	if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
		w->error = errno;
		close(fd);
		return NULL;
	}
	/* this thread's flows: every threads-th one, starting at its index */
	int nflows = (cfg->flows - w->index + cfg->threads - 1) / cfg->threads;
	if (nflows < 1)
		nflows = 1;
	uint8_t *frames = calloc((size_t)nflows, MAX_FRAME);
	struct mmsghdr *msgs = calloc(MAX_BATCH, sizeof *msgs);
	struct iovec *iov = calloc(MAX_BATCH, sizeof *iov);
	if (!frames || !msgs || !iov) {
		w->error = ENOMEM;
		close(fd);
		return NULL;
	}
	for (int i = 0; i < nflows; i++)
		build_frame(cfg, cfg->sport + (unsigned)((w->index + i * cfg->threads) % cfg->flows),
			    frames + (size_t)i * MAX_FRAME);
	double rate = cfg->rate / cfg->threads;
	unsigned long long limit = cfg->count ? cfg->count / cfg->threads +
						   ((unsigned long long)w->index < cfg->count % cfg->threads)
					      : 0;
	int next = 0;
	double t = now();
	while (t < w->start) /* a common start for every thread */
		t = now();
	double end = w->start + cfg->duration;
	if (rate > 0 && limit) /* the last frame is due just before the end: a sleep's overshoot
				  must not lose it */
		end += 1 / rate + 0.01;
	while (!stop) {
		t = now();
		if (cfg->duration > 0 && t >= end)
			break;
		unsigned long long done = w->sent + w->refused;
		if (limit && done >= limit)
			break;
		long want = cfg->batch;
		if (rate > 0) { /* frame k is due k / rate seconds after the start */
			double allowed = (t - w->start) * rate + 1;
			if (allowed < done + 1) { /* sleep, not spin: frames due meanwhile go
						     out together in the next batch */
				double wait = (done + 1 - allowed) / rate;
				struct timespec ts = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};
				nanosleep(&ts, NULL);
				continue;
			}
			if (allowed - done < want)
				want = (long)(allowed - done);
		}
		if (limit && done + want > limit)
			want = (long)(limit - done);
		for (long i = 0; i < want; i++) {
			iov[i].iov_base = frames + (size_t)next * MAX_FRAME;
			iov[i].iov_len = cfg->size;
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
			if (++next == nflows)
				next = 0;
		}
		int n = sendmmsg(fd, msgs, (unsigned)want, 0);
		if (n < 0) {
			if (errno == ENOBUFS || errno == ENETDOWN) { /* the first hop dropped
								       this frame, or its link is down */
				w->refused++;
				continue;
			}
			if (errno == EINTR)
				continue;
			w->error = errno;
			break;
		}
		w->sent += (unsigned long long)n;
		if (n < want) /* the frame after the last one sent was refused */
			w->refused++;
	}
	w->end = now();
	free(frames);
	free(msgs);
	free(iov);
	close(fd);
	return NULL;
}

static int parse_mac(const char *text, unsigned char *mac)
{
	return sscanf(text, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1], &mac[2], &mac[3],
		      &mac[4], &mac[5]) == 6 ? 0 : -1;
}

static int usage(const char *why)
{
	fprintf(stderr, "netrig_gen: %s\n", why);
	fprintf(stderr, "usage: netrig_gen --dev IF --src-mac MAC --dst-mac MAC --src IP --dst IP "
			"[--sport N] [--flows N] [--dport N] [--size BYTES] [--rate PPS] "
			"[--duration S] [--count N] [--threads N] [--batch N] [--qdisc]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct config cfg = {.flows = 256, .size = 60, .threads = 1, .batch = 64, .sport = 10000,
			     .dport = 9};
	const char *dev = NULL, *src = NULL, *dst = NULL;
	int have_smac = 0, have_dmac = 0;
	static const struct option opts[] = {
		{"dev", 1, 0, 'i'},	 {"src-mac", 1, 0, 'm'}, {"dst-mac", 1, 0, 'M'},
		{"src", 1, 0, 's'},	 {"dst", 1, 0, 'd'},	 {"sport", 1, 0, 'p'},
		{"flows", 1, 0, 'f'},	 {"dport", 1, 0, 'P'},	 {"size", 1, 0, 'l'},
		{"rate", 1, 0, 'r'},	 {"duration", 1, 0, 't'}, {"count", 1, 0, 'n'},
		{"threads", 1, 0, 'T'}, {"batch", 1, 0, 'b'},	 {"qdisc", 0, 0, 'q'},
		{0, 0, 0, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'i': dev = optarg; break;
		case 'm': if (parse_mac(optarg, cfg.smac)) return usage("bad --src-mac"); have_smac = 1; break;
		case 'M': if (parse_mac(optarg, cfg.dmac)) return usage("bad --dst-mac"); have_dmac = 1; break;
		case 's': src = optarg; break;
		case 'd': dst = optarg; break;
		case 'p': cfg.sport = (unsigned)atoi(optarg); break;
		case 'f': cfg.flows = atoi(optarg); break;
		case 'P': cfg.dport = (unsigned)atoi(optarg); break;
		case 'l': cfg.size = atoi(optarg); break;
		case 'r': cfg.rate = atof(optarg); break;
		case 't': cfg.duration = atof(optarg); break;
		case 'n': cfg.count = strtoull(optarg, NULL, 10); break;
		case 'T': cfg.threads = atoi(optarg); break;
		case 'b': cfg.batch = atoi(optarg); break;
		case 'q': cfg.qdisc = 1; break;
		default: return usage("unknown option");
		}
	}
	if (!dev || !src || !dst || !have_smac || !have_dmac)
		return usage("--dev, --src-mac, --dst-mac, --src and --dst are required");
	if (inet_pton(AF_INET, src, &cfg.src4) == 1 && inet_pton(AF_INET, dst, &cfg.dst4) == 1)
		cfg.family = 4;
	else if (inet_pton(AF_INET6, src, &cfg.src6) == 1 && inet_pton(AF_INET6, dst, &cfg.dst6) == 1)
		cfg.family = 6;
	else
		return usage("--src and --dst must be two IPv4 or two IPv6 addresses");
	int min_size = cfg.family == 4 ? 14 + 20 + 8 : 14 + 40 + 8;
	if (cfg.size < min_size || cfg.size > MAX_FRAME)
		return usage("--size out of range");
	if (cfg.flows < 1 || cfg.flows > 65536 || cfg.sport < 1 || cfg.sport + cfg.flows - 1 > 65535 ||
	    cfg.dport < 1 || cfg.dport > 65535)
		return usage("--sport/--flows/--dport out of range");
	if (cfg.threads < 1 || cfg.threads > 64 || cfg.batch < 1 || cfg.batch > MAX_BATCH ||
	    cfg.rate < 0 || cfg.duration < 0 || (cfg.duration == 0 && cfg.count == 0))
		return usage("--threads, --batch, --rate, or --duration/--count out of range");
	cfg.ifindex = (int)if_nametoindex(dev);
	if (!cfg.ifindex) {
		fprintf(stderr, "netrig_gen: no interface %s: %s\n", dev, strerror(errno));
		return 1;
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	struct worker *workers = calloc((size_t)cfg.threads, sizeof *workers);
	double start = now() + 0.01 + 0.002 * cfg.threads;
	for (int i = 0; i < cfg.threads; i++) {
		workers[i] = (struct worker){.cfg = &cfg, .index = i, .start = start};
		if (pthread_create(&workers[i].thread, NULL, run_worker, &workers[i])) {
			fprintf(stderr, "netrig_gen: cannot start thread %d\n", i);
			return 1;
		}
	}
	unsigned long long sent = 0, refused = 0;
	double end = start;
	int error = 0;
	for (int i = 0; i < cfg.threads; i++) {
		pthread_join(workers[i].thread, NULL);
		sent += workers[i].sent;
		refused += workers[i].refused;
		if (workers[i].end > end)
			end = workers[i].end;
		if (workers[i].error)
			error = workers[i].error;
	}
	printf("{\"sent\": %llu, \"refused\": %llu, \"seconds\": %.6f, \"threads\": %d}\n", sent,
	       refused, end - start, cfg.threads);
	if (error) {
		fprintf(stderr, "netrig_gen: %s\n", strerror(error));
		return 1;
	}
	return 0;
}
