fping -C 3 -p 100 -t 300 -q 198.18.0.99
exit 1
