iperf3 --json -c 198.18.0.2 -t 1 --bidir -P 2
exit 0
