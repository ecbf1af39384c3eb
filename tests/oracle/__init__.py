"""Brute-force checkers of privacy guarantees in plain Python.

An oracle never imports setanon_sql: it reads exported files or plain Python lists, so a bug in
the package cannot hide a violation from its own checker.
"""
