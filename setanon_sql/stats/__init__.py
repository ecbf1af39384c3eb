"""Small statistics the verifiers need (no SciPy): exact one-sided binomial confidence bounds."""
