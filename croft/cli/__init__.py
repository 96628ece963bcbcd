"""The ``croft`` command: click commands, and every human renderer of what they return.

``main`` (in ``cli.main``) lets the minute gate answer the OS job's ``croft tick --all`` before click is
imported; everything else goes through the lazy click group (``cli.group``), so each invocation imports
only the command it runs.
"""
