"""The project tick (``croft tick`` in one project) and the rules of the scheduled runs it starts."""
