"""Frame times kept as dates: CF ``units = "<unit> since <date>"`` time coordinates (NetCDF, zarr written by
xarray) and NumPy ``datetime64`` values, as seconds since the first frame's time.

A container's frame time is a number, so a date becomes the seconds since the first frame's date (frame 0 is
time 0) and the first date is kept in the attribute ``time_units`` as ``"seconds since <ISO 8601 date>"``
(the CF way of writing it, so the dates can be rebuilt); the source's own units string is kept beside it
by the reader (``netcdf_time_units``, ``zarr_time_units``). Units of months or years (CF discourages them:
their length varies) are not dates here: such values stay as stored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

__all__ = ["DateClock", "date_clock"]

# Seconds in each CF/UDUNITS time unit headrace turns into seconds (its plural and short names alike).
_UNIT_SECONDS = {
    "microsecond": 1e-6, "microseconds": 1e-6, "us": 1e-6,
    "millisecond": 1e-3, "milliseconds": 1e-3, "msec": 1e-3, "msecs": 1e-3, "ms": 1e-3,
    "second": 1.0, "seconds": 1.0, "sec": 1.0, "secs": 1.0, "s": 1.0,
    "minute": 60.0, "minutes": 60.0, "min": 60.0, "mins": 60.0,
    "hour": 3600.0, "hours": 3600.0, "hr": 3600.0, "hrs": 3600.0, "h": 3600.0,
    "day": 86400.0, "days": 86400.0, "d": 86400.0,
    "week": 604800.0, "weeks": 604800.0,
}
_SINCE = re.compile(r"\s*([A-Za-z]+)\s+since\s+(\S.*?)\s*", re.IGNORECASE)
# Calendars in which numpy's datetime64 (proleptic Gregorian) gives the right date without cftime.
_GREGORIAN = ("standard", "gregorian", "proleptic_gregorian")


@dataclass(frozen=True)
class DateClock:
    """Turns dates into seconds since ``origin`` (the first frame's date, ISO 8601): values in ``units``
    (CF) or ``datetime64``."""

    units: str | None  # None: datetime64 values
    calendar: str
    first: float | int  # the first frame's value in ``units`` (datetime64: nanoseconds since 1970, an integer)
    unit_seconds: float
    origin: str

    @property
    def time_units(self) -> str:
        """The ``time_units`` attribute: what the frame times count."""
        return f"seconds since {self.origin}"

    def seconds(self, values: np.ndarray, units: str | None = None) -> list[float]:
        """``values`` (in ``units``, else this clock's; or ``datetime64``) as seconds since the origin."""
        values = np.asarray(values)
        if values.dtype.kind == "M":  # exact nanosecond differences first, then seconds
            nanoseconds = values.astype("datetime64[ns]").astype(np.int64).reshape(-1) - int(self.first)
            return [float(v) * 1e-9 for v in nanoseconds]
        numbers = values.astype(np.float64).reshape(-1)
        if units is not None and units != self.units:
            numbers = _convert(numbers, units, self.units or "", self.calendar)
        return [float(v) for v in (numbers - self.first) * self.unit_seconds]


def date_clock(values: np.ndarray, units: object = None, calendar: object = None) -> DateClock | None:
    """A clock for times that are dates: ``datetime64`` values, or numbers with CF units ``<unit> since
    <date>`` (``calendar`` as CF names it; default standard); ``None`` for any other time values."""
    values = np.asarray(values)
    if values.size == 0:
        return None
    if values.dtype.kind == "M":
        first = values.reshape(-1)[0].astype("datetime64[ns]")
        return DateClock(None, "proleptic_gregorian", int(first.astype(np.int64)), 1e-9,
                         str(first.astype("datetime64[s]")) if first.astype(np.int64) % 10**9 == 0 else str(first))
    if values.dtype.kind not in "iuf" or not isinstance(units, str):
        return None
    match = _SINCE.fullmatch(units)
    if match is None or match.group(1).lower() not in _UNIT_SECONDS:
        return None
    calendar_name = str(calendar or "standard").lower()
    first = float(values.reshape(-1)[0])
    origin = _date_text(first, units, calendar_name)
    if origin is None:
        return None
    return DateClock(units, calendar_name, first, _UNIT_SECONDS[match.group(1).lower()], origin)


def _date_text(value: float, units: str, calendar: str) -> str | None:
    """``value`` in ``units`` as an ISO 8601 date: cftime's reading where it is installed, else numpy's
    (Gregorian calendars only); ``None`` when neither can read the date."""
    try:
        # cftime (optional, comes with netCDF4): loaded only when a date is read from its units
        import cftime  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        cftime = None
    if cftime is not None:
        try:
            return str(cftime.num2date(value, units, calendar).isoformat())
        except (ValueError, TypeError):
            return None
    match = _SINCE.fullmatch(units)
    if match is None or calendar not in _GREGORIAN:
        return None
    text = re.sub(r"\s*(UTC|Z|[+-]00:?00)$", "", match.group(2).strip()).replace(" ", "T")
    try:
        reference = np.datetime64(text, "us")
    except ValueError:
        return None
    offset = np.timedelta64(int(round(value * _UNIT_SECONDS[match.group(1).lower()] * 1e6)), "us")
    return str((reference + offset).astype("datetime64[s]" if offset % np.timedelta64(1, "s") == 0 else "datetime64[us]"))


def _convert(values: np.ndarray, units: str, target: str, calendar: str) -> np.ndarray:
    """Values in ``units`` as values in ``target`` units (both ``<unit> since <date>``): through cftime's
    dates, or numpy's for Gregorian calendars."""
    try:
        # cftime (optional, comes with netCDF4): loaded only when a date is read from its units
        import cftime  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        cftime = None
    if cftime is not None:
        return np.asarray(cftime.date2num(cftime.num2date(values, units, calendar), target, calendar), np.float64)
    source, goal = _SINCE.fullmatch(units), _SINCE.fullmatch(target)
    assert source is not None and goal is not None
    start = np.datetime64(_date_text(0.0, units, calendar) or "NaT", "us")
    zero = np.datetime64(_date_text(0.0, target, calendar) or "NaT", "us")
    offset_seconds = (start - zero) / np.timedelta64(1, "s")
    return (values * _UNIT_SECONDS[source.group(1).lower()] + offset_seconds) / _UNIT_SECONDS[goal.group(1).lower()]
