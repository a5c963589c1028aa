// netrig-xdp: the user-space side of netrig's XDP programs (built by netrig/native/build.py).
//
//   netrig-xdp filter-load IFACE native|skb OBJ   < "drop|accept CIDR" lines
//       load xdp_filter.bpf.o, fill its tries in one pass, attach it (it stays after we exit)
//   netrig-xdp filter-count IFACE                  rules (all, v4, v6) and drop counter of the
//                                                  attached filter
//   netrig-xdp stamp-recv IFACE PORT COUNT OBJ [spin]
//       attach xdp_stamp.bpf.o in front of the interface's XDP program (tail call), receive
//       UDP on PORT until COUNT packets arrived or SIGTERM/SIGINT, then print one line per
//       sequence number: "seq xdp_ns recv_ns recv_realtime_ns" (0 = none), and put the old
//       program back (the wall-clock time is for comparing with tcpdump's timestamps)
//   netrig-xdp test-run OBJ REPEAT RULES
//       the program's own cost per packet (BPF_PROG_TEST_RUN), with RULES filler entries
//   netrig-xdp send ADDR PORT COUNT INTERVAL_US SIZE
//       send COUNT UDP packets carrying seq 0..COUNT-1; print "seq send_ns" per packet
// All times are CLOCK_MONOTONIC nanoseconds, the clock of bpf_ktime_get_ns().
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define STAMP_SLOTS 65536

struct stamp {
	uint64_t ns;
	uint32_t seq;
	uint32_t pad;
};

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int die(const char *what)
{
	fprintf(stderr, "netrig-xdp: %s: %s\n", what, strerror(errno));
	return 1;
}

static int iface_index(const char *name)
{
	int idx = if_nametoindex(name);
	if (!idx)
		fprintf(stderr, "netrig-xdp: no interface %s\n", name);
	return idx;
}

static struct bpf_object *open_load(const char *path)
{
	struct bpf_object *obj = bpf_object__open_file(path, NULL);
	if (!obj || libbpf_get_error(obj)) {
		fprintf(stderr, "netrig-xdp: cannot open %s\n", path);
		return NULL;
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "netrig-xdp: the kernel refused %s: %s\n", path, strerror(errno));
		return NULL;
	}
	return obj;
}

static int map_fd(struct bpf_object *obj, const char *name)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, name);
	return map ? bpf_map__fd(map) : -1;
}

static int first_prog_fd(struct bpf_object *obj)
{
	struct bpf_program *prog = bpf_object__next_program(obj, NULL);
	return prog ? bpf_program__fd(prog) : -1;
}

/* ------------------------------------------------------------------ filter */

static int filter_load(const char *ifname, const char *mode, const char *path)
{
	int ifindex = iface_index(ifname), v4, v6, prog, n = 0;
	uint32_t flags = strcmp(mode, "skb") ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
	struct bpf_object *obj;
	char action[16], cidr[64];

	if (!ifindex)
		return 1;
	obj = open_load(path);
	if (!obj)
		return 1;
	v4 = map_fd(obj, "rules_v4");
	v6 = map_fd(obj, "rules_v6");
	prog = first_prog_fd(obj);
	while (scanf("%15s %63s", action, cidr) == 2) {
		uint8_t key[20] = {0};
		uint32_t value = strcmp(action, "drop") ? 2 : 1, plen;
		char *slash = strchr(cidr, '/');
		int v6addr = strchr(cidr, ':') != NULL;

		if (!slash) {
			fprintf(stderr, "netrig-xdp: %s needs a prefix length\n", cidr);
			return 1;
		}
		*slash = 0;
		plen = atoi(slash + 1);
		memcpy(key, &plen, 4);
		if (inet_pton(v6addr ? AF_INET6 : AF_INET, cidr, key + 4) != 1) {
			fprintf(stderr, "netrig-xdp: bad address %s\n", cidr);
			return 1;
		}
		if (bpf_map_update_elem(v6addr ? v6 : v4, key, &value, BPF_ANY))
			return die("map update");
		n++;
	}
	if (bpf_xdp_attach(ifindex, prog, flags | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL))
		return die("attach XDP program");
	printf("rules %d\n", n);
	return 0;
}

static int filter_count(const char *ifname)
{
	int ifindex = iface_index(ifname), fd, total = 0, v4 = 0, v6 = 0;
	uint32_t id = 0, map_ids[16], i;
	struct bpf_prog_info info = {};
	uint32_t len = sizeof(info);
	uint64_t dropped = 0;

	if (!ifindex)
		return 1;
	if (bpf_xdp_query_id(ifindex, 0, &id) || !id) {
		printf("rules 0\nprog none\n");
		return 0;
	}
	fd = bpf_prog_get_fd_by_id(id);
	info.nr_map_ids = 16;
	info.map_ids = (uint64_t)(unsigned long)map_ids;
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return die("program info");
	for (i = 0; i < info.nr_map_ids && i < 16; i++) {
		struct bpf_map_info minfo = {};
		uint32_t mlen = sizeof(minfo);
		int mfd = bpf_map_get_fd_by_id(map_ids[i]);
		uint8_t key[20], next[20];
		void *prev = NULL;

		if (mfd < 0 || bpf_obj_get_info_by_fd(mfd, &minfo, &mlen))
			continue;
		if (minfo.type == BPF_MAP_TYPE_LPM_TRIE) {
			int n = 0;
			while (!bpf_map_get_next_key(mfd, prev, next)) {
				n++;
				memcpy(key, next, sizeof(key));
				prev = key;
			}
			total += n;
			if (!strcmp(minfo.name, "rules_v4"))
				v4 = n;
			else if (!strcmp(minfo.name, "rules_v6"))
				v6 = n;
		} else if (minfo.type == BPF_MAP_TYPE_PERCPU_ARRAY && !strcmp(minfo.name, "hits")) {
			int ncpu = libbpf_num_possible_cpus(), c;
			uint64_t values[ncpu > 0 ? ncpu : 1];
			uint32_t k = 1;
			if (ncpu > 0 && !bpf_map_lookup_elem(mfd, &k, values))
				for (c = 0; c < ncpu; c++)
					dropped += values[c];
		}
		close(mfd);
	}
	printf("rules %d\nrules_v4 %d\nrules_v6 %d\nprog %s\ndropped %llu\n", total, v4, v6,
	       info.name, (unsigned long long)dropped);
	return 0;
}

/* ------------------------------------------------------------------ stamp + receive */

static int stamp_recv(const char *ifname, int port, int count, const char *path, int spin)
{
	int ifindex = iface_index(ifname), stamps, prog, sock, zero = 0, got = 0, i;
	int rcvbuf = 16 << 20;
	uint32_t old_id = 0, mode_flags = XDP_FLAGS_DRV_MODE, uport = port;
	int old_fd = -1;
	struct bpf_object *obj;
	struct sockaddr_in6 addr = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
	uint64_t *recv_ns, *recv_real;
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts);
	LIBBPF_OPTS(bpf_xdp_query_opts, query);
	char buf[2048];

	if (!ifindex || count <= 0 || count > STAMP_SLOTS)
		return 1;
	recv_ns = calloc(count, sizeof(*recv_ns));
	recv_real = calloc(count, sizeof(*recv_real));
	obj = open_load(path);
	if (!obj)
		return 1;
	stamps = map_fd(obj, "stamps");
	prog = first_prog_fd(obj);
	if (bpf_map_update_elem(map_fd(obj, "config"), &zero, &uport, BPF_ANY))
		return die("config map");
	/* chain: the program already on the interface runs after our stamp */
	if (!bpf_xdp_query(ifindex, 0, &query) && query.prog_id) {
		old_id = query.prog_id;
		if (query.attach_mode == XDP_ATTACHED_SKB)
			mode_flags = XDP_FLAGS_SKB_MODE;
		old_fd = bpf_prog_get_fd_by_id(old_id);
		if (old_fd < 0 || bpf_map_update_elem(map_fd(obj, "next_prog"), &zero, &old_fd, BPF_ANY))
			return die("chain the interface's XDP program");
		opts.old_prog_fd = old_fd;
		if (bpf_xdp_attach(ifindex, prog, mode_flags | XDP_FLAGS_REPLACE, &opts))
			return die("attach XDP stamp in front of the existing program");
	} else if (bpf_xdp_attach(ifindex, prog, mode_flags | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL)) {
		return die("attach XDP stamp");
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	sock = socket(AF_INET6, SOCK_DGRAM, 0);
	setsockopt(sock, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	/* a receiver that is not scheduled for a while must not lose packets to a full buffer */
	setsockopt(sock, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
	if (sock < 0 || bind(sock, (struct sockaddr *)&addr, sizeof(addr))) {
		die("bind");
		goto restore;
	}
	printf("ready\n");
	fflush(stdout);
	while (!stop && got < count) {
		ssize_t n;
		uint64_t t, real;
		uint32_t seq;
		struct timespec ts;

		if (!spin) {
			struct pollfd pfd = {.fd = sock, .events = POLLIN};
			if (poll(&pfd, 1, 50) <= 0)
				continue;
		}
		n = recv(sock, buf, sizeof(buf), MSG_DONTWAIT);
		t = now_ns();
		clock_gettime(CLOCK_REALTIME, &ts);
		real = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
		if (n < 4)
			continue;
		memcpy(&seq, buf, 4);
		seq = ntohl(seq);
		if (seq < (uint32_t)count && !recv_ns[seq]) {
			recv_ns[seq] = t;
			recv_real[seq] = real;
			got++;
		}
	}
	/* stopped early: what already sits in the socket was received (late), not lost */
	for (;;) {
		uint32_t seq;
		struct timespec ts;
		ssize_t n = recv(sock, buf, sizeof(buf), MSG_DONTWAIT);
		uint64_t t = now_ns();

		if (n < 0)
			break;
		clock_gettime(CLOCK_REALTIME, &ts);
		if (n < 4)
			continue;
		memcpy(&seq, buf, 4);
		seq = ntohl(seq);
		if (seq < (uint32_t)count && !recv_ns[seq]) {
			recv_ns[seq] = t;
			recv_real[seq] = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
		}
	}
	for (i = 0; i < count; i++) {
		uint32_t slot = i % STAMP_SLOTS;
		struct stamp s = {};
		bpf_map_lookup_elem(stamps, &slot, &s);
		printf("%d %llu %llu %llu\n", i,
		       (unsigned long long)(s.seq == (uint32_t)i ? s.ns : 0),
		       (unsigned long long)recv_ns[i], (unsigned long long)recv_real[i]);
	}
restore:
	if (old_fd >= 0) {
		opts.old_prog_fd = prog;
		if (bpf_xdp_attach(ifindex, old_fd, mode_flags | XDP_FLAGS_REPLACE, &opts))
			return die("restore the interface's XDP program");
	} else {
		opts.old_prog_fd = prog;
		bpf_xdp_detach(ifindex, mode_flags | XDP_FLAGS_REPLACE, &opts);
	}
	return 0;
}

/* ------------------------------------------------------------------ send */

static int send_udp(const char *host, const char *port, int count, long interval_us, int size)
{
	struct addrinfo hints = {.ai_socktype = SOCK_DGRAM}, *res;
	char buf[2048] = {0};
	struct timespec next;
	uint64_t *sent;
	int sock, i;

	if (size < 4 || size > (int)sizeof(buf) || count <= 0)
		return 1;
	if (getaddrinfo(host, port, &hints, &res))
		return die("address");
	sock = socket(res->ai_family, SOCK_DGRAM, 0);
	if (sock < 0 || connect(sock, res->ai_addr, res->ai_addrlen))
		return die("connect");
	sent = calloc(count, sizeof(*sent));
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (i = 0; i < count; i++) {
		uint32_t seq = htonl(i);
		memcpy(buf, &seq, 4);
		sent[i] = now_ns();
		if (send(sock, buf, size, 0) < 0)
			sent[i] = 0; /* e.g. ECONNREFUSED from an earlier packet: not sent */
		next.tv_nsec += interval_us * 1000;
		while (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	for (i = 0; i < count; i++)
		printf("%d %llu\n", i, (unsigned long long)sent[i]);
	return 0;
}

/* ------------------------------------------------------------------ test-run */

/* The program's own cost per packet, by the kernel's BPF_PROG_TEST_RUN: one UDP packet from
 * 198.18.0.1 to port 9000 carrying seq 7, run REPEAT times; RULES filler entries
 * (240.0.0.1 …) go into rules_v4 first, if the object has that map. */
static int test_run(const char *path, int repeat, int rules)
{
	unsigned char pkt[64] = {0};
	struct bpf_object *obj = open_load(path);
	int prog, v4, zero = 0, i;
	uint32_t port = 9000, action = 1;
	LIBBPF_OPTS(bpf_test_run_opts, topts, .data_in = pkt, .data_size_in = sizeof(pkt),
		    .repeat = repeat);

	if (!obj)
		return 1;
	prog = first_prog_fd(obj);
	pkt[12] = 0x08;					/* ethertype IPv4 */
	pkt[14] = 0x45;					/* version 4, ihl 5 */
	pkt[16] = 0, pkt[17] = 50;			/* total length */
	pkt[22] = 64, pkt[23] = 17;			/* ttl, protocol UDP */
	memcpy(pkt + 26, "\xc6\x12\x00\x01", 4);	/* 198.18.0.1 */
	memcpy(pkt + 30, "\xc6\x12\x00\x02", 4);	/* 198.18.0.2 */
	pkt[36] = 0x9c, pkt[37] = 0x40;			/* source port 40000 */
	pkt[38] = 0x23, pkt[39] = 0x28;			/* destination port 9000 */
	pkt[40] = 0, pkt[41] = 30;			/* UDP length */
	pkt[45] = 7;					/* seq 7 */
	if (map_fd(obj, "config") >= 0)
		bpf_map_update_elem(map_fd(obj, "config"), &zero, &port, BPF_ANY);
	v4 = map_fd(obj, "rules_v4");
	for (i = 0; v4 >= 0 && i < rules; i++) {
		uint8_t key[8] = {32, 0, 0, 0, 240, 0, (i + 1) >> 8, (i + 1) & 0xff};
		if (bpf_map_update_elem(v4, key, &action, BPF_ANY))
			return die("map update");
	}
	if (bpf_prog_test_run_opts(prog, &topts))
		return die("BPF_PROG_TEST_RUN");
	printf("ns_per_packet %u\nretval %u\n", topts.duration, topts.retval);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "filter-load"))
		return filter_load(argv[2], argv[3], argv[4]);
	if (argc == 3 && !strcmp(argv[1], "filter-count"))
		return filter_count(argv[2]);
	if ((argc == 6 || argc == 7) && !strcmp(argv[1], "stamp-recv"))
		return stamp_recv(argv[2], atoi(argv[3]), atoi(argv[4]), argv[5],
				  argc == 7 && !strcmp(argv[6], "spin"));
	if (argc == 5 && !strcmp(argv[1], "test-run"))
		return test_run(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc == 7 && !strcmp(argv[1], "send"))
		return send_udp(argv[2], argv[3], atoi(argv[4]), atol(argv[5]), atoi(argv[6]));
	fprintf(stderr, "usage: see the comment at the top of netrig_xdp.c\n");
	return 2;
}
