"""TRACE-Bench's rules: formulas, decomposition, diagnostic trees, localization."""
