iperf3 --json -c 198.18.9.9 -t 1
exit 0
