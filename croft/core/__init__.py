"""Shared ground for every part of croft: problems, clock, envelope, paths, process identity, redaction.

Nothing here imports any other part of croft, so every room can depend on it.
"""
