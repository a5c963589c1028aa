ping -c 20 -i 0.05 -W 1 198.18.0.2
exit 0
