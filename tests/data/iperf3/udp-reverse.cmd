iperf3 --json -c 198.18.0.2 -t 2 -u -b 200M -R
exit 0
