"""A tiny synthetic product catalogue shared by the first-stage tests (no tests here).

Each product has title, brand, description and price; ``text`` joins title, brand and description. The data set
object is duck-typed like ``superb.data`` data sets: name, fields, docs_iter(), topics(), provenance().
"""

from __future__ import annotations

import hashlib
import json

import pandas as pd

PRODUCTS = [
    ("p01", "Duracell AA alkaline batteries 24 pack", "Duracell", "long lasting AA batteries for remotes and toys", 19.99),
    ("p02", "Energizer AAA batteries 12 pack", "Energizer", "alkaline AAA batteries for small devices", 9.49),
    ("p03", "Rechargeable AA batteries with charger", "Panasonic", "NiMH rechargeable batteries and a USB charger", 29.0),
    ("p04", "9V battery two pack", "Duracell", "9 volt alkaline battery for smoke detectors", 7.5),
    ("p05", "USB-C to USB-C cable 2m", "Anker", "braided USB C charging cable for laptop and phone", 12.99),
    ("p06", "Lightning cable 1m", "Apple", "charging and sync cable for iPhone", 19.0),
    ("p07", "HDMI cable 4K 3m", "Belkin", "high speed HDMI cable for TV and monitor", 14.99),
    ("p08", "USB wall charger 65W", "Anker", "fast USB C wall charger for laptop and phone", 35.0),
    ("p09", "Men's trail running shoes", "Salomon", "waterproof trail running shoes with grip sole", 120.0),
    ("p10", "Women's road running shoes", "Asics", "lightweight cushioned running shoes for road", 110.0),
    ("p11", "Leather hiking boots", "Meindl", "waterproof leather boots for hiking and trekking", 199.0),
    ("p12", "Kids sneakers", "Adidas", "comfortable sneakers for kids with velcro", 45.0),
    ("p13", "Wireless noise cancelling headphones", "Sony", "over ear bluetooth headphones with noise cancelling", 299.0),
    ("p14", "In-ear earbuds", "Jabra", "true wireless bluetooth earbuds with charging case", 89.0),
    ("p15", "Studio monitor headphones", "Beyerdynamic", "closed back wired headphones for studio mixing", 159.0),
    ("p16", "Espresso machine", "DeLonghi", "pump espresso coffee machine with milk frother", 249.0),
    ("p17", "Drip coffee maker 12 cup", "Melitta", "filter coffee maker with glass carafe", 49.0),
    ("p18", "Coffee grinder burr", "Baratza", "conical burr grinder for espresso and filter coffee", 139.0),
    ("p19", "French press 1L", "Bodum", "glass french press coffee maker", 29.0),
    ("p20", "Laptop backpack 15 inch", "Samsonite", "padded backpack for laptop with USB charging port", 79.0),
    ("p21", "Laptop stand aluminium", "Rain Design", "ergonomic aluminium stand for laptop", 49.0),
    ("p22", "Wireless mouse", "Logitech", "bluetooth wireless mouse for laptop", 25.0),
    ("p23", "Mechanical keyboard", "Keychron", "wireless mechanical keyboard with bluetooth", 99.0),
    ("p24", "Smoke detector", "Kidde", "battery powered smoke detector alarm", 19.0),
    ("p25", "LED flashlight", "Maglite", "bright LED flashlight uses AA batteries", 24.0),
    ("p26", "TV remote control", "Philips", "universal remote control uses AAA batteries", 15.0),
    ("p27", "Monitor 27 inch 4K", "Dell", "4K monitor with HDMI and USB C", 399.0),
    ("p28", "Smart TV 55 inch", "Samsung", "4K smart TV with HDMI ports", 599.0),
    ("p29", "Milk frother handheld", "Aerolatte", "battery powered milk frother for coffee", 19.0),
    ("p30", "Running socks 3 pack", "Falke", "cushioned socks for running shoes", 25.0),
]

TOPICS = pd.DataFrame(
    [("q1", "aa batteries"), ("q2", "running shoes"), ("q3", "coffee maker"), ("q4", "usb-c cable"), ("q5", "headphones")],
    columns=["qid", "query"],
)


class TinyProducts:
    """The catalogue as a data set object."""

    name = "tiny-products"
    fields = ("title", "brand", "description", "price")

    def __init__(self, name: str = "tiny-products", products=PRODUCTS):
        self.name = name
        self.products = list(products)
        self.iterations = 0  # how often docs_iter() was consumed: an index build reads the documents once

    def docs_iter(self):
        self.iterations += 1
        for docno, title, brand, description, price in self.products:
            yield {"docno": docno, "text": f"{title} {brand} {description}", "title": title, "brand": brand,
                   "description": description, "price": price}

    def topics(self) -> pd.DataFrame:
        return TOPICS.copy()

    def provenance(self) -> dict:
        digest = hashlib.sha256(json.dumps(self.products).encode()).hexdigest()
        return {"products.json": digest}
