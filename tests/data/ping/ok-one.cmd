ping -c 1 198.18.0.2
exit 0
