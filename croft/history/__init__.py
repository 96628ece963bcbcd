"""The run history ``<state>/runs.sqlite``: runs, steps, leases, catalog, schedule state, settings, tick.

``db`` opens connections (the only place that does) and turns sqlite3 errors into CroftErrors; the other
modules are thin readers and writers over one table family each.
"""
