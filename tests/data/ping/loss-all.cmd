ping -c 3 -i 0.2 -W 1 198.18.0.99
exit 1
