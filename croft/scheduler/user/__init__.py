"""The per-user ticker: ``croft tick --all`` (the OS job's command) and ``croft serve``, over the registry."""
