iperf3 --json -c 198.18.0.3 -t 2 -i 0.5 -P 2 --get-server-output  (server: iperf3 -s -1 --json -i 0.5; a 50mbit link on the way)
exit 0
