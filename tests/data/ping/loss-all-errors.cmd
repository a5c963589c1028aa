ping -c 8 -i 0.5 -W 1 198.18.0.99
exit 1
