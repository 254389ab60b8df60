"""launch rules: launch configurations no GPU runs (CL6xx)."""
