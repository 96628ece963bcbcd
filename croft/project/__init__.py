"""A croft project on disk: croft.json, .env, asset discovery, static asset facts and code fingerprints.

Nothing in this package imports or executes asset code: facts come from ``ast`` and SQLite's authorizer.
"""
