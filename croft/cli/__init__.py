"""The ``croft`` command: click commands, and every human renderer of what they return.

``main`` (in ``cli.main``) dispatches ``croft tick [--all]`` before click is imported; every other
command is built lazily, so each invocation imports only the command it runs.
"""
