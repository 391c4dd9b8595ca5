"""VIF-Bench's rules: conflict labels, VI readouts, VI drawings."""
