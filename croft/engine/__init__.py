"""The run engine: plan, execute, write into the warehouse, check."""
