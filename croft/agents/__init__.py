"""What croft gives coding agents: the context payload they read first, the skill and AGENTS.md texts
``croft init`` writes, and ``croft mcp``'s server. Nothing here is on the tick's path."""
