"""Reading and checking files: the bundle, VIF-Bench and TIIF-Bench releases."""
