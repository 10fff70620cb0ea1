"""Fetching: the downloader, its per-host slots, robots.txt and the address guard."""

from geoweb.fetch.addressguard import AddressGuard, GuardedResolver, is_public_address
from geoweb.fetch.fetcher import Fetcher
from geoweb.fetch.response import Response
from geoweb.fetch.robots import RobotsCache
from geoweb.fetch.slots import Slot, Slots

__all__ = [
    "AddressGuard",
    "Fetcher",
    "GuardedResolver",
    "Response",
    "RobotsCache",
    "Slot",
    "Slots",
    "is_public_address",
]
