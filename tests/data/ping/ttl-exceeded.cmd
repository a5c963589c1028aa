ping -n -c 20 -i 0.05 -W 2 -t 2 198.18.0.5
exit 1
