iperf3 --json -c 198.18.0.3 -t 1
exit 0
