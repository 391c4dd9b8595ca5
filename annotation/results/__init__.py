"""The report's tables and figures, built from the store's DataFrames."""
