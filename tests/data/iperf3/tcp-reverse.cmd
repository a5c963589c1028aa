iperf3 --json -c 198.18.0.2 -t 2 -R
exit 0
