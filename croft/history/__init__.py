"""The run history ``<state>/runs.sqlite``: runs, steps, leases, catalog, schedule state, settings, tick.

``db`` opens it (through ``core.sqlitefile``) and turns sqlite3 errors into CroftErrors; the other
modules are thin readers and writers over one table family each, and every query that ends a run or
reads the history's tables for the scheduler lives here.
"""
