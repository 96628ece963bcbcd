"""Time zones by IANA name: the one cached lookup and the one did-you-mean for a zone that does not exist."""

from __future__ import annotations

from datetime import tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, available_timezones

from croft.core.problems import CroftError
from croft.core.suggest import nearest
from croft.core.text import quoted

__all__ = ["closest_zone", "zone", "zone_named"]


@lru_cache(maxsize=256)
def zone_named(name: str) -> ZoneInfo:
    """The zone called ``name``; raises ZoneInfoNotFoundError / ValueError for a name that is not one."""
    return ZoneInfo(name)


def closest_zone(value: str) -> str | None:
    """The real zone a mistyped name most likely means: same name in other case, close spelling, or city.

    The zone list is read only here, on the error path.
    """

    zones = sorted(available_timezones())
    by_fold = {zone.casefold(): zone for zone in zones}
    if value.strip().casefold() in by_fold:
        return by_fold[value.strip().casefold()]
    folded = value.strip().replace(" ", "_").casefold()
    match = nearest(folded, by_fold)
    if not match:  # "London" alone: match on the city part
        cities = {zone.rsplit("/", 1)[-1].casefold(): zone for zone in zones}
        city = nearest(folded.rsplit("/", 1)[-1], cities, cutoff=0.75)
        return cities[city] if city else None
    return by_fold[match]


def zone(tz: str | tzinfo) -> tzinfo:
    """A zone from its IANA name (cached) or as given; an unknown name is CONFIG_INVALID with did-you-mean."""
    if not isinstance(tz, str):
        return tz
    try:
        return zone_named(tz)
    except Exception:  # ZoneInfoNotFoundError, ValueError for odd keys, OSError for unreadable files
        guess = closest_zone(tz)
        hint = f'did you mean "{guess}"?' if guess else "use an IANA zone name such as Europe/London or UTC"
        raise CroftError(
            "CONFIG_INVALID", f"{quoted(tz)} is not a time zone croft knows", hint, suggestion=guess
        ) from None
