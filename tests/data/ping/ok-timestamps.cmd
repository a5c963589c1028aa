ping -D -c 3 -i 0.2 198.18.0.2
exit 0
