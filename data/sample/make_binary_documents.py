"""Writes the sample corpus's .docx and .pdf files from the text below.

The files are committed; rerun this (with the dev extras installed) only to change their text:
    python data/sample/make_binary_documents.py
"""

from pathlib import Path

from docx import Document
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Spacer

CORPUS = Path(__file__).parent / "corpus"

QUEEN_REARING = [
    ("heading", "Raising your own queens"),
    (
        "para",
        "A colony that loses its queen can raise a new one from any worker larva younger than "
        "about three days, by feeding it royal jelly throughout its development in a large "
        "vertical queen cell. Beekeepers use this ability to raise queens from their calmest "
        "and most productive colonies.",
    ),
    ("heading", "Development timeline"),
    (
        "para",
        "A queen emerges 16 days after the egg is laid, a worker after 21 days and a drone "
        "after 24 days. A virgin queen makes her mating flights five to ten days after "
        "emerging and mates with 12 to 20 drones in a drone congregation area.",
    ),
    ("table", [["Caste", "Egg to emergence (days)"], ["Queen", "16"], ["Worker", "21"], ["Drone", "24"]]),
    ("heading", "Grafting"),
    (
        "para",
        "Grafting means moving larvae less than 24 hours old from worker cells into plastic "
        "or wax queen cups with a fine grafting tool. The cups are placed in a queenless, "
        "well-fed cell-builder colony that is crowded with young nurse bees.",
    ),
    ("heading", "The Miller method"),
    (
        "para",
        "The Miller method needs no grafting: a frame of foundation cut into a zigzag edge is "
        "given to the breeder queen, and the bees raise queen cells along the edge of the "
        "newly laid comb once the frame is moved into a queenless colony.",
    ),
]

STINGS_AND_SAFETY = [
    ("heading", "Stings and safety around the apiary"),
    (
        "para",
        "A honey bee worker can sting only once: the barbed stinger stays in the skin with "
        "its venom sac, which keeps pumping venom for up to a minute. Scrape the stinger out "
        "sideways with a fingernail or hive tool as fast as possible rather than pinching it.",
    ),
    ("heading", "Normal reactions"),
    (
        "para",
        "Pain, redness and swelling around the sting are normal and can last a few days. A "
        "cold compress and an oral antihistamine help. Large local swelling that spreads "
        "across a whole limb is uncomfortable but not in itself dangerous.",
    ),
    ("heading", "Anaphylaxis"),
    (
        "para",
        "Call emergency services at once if someone has difficulty breathing, swelling of "
        "the lips or throat, hives away from the sting site, dizziness or a fast pulse after "
        "a sting. These are signs of anaphylaxis, which can kill within minutes. A person "
        "known to be allergic should carry an epinephrine auto-injector and use it in the "
        "outer thigh straight away.",
    ),
    (
        "table",
        [
            ["Symptom", "What to do"],
            ["Local pain and swelling", "Cold compress"],
            ["Breathing difficulty", "Epinephrine and call emergency services"],
        ],
    ),
    ("heading", "Reducing stings"),
    (
        "para",
        "Work bees in calm weather, move slowly, never stand in front of the entrance, and "
        "wash bee suits often, because stings leave alarm pheromone on the fabric.",
    ),
]

BEE_DISEASES_PAGES = [
    [
        ("heading", "Brood diseases of the honey bee"),
        (
            "para",
            "American foulbrood (AFB) is caused by the spore-forming bacterium Paenibacillus "
            "larvae. Infected larvae die after their cell is capped; the cappings become "
            "sunken, greasy and perforated, and the brood pattern looks spotty.",
        ),
        (
            "para",
            "The ropiness test: push a matchstick into a suspect cell and withdraw it slowly. "
            "If the brown remains stretch out in a rope of two centimetres or more, suspect "
            "American foulbrood. In many countries AFB is a notifiable disease: the beekeeper "
            "must report it, and infected colonies and their combs are usually burned because "
            "the spores survive for decades.",
        ),
    ],
    [
        ("heading", "Other brood and adult diseases"),
        (
            "para",
            "European foulbrood is caused by Melissococcus plutonius. Larvae die before "
            "capping, look twisted and yellowish, and the disease is often linked to stress; "
            "a strong nectar flow or a shook swarm can help colonies recover.",
        ),
        (
            "para",
            "Chalkbrood is a fungal disease (Ascosphaera apis) that turns larvae into hard "
            "white mummies, often seen on the landing board. It is worst in cool damp springs "
            "and is managed by good ventilation and requeening.",
        ),
        (
            "para",
            "Nosema is a gut parasite of adult bees (Nosema ceranae and Nosema apis) that "
            "shortens their lives; colonies dwindle in spring. It is confirmed by examining "
            "crushed bee abdomens under a microscope at 400 times magnification.",
        ),
    ],
]

LOCAL_REGULATIONS_PAGES = [
    [
        ("heading", "City ordinance on keeping honey bees (summary)"),
        (
            "para",
            "Residents may keep up to four hives on a lot smaller than half an acre, and up to "
            "eight hives on larger lots. Every hive must be registered with the city each year "
            "by 1 March; registration costs 15 dollars per apiary.",
        ),
        (
            "para",
            "Hives must stand at least 25 feet from any property line, unless a solid fence or "
            "hedge at least six feet tall stands between the hive and the neighbour, which "
            "forces the bees to fly up over people's heads.",
        ),
        (
            "para",
            "A water source must be provided within 20 feet of the hives from March to October, "
            "so that bees do not gather at neighbours' pools, taps and pet bowls.",
        ),
        (
            "para",
            "Colonies that behave aggressively must be requeened within 30 days of a written notice from the city.",
        ),
    ],
]


def write_docx(path: Path, blocks: list) -> None:
    document = Document()
    document.core_properties.title = blocks[0][1]
    for kind, content in blocks:
        if kind == "heading":
            document.add_heading(content, level=1)
        elif kind == "para":
            document.add_paragraph(content)
        else:
            table = document.add_table(rows=len(content), cols=len(content[0]))
            for row_cells, row_values in zip(table.rows, content):
                for cell, value in zip(row_cells.cells, row_values):
                    cell.text = value
    document.save(path)


def write_pdf(path: Path, pages: list, title: str) -> None:
    styles = getSampleStyleSheet()
    story = []
    for page_number, blocks in enumerate(pages):
        if page_number:
            story.append(PageBreak())
        for kind, content in blocks:
            style = styles["Heading1"] if kind == "heading" else styles["BodyText"]
            story.append(Paragraph(content, style))
            story.append(Spacer(1, 8))
    SimpleDocTemplate(str(path), pagesize=A4, title=title, invariant=True).build(story)


if __name__ == "__main__":
    write_docx(CORPUS / "guides" / "queen-rearing.docx", QUEEN_REARING)
    write_docx(CORPUS / "health" / "stings-and-safety.docx", STINGS_AND_SAFETY)
    write_pdf(CORPUS / "health" / "bee-diseases.pdf", BEE_DISEASES_PAGES, "Brood diseases of the honey bee")
    write_pdf(
        CORPUS / "community" / "local-regulations.pdf", LOCAL_REGULATIONS_PAGES, "City ordinance on keeping honey bees"
    )
