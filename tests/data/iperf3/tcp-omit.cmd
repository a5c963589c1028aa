iperf3 --json -c 198.18.0.2 -t 1 -O 1
exit 0
