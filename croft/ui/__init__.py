"""``croft ui``: the local status page (its server, the page, the shipped script and style), beside the
commands at the top: it calls the same functions they call and is never on the tick's path."""
