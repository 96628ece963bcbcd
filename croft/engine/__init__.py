"""The engine room: plan, runner, ingest, transforms, checks, staleness, warehouse and http (ctx.http).

Nothing here is on the per-user tick path, so modules may import heavy libraries (httpx) at the top.
"""
