"""Shared ground for every part of croft: problems, the clock, durations, the envelope, paths, process
identity and child environments, redaction, and how a SQLite or JSON file is opened.

Nothing here imports any other part of croft, so every room can depend on it.
"""
