iperf3 --json -c 198.18.0.2 -t 1 -u -b 100M --bidir
exit 0
