"""The schedule language: words and cron to a schedule, a schedule to DST-exact fire times. Pure."""
