"""Who visits the demo shop: browsers and devices (real user agents), countries (addresses
in real allocations, so the collector's own lookup maps them), languages, and where each
visit comes from (search, social, referral, email, UTM campaigns, direct).

Weights are rough shares of a small European shop's traffic; `choose` draws by them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Device:
    agent: str
    viewport: int  # window.innerWidth, CSS px
    fold: int  # window.innerHeight
    layout: str  # which measured layout of demo_layout.json its clicks land on


DEVICES: list[tuple[Device, int]] = [
    (
        Device(
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/131.0.0.0 Safari/537.36",
            1366,
            657,
            "wide",
        ),
        30,
    ),
    (
        Device(
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like "
            "Gecko) Version/17.5 Safari/605.1.15",
            1440,
            789,
            "wide",
        ),
        14,
    ),
    (
        Device(
            "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
            1920,
            961,
            "wide",
        ),
        6,
    ),
    (
        Device(
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
            1536,
            730,
            "wide",
        ),
        6,
    ),
    (
        Device(
            "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 "
            "(KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
            390,
            664,
            "narrow",
        ),
        22,
    ),
    (
        Device(
            "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/131.0.6778.81 Mobile Safari/537.36",
            412,
            839,
            "narrow",
        ),
        14,
    ),
    (
        Device(
            "Mozilla/5.0 (iPad; CPU OS 17_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
            "Gecko) Version/17.6 Mobile/15E148 Safari/604.1",
            1180,
            740,
            "wide",
        ),
        5,
    ),
    (
        Device(
            "Mozilla/5.0 (Linux; Android 13; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/131.0.0.0 Safari/537.36",
            1280,
            720,
            "wide",
        ),
        2,
    ),
    (
        Device(
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            1366,
            900,
            "wide",
        ),
        1,
    ),
]

# (the first three octets of a /24 the country's ISP or host holds, Accept-Language)
COUNTRIES: list[tuple[tuple[str, str], int]] = [
    (("85.214.132", "de-DE,de;q=0.9,en;q=0.6"), 12),
    (("88.198.1", "de-DE,de;q=0.9"), 8),
    (("217.160.0", "de-AT,de;q=0.9"), 3),
    (("142.250.1", "en-US,en;q=0.9"), 14),
    (("129.42.38", "en-US,en;q=0.9"), 6),
    (("81.2.69", "en-GB,en;q=0.9"), 9),
    (("90.84.1", "fr-FR,fr;q=0.9,en;q=0.5"), 8),
    (("145.97.1", "nl-NL,nl;q=0.9,en;q=0.8"), 6),
    (("5.150.192", "sv-SE,sv;q=0.9,en;q=0.8"), 4),
    (("194.78.1", "nl-BE,nl;q=0.9,fr;q=0.7"), 3),
    (("24.48.1", "en-CA,en;q=0.9,fr-CA;q=0.7"), 4),
    (("200.147.67", "pt-BR,pt;q=0.9"), 4),
    (("187.141.1", "es-MX,es;q=0.9"), 3),
    (("133.242.0", "ja-JP,ja;q=0.9"), 3),
    (("110.33.1", "en-AU,en;q=0.9"), 4),
    (("14.102.1", "en-IN,en;q=0.9,hi;q=0.7"), 3),
]


@dataclass(frozen=True)
class Arrival:
    """How a visit starts: its referrer, the landing page and its query string."""

    referrer: str | None
    landing: tuple[str, ...]  # demo pages it may land on
    query: str = ""


_PRODUCT_PAGES = (
    "/demo/products/espresso-machine",
    "/demo/products/grinder",
    "/demo/products/kettle",
)

ARRIVALS: list[tuple[Arrival, int]] = [
    (Arrival(None, ("/demo/", "/demo/products")), 22),
    (Arrival("https://www.google.com/", ("/demo/", *_PRODUCT_PAGES)), 22),
    (Arrival("https://www.bing.com/", ("/demo/", *_PRODUCT_PAGES)), 4),
    (Arrival("https://duckduckgo.com/", ("/demo/", *_PRODUCT_PAGES)), 4),
    (Arrival("https://www.ecosia.org/", _PRODUCT_PAGES), 2),
    (Arrival("https://www.reddit.com/r/espresso/", ("/demo/", "/demo/products/grinder")), 6),
    (Arrival("https://l.instagram.com/", ("/demo/", "/demo/products")), 5),
    (Arrival("https://www.facebook.com/", ("/demo/",)), 4),
    (Arrival("https://t.co/", ("/demo/",)), 2),
    (Arrival("https://news.ycombinator.com/", ("/demo/about",)), 2),
    (Arrival("https://www.home-barista.com/forum/", _PRODUCT_PAGES), 4),
    (Arrival("https://sprudge.com/best-kettles", ("/demo/products/kettle",)), 3),
    (
        Arrival(
            "https://mail.google.com/",
            ("/demo/",),
            "utm_source=newsletter&utm_medium=email&utm_campaign=november-journal",
        ),
        5,
    ),
    (
        Arrival(
            None,
            ("/demo/products",),
            "utm_source=newsletter&utm_medium=email&utm_campaign=black-friday",
        ),
        4,
    ),
    (
        Arrival(
            "https://www.google.com/",
            _PRODUCT_PAGES,
            "utm_source=google&utm_medium=cpc&utm_campaign=espresso-search&gclid=demo",
        ),
        6,
    ),
    (
        Arrival(
            "https://l.instagram.com/",
            ("/demo/products/espresso-machine",),
            "utm_source=instagram&utm_medium=paid-social&utm_campaign=black-friday",
        ),
        4,
    ),
]

FIRST_NAMES = [
    "Ana",
    "Jonas",
    "Priya",
    "Lukas",
    "Sofia",
    "Mateo",
    "Emma",
    "Noah",
    "Yuki",
    "Lea",
    "Omar",
    "Chloé",
    "Mia",
    "Elias",
    "Zoë",
    "Henrik",
    "Amara",
    "Felix",
    "Inès",
    "Ravi",
    "Olga",
    "Tomás",
    "Sara",
    "Björn",
    "Aiko",
    "Lucas",
    "Nora",
    "Dmitri",
    "Léa",
    "Kofi",
]
LAST_NAMES = [
    "Müller",
    "Smith",
    "Dubois",
    "Jansen",
    "Rossi",
    "García",
    "Kowalski",
    "Nguyen",
    "Tanaka",
    "Schmidt",
    "Andersson",
    "Silva",
    "Martin",
    "Novak",
    "Okafor",
    "Brown",
    "Fischer",
    "Lindqvist",
    "Moreau",
    "Costa",
    "Patel",
    "Weber",
]


def choose(rng: random.Random, weighted: list[tuple[T, int]]) -> T:
    """One item drawn by its weight."""
    items, weights = zip(*weighted, strict=True)
    return rng.choices(items, weights=weights)[0]
