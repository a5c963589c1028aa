// netrig's XDP firewall: drop (or pass early) packets by source prefix.
//
// Rules live in two longest-prefix-match tries, one per family, as xdp-filter keeps its
// addresses in maps: a lookup costs the same for 1 rule as for 10000, which is what seed 002
// compares against iptables' linear chains. Value 1 = drop, 2 = accept. Counters in `hits`.
// The trie takes the longest prefix; netrig fills it so that this is the verdict of the first
// rule written, as in iptables and nftables (netrig/plan/firewall.py, trie_entries).
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct v4_key {
	__u32 prefixlen;
	__u8 addr[4];
};

struct v6_key {
	__u32 prefixlen;
	__u8 addr[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct v4_key);
	__type(value, __u32);
} rules_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct v6_key);
	__type(value, __u32);
} rules_v6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3); /* 0 passed (no rule), 1 dropped, 2 accepted by a rule */
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

static __always_inline int verdict(__u32 *action)
{
	__u32 idx = action ? *action : 0;
	__u64 *count;

	if (idx > 2)
		idx = 0;
	count = bpf_map_lookup_elem(&hits, &idx);
	if (count)
		*count += 1;
	return idx == 1 ? XDP_DROP : XDP_PASS;
}

SEC("xdp")
int netrig_filter(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		struct v4_key key = {.prefixlen = 32};
		if ((void *)(ip + 1) > end)
			return XDP_PASS;
		__builtin_memcpy(key.addr, &ip->saddr, 4);
		return verdict(bpf_map_lookup_elem(&rules_v4, &key));
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		struct v6_key key = {.prefixlen = 128};
		if ((void *)(ip6 + 1) > end)
			return XDP_PASS;
		__builtin_memcpy(key.addr, &ip6->saddr, 16);
		return verdict(bpf_map_lookup_elem(&rules_v6, &key));
	}
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
