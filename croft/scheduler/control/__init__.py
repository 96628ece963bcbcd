"""What a person runs to steer the scheduler: ``croft schedule on|off|pause|status`` and ``croft doctor``."""
