"""The scheduler: schedule text to cron, cron to DST-exact fire times, and (later) what is due, and the tick."""
