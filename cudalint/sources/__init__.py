"""Sources: files become units of CUDA text with a map back to file positions."""
