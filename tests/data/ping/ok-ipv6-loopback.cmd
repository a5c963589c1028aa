ping -6 -c 3 -i 0.2 ::1
exit 0
