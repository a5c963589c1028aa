iperf3 --json -c 198.18.0.2 -t 2 -u -b 100M
exit 0
