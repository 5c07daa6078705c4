"""A small fictional world: entities, their facts, and prose about them.

Every article of the sample corpus is about one entity. Its facts are rendered twice, in
different words: once in encyclopedic wikitext (the article, whose lead is the summarization
target), and once or more in the looser style of web pages (the references). Paraphrases share
names, numbers and some content words with the lead but not whole sentences, so that an extractor
has to find them, and the bigram-recall "cheating" extractor finds them best.

Everything is drawn from one ``random.Random``; the same seed gives the same world.
"""

from __future__ import annotations

import random
import re
import zlib
from dataclasses import dataclass, field

# --------------------------------------------------------------------------------------------
# Word lists

ONSETS = ["b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "l", "m", "n", "p", "r", "s",
          "st", "t", "th", "v", "w", "sk", "tr", "ch"]
VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ou", "y"]
CODAS = ["", "n", "r", "l", "s", "nd", "rk", "ld", "m", "ck", "rn", "st"]
TOWN_SUFFIXES = ["holt", "bury", "wick", "ford", "mere", "stead", "by", "ton", "ham", "dale",
                 "field", "haven", "moor"]
# One region of the world has French-looking names with accents; pages about them are served
# in legacy single-byte encodings, where decoding mistakes would show.
ACCENTED_STEMS = ["Évreuil", "Bérange", "Castelnaé", "Montrézac", "Vérnay", "Sainte-Aurèle",
                  "Lézignac", "Préval"]
FIRST_NAMES = ["Elena", "Tomas", "Ingrid", "Marco", "Aisha", "Piotr", "Sofia", "Henrik", "Mira",
               "Jonas", "Clara", "Dmitri", "Lucia", "Anders", "Freya", "Oskar", "Nadia", "Felix",
               "Ilse", "Rafael", "Greta", "Emil", "Hana", "Viktor"]
COUNTRIES = ["Ostrania", "Velmark", "Carenthia", "Lunesse"]
SEAS = ["the Grey Sea", "the Sound of Harl", "Lake Oderin", "the Bay of Tessel"]
MOUNTAINS = ["Mount Kessel", "the Drummond Hills", "the Aldren Range", "Mount Sorrow"]
INDUSTRIES = ["wool weaving", "glassmaking", "paper milling", "clockmaking", "salt extraction",
              "shipbuilding", "brewing", "copper mining"]
LANDMARKS = ["a twelfth-century stone bridge", "a covered market hall", "a ruined priory",
             "an octagonal lighthouse", "a Victorian railway viaduct", "a walled herb garden"]
GENRES = ["folk rock", "synth-pop", "post-punk", "chamber jazz", "shoegaze", "bluegrass"]
LABELS = ["Harrow Lane Records", "Bellwether Sound", "Quiet Orbit", "Northlight Music"]
BAND_NOUNS = ["Orchard", "Lanterns", "Tides", "Sparrows", "Engines", "Meridian", "Foxes",
              "Cartographers"]
BAND_ADJS = ["Glass", "Paper", "Silver", "Hollow", "Velvet", "Restless", "Amber", "Midnight"]
FIELDS = ["marine biology", "crystallography", "number theory", "glaciology", "organic chemistry",
          "radio astronomy"]
DISCOVERIES = {
    "marine biology": "the migration routes of the lantern eel",
    "crystallography": "a method for growing twinned quartz",
    "number theory": "a bound on sparse prime gaps",
    "glaciology": "the seasonal pulse of tidewater glaciers",
    "organic chemistry": "a low-temperature route to synthetic indigo",
    "radio astronomy": "a catalogue of faint pulsars",
}
AWARDS = ["the Halden Medal", "the Orrin Prize", "the Linnaeus Ribbon", "the Meridian Award"]
SECTORS = ["precision instruments", "outdoor clothing", "bicycle components", "kitchen appliances",
           "solar panels", "board games"]
PRODUCTS = {
    "precision instruments": "the K-7 surveying theodolite",
    "outdoor clothing": "the Fellwalker waterproof jacket",
    "bicycle components": "the Sprocket Nine gear hub",
    "kitchen appliances": "the Hearthstone bread oven",
    "solar panels": "the Brightleaf roof tile",
    "board games": "the strategy game Harbour Lords",
}
COMPANY_SUFFIXES = ["Instruments", "Works", "Outfitters", "& Sons", "Industries", "Company"]
FAMILIES = ["Carabidae", "Orchidaceae", "Turdidae", "Salmonidae", "Nymphalidae", "Ranidae"]
GROUPS = {
    "Carabidae": ("ground beetle", "beetles"),
    "Orchidaceae": ("orchid", "orchids"),
    "Turdidae": ("thrush", "birds"),
    "Salmonidae": ("trout", "fish"),
    "Nymphalidae": ("butterfly", "butterflies"),
    "Ranidae": ("frog", "frogs"),
}
HABITATS = ["damp beech woodland", "chalk grassland", "fast upland streams", "coastal salt marsh",
            "pine heath", "limestone pavement"]
DIETS = ["small insects", "snails and slugs", "seeds and berries", "mayfly larvae", "nectar",
         "worms and beetles"]
STATUSES = ["least concern", "near threatened", "vulnerable", "endangered"]
LATIN_ROOTS = ["velmar", "ostran", "harl", "kessel", "oderin", "tessel", "drummond", "aldren"]
LATIN_GENERA = {"Carabidae": "Carabus", "Orchidaceae": "Ophrys", "Turdidae": "Turdus",
                "Salmonidae": "Salmo", "Nymphalidae": "Vanessa", "Ranidae": "Rana"}
MONTHS = ["March", "May", "June", "July", "August", "September"]


# --------------------------------------------------------------------------------------------
# Entities

@dataclass
class Entity:
    """One article subject. ``facts`` maps a fact name to its value (str or int)."""

    kind: str
    title: str
    facts: dict = field(default_factory=dict)
    region: str = ""
    accented: bool = False


def _syllable(rng: random.Random) -> str:
    return rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS)


class NameBook:
    """Hands out unique names, so that no two entities share a title."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: set[str] = set()

    def _unique(self, make) -> str:
        for _ in range(1000):
            name = make()
            if name not in self.used:
                self.used.add(name)
                return name
        raise RuntimeError("name space exhausted")

    def word(self) -> str:
        return self._unique(lambda: (_syllable(self.rng) + _syllable(self.rng)).capitalize())

    def town(self) -> str:
        return self._unique(
            lambda: (_syllable(self.rng) + self.rng.choice(TOWN_SUFFIXES)).capitalize())

    def accented_town(self) -> str:
        return self._unique(lambda: self.rng.choice(ACCENTED_STEMS) + "-sur-"
                            + _syllable(self.rng).capitalize())

    def band(self) -> str:
        # Adjective-noun pairs run out in large corpora; a generated word then joins them.
        for _ in range(20):
            name = "The " + self.rng.choice(BAND_ADJS) + " " + self.rng.choice(BAND_NOUNS)
            if name not in self.used:
                self.used.add(name)
                return name
        return self._unique(lambda: "The " + self.rng.choice(BAND_ADJS) + " "
                            + _syllable(self.rng).capitalize() + " " + self.rng.choice(BAND_NOUNS))

    def species(self, genus: str) -> str:
        def make():
            root = (self.rng.choice(LATIN_ROOTS) if self.rng.random() < 0.5
                    else _syllable(self.rng) + _syllable(self.rng))
            return genus + " " + root + self.rng.choice(["i", "ensis", "ica", "ella"])
        return self._unique(make)

    def person(self) -> str:
        return self._unique(lambda: self.rng.choice(FIRST_NAMES) + " "
                            + (_syllable(self.rng) + _syllable(self.rng)).capitalize())


def make_world(rng: random.Random, n: int) -> list[Entity]:
    """Draw ``n`` entities: towns first, since the others refer to them."""
    names = NameBook(rng)
    regions = [names.word() + " Valley" for _ in range(3)] + ["Côte de " + names.word()]
    n_towns = max(4, n // 3)
    towns: list[Entity] = []
    for i in range(n_towns):
        region = regions[i % len(regions)]
        accented = region.startswith("Côte")
        towns.append(_town(rng, names, region, accented))
    kinds = ["river", "band", "scientist", "company", "species"]
    others = [_MAKERS[kinds[i % len(kinds)]](rng, names, towns) for i in range(n - n_towns)]
    for town in towns:
        town.facts["twin"] = rng.choice([t.title for t in towns if t is not town])
    return (towns + others)[:n]


def _town(rng, names, region, accented) -> Entity:
    title = names.accented_town() if accented else names.town()
    return Entity("town", title, region=region, accented=accented, facts={
        "country": "Lunesse" if accented else rng.choice(COUNTRIES[:3]),
        "population": rng.randrange(2, 90) * 100 + rng.randrange(10, 99),
        "founded": rng.randrange(880, 1650),
        "river": names.word() + " River",
        "industry": rng.choice(INDUSTRIES),
        "landmark": rng.choice(LANDMARKS),
        "mayor": names.person(),
    })


def _river(rng, names, towns) -> Entity:
    town = rng.choice(towns)
    return Entity("river", names.word() + " River", region=town.region, facts={
        "length": rng.randrange(40, 600),
        "source": rng.choice(MOUNTAINS),
        "mouth": rng.choice(SEAS),
        "town": town.title,
        "tributary": names.word() + " Brook",
        "fish": rng.choice(["grayling", "brown trout", "barbel", "eel", "perch"]),
        "dam": rng.randrange(1890, 1985),
    })


def _band(rng, names, towns) -> Entity:
    town = rng.choice(towns)
    title = names.band()
    return Entity("band", title, region=town.region, facts={
        "genre": rng.choice(GENRES),
        "town": town.title,
        "formed": rng.randrange(1968, 2015),
        "members": rng.randrange(3, 7),
        "album": names.word() + " " + rng.choice(["Nights", "Weather", "Letters", "Gardens"]),
        "label": rng.choice(LABELS),
        "single": '"' + rng.choice(["Lighthouse", "Paper Boats", "Copper Sky", "Late Trains",
                                    "Salt and Honey", "Winter Radio"]) + '"',
    })


def _scientist(rng, names, towns) -> Entity:
    town = rng.choice(towns)
    born = rng.randrange(1820, 1960)
    study = rng.choice(FIELDS)
    return Entity("scientist", names.person(), region=town.region, facts={
        "born": born,
        "died": born + rng.randrange(55, 95) if born < 1930 else 0,
        "town": town.title,
        "field": study,
        "discovery": DISCOVERIES[study],
        "university": "the University of " + names.town(),
        "award": rng.choice(AWARDS),
    })


def _company(rng, names, towns) -> Entity:
    town = rng.choice(towns)
    sector = rng.choice(SECTORS)
    return Entity("company", names.word() + " " + rng.choice(COMPANY_SUFFIXES),
                  region=town.region, facts={
        "sector": sector,
        "founded": rng.randrange(1850, 2010),
        "founder": names.person(),
        "town": town.title,
        "employees": rng.randrange(40, 9000),
        "product": PRODUCTS[sector],
        "revenue": rng.randrange(3, 900),
    })


def _species(rng, names, towns) -> Entity:
    town = rng.choice(towns)
    family = rng.choice(FAMILIES)
    title = names.species(LATIN_GENERA[family])
    common = names.word() + " " + GROUPS[family][0]
    return Entity("species", title, region=town.region, facts={
        "common": common,
        "family": family,
        "habitat": rng.choice(HABITATS),
        "town": town.title,
        "length": rng.randrange(8, 400) / 10,
        "diet": rng.choice(DIETS),
        "status": rng.choice(STATUSES),
    })


_MAKERS = {"river": _river, "band": _band, "scientist": _scientist, "company": _company,
           "species": _species}


# --------------------------------------------------------------------------------------------
# Encyclopedic prose (wikitext). ``[[target|text]]`` links and ``'''bold'''`` are the only markup
# used here; ``plain()`` removes exactly that markup.

def _fmt(n: int) -> str:
    return f"{n:,}"


# Encyclopedic background sentences for the end of a lead. Web pages never restate them, as
# web pages rarely restate the register of an encyclopedia, which keeps an ordinary reference's
# word overlap with the lead well below that of a copy.
LEAD_BACKGROUND = {
    "town": [
        "The name is usually derived from an old word for a ford or river crossing, first "
        "recorded in a medieval charter.",
        "Administratively it forms a civil parish with its own elected council, and much of its "
        "centre has been a designated conservation area since 1974.",
        "Its economy now rests chiefly on tourism, light engineering and commuting to larger "
        "neighbouring settlements.",
    ],
    "river": [
        "The catchment drains mainly upland moorland and improved agricultural pasture, and the "
        "river is prone to sudden spate conditions after prolonged rainfall.",
        "Stretches of its floodplain are designated as sites of special scientific interest "
        "because of their wetland habitats.",
        "Historically its valley carried packhorse routes, and several watermills once "
        "operated along its banks.",
    ],
    "band": [
        "Their music combines layered vocal harmonies with prominent keyboards, and critics "
        "frequently compared early recordings to regional folk traditions.",
        "After several line-up changes they went on hiatus, later reuniting for anniversary "
        "concerts and a compilation.",
        "Reviewers have praised the lyrics, which often concern coastal landscapes, emigration "
        "and industrial decline.",
    ],
    "scientist": [
        "Over a long career this researcher published extensively, supervised numerous doctoral "
        "students and served on national scientific advisory committees.",
        "These methods were later adopted widely by laboratories abroad.",
        "Several institutions have since named lectures, scholarships and a research vessel in "
        "commemoration.",
    ],
    "company": [
        "The firm remained privately owned by descendants of its founder for most of the "
        "twentieth century before becoming a publicly listed corporation.",
        "It operates manufacturing facilities, subsidiaries and distribution centres across "
        "several countries.",
        "Industry analysts regard its engineering division as unusually innovative.",
    ],
    "species": [
        "It was first described scientifically from specimens collected during an expedition, "
        "and its taxonomy has since been revised more than once.",
        "Its populations have declined because of drainage, pesticide use and the "
        "fragmentation of suitable breeding sites.",
        "Males perform an elaborate courtship display, which naturalists documented in detail.",
    ],
}


def lead_sentences(e: Entity) -> list[str]:
    """The lead section, one string per sentence, in wikitext: the main facts, then two
    background sentences chosen by the title (so the choice is stable for an entity)."""
    options = LEAD_BACKGROUND[e.kind]
    first = zlib.crc32(e.title.encode("utf-8")) % len(options)
    background = [options[first], options[(first + 1) % len(options)]]
    return _lead_facts(e) + background


def _lead_facts(e: Entity) -> list[str]:
    f, t = e.facts, e.title
    if e.kind == "town":
        return [
            f"'''{t}''' is a market town in the [[{e.region}]] of [[{f['country']}]], standing "
            f"on the north bank of the [[{f['river']}]].",
            f"At the last census it had a population of {_fmt(f['population'])}.",
            f"The town grew around {f['industry']} after its founding in {f['founded']}, and it "
            f"is known today for {f['landmark']}.",
        ]
    if e.kind == "river":
        return [
            f"The '''{t}''' is a river in the [[{e.region}]], {f['length']} kilometres long, "
            f"which rises on [[{f['source']}]] and flows into [[{f['mouth']}]].",
            f"It passes through the town of [[{f['town']}]] and is fed by the "
            f"[[{f['tributary']}]].",
            f"A dam built in {f['dam']} regulates its lower course, where {f['fish']} are fished.",
        ]
    if e.kind == "band":
        return [
            f"'''{t}''' are a {f['genre']} band formed in [[{f['town']}]] in {f['formed']}.",
            f"The group has {f['members']} members and released its debut album, ''{f['album']}'', "
            f"on [[{f['label']}]].",
            f"Their best-known single is {f['single']}.",
        ]
    if e.kind == "scientist":
        life = (f"({f['born']} – {f['died']})" if f["died"] else f"(born {f['born']})")
        verb, works = ("was", "worked") if f["died"] else ("is", "works")
        return [
            f"'''{t}''' {life} {verb} a scientist from [[{f['town']}]] who {works} in "
            f"[[{f['field']}]].",
            f"{t.split()[0]} is best known for {f['discovery']}, research carried out at "
            f"[[{f['university']}]].",
            f"In recognition of that work {t.split()[0]} received [[{f['award']}]].",
        ]
    if e.kind == "company":
        return [
            f"'''{t}''' is a manufacturer of {f['sector']} founded in {f['founded']} by "
            f"[[{f['founder']}]] and based in [[{f['town']}]].",
            f"It employs about {_fmt(f['employees'])} people and reported revenue of "
            f"{f['revenue']} million crowns.",
            f"Its best-known product is {f['product']}.",
        ]
    common = f["common"]
    return [
        f"'''''{t}''''', the {common}, is a species in the family [[{f['family']}]] found in "
        f"{f['habitat']} of the [[{e.region}]].",
        f"Adults reach {f['length']} centimetres and feed mainly on {f['diet']}.",
        f"The species is listed as {f['status']}, and the largest known population lives near "
        f"[[{f['town']}]].",
    ]


def section_sentences(e: Entity, rng: random.Random) -> list[tuple[str, list[str]]]:
    """Body sections as (heading, sentences); they repeat some lead facts in more detail."""
    f, t = e.facts, e.title
    short = t.split()[0] if e.kind == "scientist" else t
    filler = [
        "Records from the period are incomplete, and later historians disagree about details.",
        "Local archives hold letters and photographs that document this period.",
        "The subject has been discussed in several regional histories.",
    ]
    if e.kind == "town":
        return [
            ("History", [f"A charter of {f['founded']} is the earliest record of {t}.",
                         f"During the following centuries {f['industry']} became the main "
                         f"trade, and the guild hall still stands.", rng.choice(filler)]),
            ("Geography", [f"{t} lies in the [[{e.region}]] on the [[{f['river']}]].",
                           "The surrounding farmland is mostly pasture."]),
            ("Governance", [f"The current mayor is [[{f['mayor']}]].",
                            f"{t} is twinned with [[{f['twin']}]]."]),
            ("Landmarks", [f"Visitors come to see {f['landmark']}, which is a protected "
                           "monument."]),
        ]
    if e.kind == "river":
        return [
            ("Course", [f"From its source on [[{f['source']}]] the river runs through "
                        f"[[{f['town']}]] before reaching [[{f['mouth']}]].",
                        rng.choice(filler)]),
            ("Ecology", [f"The river supports {f['fish']} and otters.",
                         f"Water quality improved after the {f['dam']} dam was fitted with a "
                         "fish pass."]),
        ]
    if e.kind == "band":
        return [
            ("History", [f"The band formed in [[{f['town']}]] in {f['formed']}.",
                         f"Their debut ''{f['album']}'' was recorded in eleven days.",
                         rng.choice(filler)]),
            ("Musical style", [f"Critics describe their sound as {f['genre']} with "
                               "unusual harmonies."]),
            ("Discography", [f"''{f['album']}'' ({f['label']})", f"Single: {f['single']}"]),
        ]
    if e.kind == "scientist":
        return [
            ("Early life", [f"{short} was born in [[{f['town']}]] in {f['born']}.",
                            rng.choice(filler)]),
            ("Career", [f"At [[{f['university']}]] {short} studied {f['field']}.",
                        f"The work on {f['discovery']} was published in a series of papers."]),
            ("Honours", [f"{short} received [[{f['award']}]]."]),
        ]
    if e.kind == "company":
        return [
            ("History", [f"[[{f['founder']}]] founded the company in [[{f['town']}]] in "
                         f"{f['founded']}.", rng.choice(filler)]),
            ("Products", [f"The range is led by {f['product']}.",
                          f"The firm makes {f['sector']} for export."]),
        ]
    return [
        ("Description", [f"Adults measure up to {f['length']} centimetres.",
                         f"The diet consists of {f['diet']}."]),
        ("Distribution and habitat", [f"It lives in {f['habitat']}, notably near "
                                      f"[[{f['town']}]]."]),
        ("Conservation", [f"Its status is {f['status']}.", rng.choice(filler)]),
    ]


_LINK = re.compile(r"\[\[(?:[^|\]]*\|)?([^\]]*)\]\]")


def plain(wikitext_sentence: str) -> str:
    """The plain text of a sentence written with this module's markup."""
    text = _LINK.sub(r"\1", wikitext_sentence)
    return text.replace("'''''", "").replace("'''", "").replace("''", "")


# --------------------------------------------------------------------------------------------
# Web prose: paraphrases of each fact, in the words a web page would use.

def paraphrases(e: Entity) -> dict[str, list[str]]:
    """For each fact, several sentences that restate it without the article's wording."""
    f, t = e.facts, e.title
    if e.kind == "town":
        return {
            "where": [f"You will find {t} in the {e.region}, right by the {f['river']}.",
                      f"{t} sits beside the {f['river']}, one of the prettiest spots in "
                      f"{f['country']}."],
            "population": [f"Roughly {_fmt(f['population'])} residents call {t} home.",
                           f"Census figures put {t} at {_fmt(f['population'])} inhabitants."],
            "founded": [f"Settlers established {t} back in {f['founded']}.",
                        f"Documents show a settlement at {t} as early as {f['founded']}."],
            "industry": [f"For centuries {t} made its living from {f['industry']}.",
                         f"The old wealth of {t} came from {f['industry']}, and the workshops "
                         "remain."],
            "landmark": [f"Do not miss {f['landmark']} when you visit {t}.",
                         f"The pride of {t} is {f['landmark']}."],
            "mayor": [f"Mayor {f['mayor']} of {t} spoke at the opening.",
                      f"{f['mayor']}, who leads the council of {t}, welcomed the plans."],
        }
    if e.kind == "river":
        return {
            "length": [f"The {t} runs for some {f['length']} km in total.",
                       f"Measured end to end, the {t} covers about {f['length']} kilometres."],
            "source": [f"The springs of the {t} lie high on {f['source']}.",
                       f"The {t} begins as a trickle on {f['source']}."],
            "mouth": [f"Eventually the {t} empties into {f['mouth']}.",
                      f"The journey of the {t} ends at {f['mouth']}."],
            "town": [f"Anglers gather where the {t} crosses {f['town']}.",
                     f"The {t} winds through the middle of {f['town']}."],
            "fish": [f"The {t} is a favourite with anglers after {f['fish']}.",
                     f"Good stocks of {f['fish']} live in the {t}."],
            "dam": [f"Engineers finished the {t} dam in {f['dam']}.",
                    f"Since {f['dam']} a dam has tamed the floods on the {t}."],
        }
    if e.kind == "band":
        return {
            "formed": [f"{t} got together in {f['town']} back in {f['formed']}.",
                       f"Since forming in {f['formed']}, {t} have toured widely from their "
                       f"base in {f['town']}."],
            "genre": [f"Their {f['genre']} sound sets {t} apart.",
                      f"{t} play a warm, melodic kind of {f['genre']}."],
            "members": [f"The {f['members']}-piece line-up of {t} has barely changed.",
                        f"All {f['members']} members of {t} write songs."],
            "album": [f"Debut record {f['album']} by {t} came out on {f['label']}.",
                      f"{t} signed to {f['label']} for {f['album']}."],
            "single": [f"Everyone knows {f['single']}, the breakthrough hit of {t}.",
                       f"{f['single']} remains the song fans request most from {t}."],
        }
    if e.kind == "scientist":
        return {
            "born": [f"{t} grew up in {f['town']}, born there in {f['born']}.",
                     f"Born in {f['born']}, {t} spent a childhood in {f['town']}."],
            "field": [f"{t} built a career in {f['field']}.",
                      f"Colleagues in {f['field']} regard {t} as a pioneer."],
            "discovery": [f"The work {t} did on {f['discovery']} changed the field.",
                          f"{t} is remembered for {f['discovery']}."],
            "university": [f"{t} spent most of a career at {f['university']}.",
                           f"Students at {f['university']} still learn from {t}."],
            "award": [f"{t} was honoured with {f['award']}.",
                      f"{f['award']} went to {t} for a lifetime of research."],
        }
    if e.kind == "company":
        return {
            "founded": [f"{f['founder']} started {t} in {f['founded']}.",
                        f"{t} dates back to {f['founded']}, when {f['founder']} opened a "
                        "workshop."],
            "town": [f"The head office of {t} is still in {f['town']}.",
                     f"{t} remains one of the largest employers in {f['town']}."],
            "employees": [f"Today {t} has a workforce of about {_fmt(f['employees'])}.",
                          f"Around {_fmt(f['employees'])} staff work for {t}."],
            "product": [f"Customers mostly know {t} for {f['product']}.",
                        f"The flagship of {t} is {f['product']}."],
            "revenue": [f"Sales at {t} reached {f['revenue']} million crowns last year.",
                        f"{t} turned over {f['revenue']} million crowns."],
        }
    return {
        "common": [f"The {f['common']} ({t}) is easy to overlook.",
                   f"Better known as the {f['common']}, {t} belongs to the {f['family']}."],
        "habitat": [f"Look for {t} in {f['habitat']}.",
                    f"The {f['common']} prefers {f['habitat']}."],
        "length": [f"A full-grown {f['common']} measures about {f['length']} cm.",
                   f"Specimens of {t} reach {f['length']} cm."],
        "diet": [f"The {f['common']} feeds on {f['diet']}.",
                 f"{t} lives on a diet of {f['diet']}."],
        "status": [f"Conservationists rate {t} as {f['status']}.",
                   f"The {f['common']} is currently classed as {f['status']}."],
        "town": [f"Volunteers near {f['town']} count the {f['common']} every spring.",
                 f"A reserve outside {f['town']} protects the {f['common']}."],
    }


# Sentences a web page adds around the facts: opinions, logistics, asides. They make relevant
# paragraphs read like web prose and give extractors words that are not in the lead.
ASIDES = [
    "It is well worth the detour.",
    "Many readers have written in to ask about it.",
    "We first covered the story several years ago.",
    "Opinions in the comments were, as ever, divided.",
    "The details below were checked with local sources.",
    "Photographs from the archive show how much has changed.",
    "There is more to the story than most guides admit.",
    "Our correspondent spent a week there last autumn.",
]

# Paragraphs unrelated to any entity: the off-topic prose every web page carries.
OFF_TOPIC = [
    "Parking charges in the town centre will rise again next spring, the council confirmed on "
    "Tuesday, despite a petition signed by more than two thousand shoppers.",
    "The weekend forecast is mixed, with sunshine on Saturday giving way to heavy showers and "
    "strong winds from the west by Sunday afternoon.",
    "Our newsletter brings the best stories to your inbox every Friday, together with reader "
    "letters, recipes and a crossword that has defeated many of our staff.",
    "A new bakery has opened on the corner of the high street, selling rye bread, cinnamon buns "
    "and coffee roasted by a small firm from the coast.",
    "Railway engineering works will close the line between the two stations for three weekends "
    "in a row, and replacement buses will run every half hour.",
    "The school choir won second prize at the national competition, singing a programme of "
    "folk songs arranged by their music teacher.",
    "Volunteers planted four hundred trees along the old canal towpath, part of a scheme to "
    "connect the parks on either side of the city.",
    "Prices for second-hand bicycles have almost doubled, according to a survey of dealers, as "
    "more commuters choose to cycle to work.",
    "The library will extend its opening hours during the exam season and offer free study "
    "rooms to students who book in advance.",
    "A letter writer complains that the new traffic lights on the bridge change far too quickly "
    "for older pedestrians to cross safely.",
    "Hospital visiting hours have changed, and visitors are asked to check the current rules "
    "before they travel to the wards.",
    "The annual charity run raised a record sum this year, with more than six hundred runners "
    "in fancy dress completing the course.",
]
