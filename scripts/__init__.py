"""Developer scripts of judge-audit (not installed with the package)."""
