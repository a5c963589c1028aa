"""Statistics: a byte-exact ministat (`ministat`) and the comparisons it lacks (`compare`)."""
