"""Synthetic data generated inside the DBMS: hashing, and the shape of what was generated."""
