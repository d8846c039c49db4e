"""Pages for the research tests: three topics, each many articles written from a bank of
sentences on the topic (so pages differ but share the topic's vocabulary), plus pages that
fail to read. Served by `conftest.py` from 127.0.0.1. The text was written for these tests."""

from __future__ import annotations

import html

TOPICS: dict[str, dict[str, object]] = {
    "urban heat island": {
        "slug": "heat",
        "pages": 28,
        "titles": [
            "Why cities run hotter than the countryside",
            "Mapping street temperatures with volunteer sensors",
            "Cool roofs: what the measurements say",
            "Trees, shade and the evening temperature drop",
            "Heat, health and the elderly in dense neighbourhoods",
            "Asphalt, concrete and stored daytime heat",
            "The history of urban climate research",
            "Criticism of heat island rankings",
        ],
        "sentences": [
            "An urban heat island is a city district that stays warmer than the surrounding rural land, mostly after sunset.",
            "Dark roofs and asphalt absorb sunlight during the day and release the stored heat slowly through the night.",
            "Satellite surface temperatures often show differences of ten degrees or more between paved cores and nearby fields.",
            "Air temperature differences are smaller than surface differences, typically two to five degrees on calm clear nights.",
            "Street trees cool the air around them by shading pavement and by evaporating water through their leaves.",
            "A 2019 survey of European cities found that tree cover explained much of the variation in night heat [3].",
            "Cool roofs coated with reflective paint lowered indoor temperatures in several monitored apartment blocks.",
            "Critics argue that rankings of the hottest cities mix surface readings with air readings and mislead the public.",
            "Waste heat from air conditioners, vehicles and industry adds to the warming of dense neighbourhoods.",
            "Luke Howard described warmer temperatures in London as early as the 1810s, the first record of the effect.",
            "Heat waves are deadlier in cities because buildings do not cool down at night and residents cannot recover.",
            "Older people living alone on upper floors face the highest risk of heat illness during long hot spells.",
            "Volunteer sensor networks now record street-level temperature every few minutes across whole neighbourhoods.",
            "Evidence from Phoenix shows that shaded bus stops are measurably cooler than exposed ones in the afternoon.",
            "Green roofs retain rainwater and cool through evaporation, but their benefit depends on irrigation in dry summers.",
            "Narrow street canyons trap long-wave radiation, so tall buildings slow the cooling of the street below.",
            "Some researchers warn that reflective pavements can raise the heat felt by pedestrians walking on them.",
            "Parks create cool islands whose effect reaches a few hundred metres into the surrounding streets.",
            "Planners increasingly use heat vulnerability maps that combine temperature, income and age data.",
            "Measurement stations placed at airports may underestimate the heat experienced in residential districts.",
            "Climate change raises the baseline temperature, so the extra urban warming pushes more nights above danger thresholds.",
            "Water features such as fountains and canals offer local relief but cool only their immediate surroundings.",
            "Statistics from Paris after the 2003 heat wave showed excess deaths concentrated in the city's densest arrondissements.",
            "Lighter building materials and wider tree planting are the most frequently recommended mitigation measures.",
        ],
    },
    "honeybee colony collapse": {
        "slug": "bees",
        "pages": 12,
        "titles": [
            "What happened to the missing hives",
            "Varroa mites and the viruses they carry",
            "Neonicotinoids: the field evidence",
            "Beekeepers count their winter losses",
            "Nutrition, monocultures and weak colonies",
            "Is colony collapse disorder over?",
        ],
        "sentences": [
            "Colony collapse disorder describes hives where the worker bees vanish while the queen and brood remain.",
            "The name was coined in 2006 after American beekeepers reported sudden losses of thirty to ninety percent of hives.",
            "The varroa mite feeds on developing bees and spreads deformed wing virus through the colony.",
            "Most scientists now see collapse as the result of several stresses acting together rather than one cause.",
            "Field studies of neonicotinoid seed treatments found effects on foraging and homing in some trials but not others.",
            "Bees fed on a single crop such as almonds receive a poorer mix of proteins than bees foraging on wild flowers.",
            "Annual surveys ask beekeepers how many colonies they lost over the winter and over the whole year.",
            "Winter losses in the United States have averaged around thirty percent in recent surveys, well above the acceptable level.",
            "Critics of the pesticide studies point out that laboratory doses were often higher than those found in fields.",
            "Migratory beekeeping moves hives across the country on trucks, which stresses colonies and spreads disease.",
            "Reports of classic colony collapse, with empty hives and no dead bees, have become rare since about 2010.",
            "Losses continue, however, and are now mostly blamed on mites, viruses, poor nutrition and harsh weather.",
            "Beekeepers replace lost colonies by splitting strong hives, so the total number of colonies has stayed fairly stable.",
            "The European Union restricted three neonicotinoids on flowering crops in 2013 and extended the ban in 2018.",
            "Wild bumblebees and solitary bees are also declining, and they are harder to count than managed honeybees.",
            "Breeding programmes select queens whose workers groom mites off each other or remove infested brood.",
        ],
    },
    "lithium-ion battery recycling": {
        "slug": "batteries",
        "pages": 12,
        "titles": [
            "How spent batteries are taken apart",
            "Black mass and the recovery of cobalt",
            "Hydrometallurgy versus smelting",
            "Recycling rates: the evidence",
            "The economics of battery recycling",
            "Fires in recycling plants",
        ],
        "sentences": [
            "Lithium-ion battery recycling recovers lithium, cobalt, nickel and copper from spent cells.",
            "Packs are discharged and dismantled, then the cells are shredded into a powder known as black mass.",
            "Pyrometallurgy smelts the cells at high temperature and recovers cobalt and nickel but loses most of the lithium to slag.",
            "Hydrometallurgy dissolves black mass in acid and separates the metals by precipitation and solvent extraction.",
            "Direct recycling tries to refresh the cathode material without breaking it down to its elements.",
            "The economics depend heavily on cobalt prices, so cells with little cobalt are less attractive to recyclers.",
            "Battery fires in collection trucks and recycling plants are a growing problem when damaged cells are mixed with scrap.",
            "Estimates of global recycling rates vary widely because many small batteries are never collected at all.",
            "The European battery regulation sets minimum shares of recycled cobalt, lithium and nickel in new batteries.",
            "Critics warn that recycling alone cannot supply the metals needed while the electric vehicle fleet is still growing.",
            "Recovered lithium carbonate can meet battery grade purity when the leaching and refining steps are well controlled.",
            "Second-life use puts retired vehicle batteries into stationary storage before they are finally recycled.",
            "Energy use and acid waste make hydrometallurgy less clean than its advocates sometimes suggest.",
            "Several large plants in China process most of the world's black mass today.",
            "Design for disassembly, such as fewer glued joints, would make packs quicker and safer to take apart.",
            "Collection schemes that pay a deposit on batteries have raised return rates in some countries.",
        ],
    },
}

FAILING = ("/fail/server-error", "/fail/missing", "/fail/report.pdf", "/fail/empty", "/fail/slow")

_FRAME = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="description" content="{description}"></head><body>
<header><nav><a href="/">Home</a> <a href="/about">About us</a> <a href="/subscribe">Subscribe</a></nav></header>
<main><article><h1>{title}</h1>
{body}
</article></main>
<footer><p>Copyright 2025 The Field Notes Review. All rights reserved.</p><a href="/privacy">Privacy</a></footer>
</body></html>"""


def page_path(slug: str, i: int) -> str:
    return f"/{slug}/article-{i}"


def page_title(topic: str, i: int) -> str:
    titles: list[str] = TOPICS[topic]["titles"]  # type: ignore[assignment]
    return f"{titles[i % len(titles)]} (part {i + 1})"


def article(topic: str, i: int) -> str:
    """Article `i` on `topic`: three paragraphs of sentences taken from the bank at different strides."""
    bank: list[str] = TOPICS[topic]["sentences"]  # type: ignore[assignment]
    n = len(bank)
    paragraphs = []
    for k, stride in enumerate((1, 3, 5)):
        start = (i * 7 + k * 5) % n
        chosen = [bank[(start + j * stride) % n] for j in range(4)]
        paragraphs.append("<p>" + " ".join(html.escape(s) for s in chosen) + "</p>")
        if k == 0:
            paragraphs.append(f"<h2>{html.escape(page_title(topic, i + 1).split(' (')[0])}</h2>")
    title = page_title(topic, i)
    return _FRAME.format(title=html.escape(title), description=html.escape(bank[i % n]), body="\n".join(paragraphs))


def all_pages() -> dict[str, str]:
    pages: dict[str, str] = {}
    for topic, entry in TOPICS.items():
        for i in range(int(entry["pages"])):  # type: ignore[call-overload]
            pages[page_path(str(entry["slug"]), i)] = article(topic, i)
    return pages
