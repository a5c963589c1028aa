#!/usr/bin/env bash
# Re-record the parser fixtures under tests/data/{iperf3,ping,fping}/ from the real tools.
#
# Why a script: the parsers are tested against real output (STYLE.md, "one parser per tool,
# tested against recorded output"), and a newer tool version should be recordable the same way.
# Needs root. Traffic stays inside two namespaces made here (198.18.0.0/24 on one veth) and is
# torn down on exit, whatever happens; the iperf3 server is ended by its PID.
#
#   sudo tests/measure/record_fixtures.sh
#   sudo ONLY="iperf3/udp ping/ok" tests/measure/record_fixtures.sh   # just these
set -euo pipefail

here=$(cd "$(dirname "$0")/../data" && pwd)
tag="nrtest-$$"
nsa="$tag-a"
nsb="$tag-b"
server_pid=""

cleanup() {
    if [[ -n "$server_pid" ]]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    ip netns del "$nsa" 2>/dev/null || true
    ip netns del "$nsb" 2>/dev/null || true
}
trap cleanup EXIT

ip netns add "$nsa"
ip netns add "$nsb"
ip link add veth0 netns "$nsa" type veth peer name veth0 netns "$nsb"
ip -n "$nsa" addr add 198.18.0.1/24 dev veth0
ip -n "$nsb" addr add 198.18.0.2/24 dev veth0
ip -n "$nsb" addr add 198.18.0.3/24 dev veth0
for ns in "$nsa" "$nsb"; do
    ip -n "$ns" link set lo up
    ip -n "$ns" link set veth0 up
done
# 198.18.0.99 is on-link but nobody owns it (ARP fails); 198.18.9.9 has no route at all.
sleep 2  # IPv6 DAD on the new links, so ping/fping start on settled interfaces

# record DIR NAME CMD...: runs CMD in namespace A, keeps stdout, stderr, the command and status.
record() {
    local dir="$here/$1" name="$2"
    shift 2
    if [[ -n "${ONLY:-}" && " $ONLY " != *" $(basename "$dir")/$name "* ]]; then
        return 0
    fi
    mkdir -p "$dir"
    local rc=0
    ip netns exec "$nsa" "$@" >"$dir/$name.stdout" 2>"$dir/$name.stderr" || rc=$?
    printf '%s\nexit %d\n' "$*" "$rc" >"$dir/$name.cmd"
    echo "recorded $1/$name (exit $rc)"
}

ip netns exec "$nsb" iperf3 -s -B 198.18.0.2 >/dev/null 2>&1 &
server_pid=$!
sleep 1

record iperf3 tcp iperf3 --json -c 198.18.0.2 -t 2
record iperf3 tcp-p2 iperf3 --json -c 198.18.0.2 -t 2 -P 2
record iperf3 tcp-reverse iperf3 --json -c 198.18.0.2 -t 2 -R
record iperf3 tcp-bidir iperf3 --json -c 198.18.0.2 -t 2 --bidir
record iperf3 tcp-bidir-p2 iperf3 --json -c 198.18.0.2 -t 1 --bidir -P 2
record iperf3 udp iperf3 --json -c 198.18.0.2 -t 2 -u -b 200M
record iperf3 udp-reverse iperf3 --json -c 198.18.0.2 -t 2 -u -b 200M -R
record iperf3 udp-bidir iperf3 --json -c 198.18.0.2 -t 1 -u -b 100M --bidir
record iperf3 udp-p2 iperf3 --json -c 198.18.0.2 -t 1 -u -b 100M -P 2
record iperf3 tcp-omit iperf3 --json -c 198.18.0.2 -t 1 -O 1
record iperf3 error-refused iperf3 --json -c 198.18.0.3 -t 1
record iperf3 error-noroute iperf3 --json -c 198.18.9.9 -t 1

record ping ok ping -c 5 -i 0.2 198.18.0.2
record ping ok-quiet ping -q -c 5 -i 0.2 198.18.0.2
record ping ok-one ping -c 1 198.18.0.2
record ping ok-ipv6-loopback ping -6 -c 3 -i 0.2 ::1
record ping loss-all ping -c 3 -i 0.2 -W 1 198.18.0.99
record ping no-route ping -c 3 -i 0.2 198.18.9.9
record ping ok-timestamps ping -D -c 3 -i 0.2 198.18.0.2
record ping loss-all-errors ping -c 8 -i 0.5 -W 1 198.18.0.99

# Random loss for ICMP and iperf3's UDP data (not its 4-byte UDP hello, nor TCP control),
# made by a firewall in namespace B, so it goes away with the namespace.
ip netns exec "$nsb" nft -f - <<'NFT'
table inet nrtest {
    chain input {
        type filter hook input priority 0;
        iifname "veth0" ip protocol icmp numgen random mod 100 < 30 drop
        iifname "veth0" udp dport 5201 meta length > 1000 numgen random mod 100 < 5 drop
    }
}
NFT
record iperf3 udp-loss iperf3 --json -c 198.18.0.2 -t 2 -u -b 100M
record ping loss-some ping -c 20 -i 0.05 -W 1 198.18.0.2
record fping vector-loss-some fping -C 10 -p 50 -t 300 -q 198.18.0.2 198.18.0.3
record fping count-loss-some fping -c 10 -p 50 -t 300 -q 198.18.0.2 198.18.0.3
ip netns exec "$nsb" nft delete table inet nrtest

targets=(198.18.0.2 198.18.0.3 198.18.0.99 198.18.9.9)
record fping vector fping -C 5 -p 100 -t 300 -q "${targets[@]}"
record fping vector-verbose fping -C 3 -p 100 -t 300 198.18.0.2 198.18.0.99
record fping count fping -c 5 -p 100 -t 300 -q "${targets[@]}"
record fping count-verbose fping -c 3 -p 100 -t 300 198.18.0.2 198.18.0.99
record fping alive fping -t 300 198.18.0.2 198.18.0.3 198.18.0.99
record fping all-lost fping -C 3 -p 100 -t 300 -q 198.18.0.99
