// XDP ingress timestamp for netrig's stage_latency measurement.
//
// For every IPv4/IPv6 UDP packet to the configured port whose payload starts with a
// 32-bit sequence number (network order), store bpf_ktime_get_ns() (CLOCK_MONOTONIC) in
// `stamps` at seq % STAMP_SLOTS. Then hand the packet to whatever XDP program was on the
// interface before us (slot 0 of `next_prog`, e.g. a firewall), or pass it: the stamp is
// taken before any XDP filter runs, so a dropped packet still has one.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define STAMP_SLOTS 65536

struct stamp {
	__u64 ns;
	__u32 seq;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, STAMP_SLOTS);
	__type(key, __u32);
	__type(value, struct stamp);
} stamps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32); /* UDP destination port, host order */
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} next_prog SEC(".maps");

static __always_inline void stamp_udp(struct udphdr *udp, void *end, __u64 now)
{
	__u32 zero = 0, *port, seq, slot;
	__u32 *payload = (void *)(udp + 1);
	struct stamp val = {};

	if ((void *)(payload + 1) > end)
		return;
	port = bpf_map_lookup_elem(&config, &zero);
	if (!port || bpf_ntohs(udp->dest) != *port)
		return;
	seq = bpf_ntohl(*payload);
	slot = seq % STAMP_SLOTS;
	val.ns = now;
	val.seq = seq;
	bpf_map_update_elem(&stamps, &slot, &val, BPF_ANY);
}

SEC("xdp")
int netrig_stamp(struct xdp_md *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > end)
		goto next;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP || ip->ihl != 5)
			goto next;
		stamp_udp((void *)(ip + 1), end, now);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP)
			goto next;
		stamp_udp((void *)(ip6 + 1), end, now);
	}
next:
	bpf_tail_call(ctx, &next_prog, 0);
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
