ping -c 3 -i 0.2 198.18.9.9
exit 2
