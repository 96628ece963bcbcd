"""The per-user OS job that runs ``croft tick --all`` every minute: crontab, launchd or systemd."""
