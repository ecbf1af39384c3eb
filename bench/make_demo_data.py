"""Regenerate the small synthetic demo datasets shipped in setanon_sql/data/.

Synthetic on purpose: the package must not redistribute the public benchmark files. Run from the
repository root: ``python bench/make_demo_data.py``. Deterministic (fixed seed).
"""

from __future__ import annotations

import random
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "setanon_sql" / "data"

CHAPTERS = {
    "001-139": ["008", "038", "041", "070", "112"],
    "240-279": ["244", "250", "272", "276", "278"],
    "280-289": ["280", "285", "287"],
    "290-319": ["296", "300", "305", "311"],
    "390-459": ["401", "410", "414", "427", "428", "434", "443"],
    "460-519": ["486", "491", "493", "496", "518"],
    "520-579": ["530", "535", "562", "571", "578"],
    "580-629": ["584", "585", "599"],
    "710-739": ["715", "719", "724", "733"],
    "V01-V91": ["V12", "V15", "V45", "V58"],
}
DRUGS = ["aspirin", "atorvastatin", "furosemide", "heparin", "insulin", "lisinopril",
         "metformin", "metoprolol", "omeprazole", "warfarin", "amoxicillin", "prednisone",
         "albuterol", "levothyroxine", "sertraline", "gabapentin"]


def baskets(rng: random.Random, n: int = 2000, n_items: int = 120) -> str:
    weights = [1.0 / (rank ** 0.9) for rank in range(1, n_items + 1)]
    lines = []
    for _ in range(n):
        length = 0 if rng.random() < 0.02 else min(n_items, 1 + int(rng.expovariate(1 / 3.5)))
        items = sorted(set(rng.choices(range(1, n_items + 1), weights, k=length)))
        lines.append(" ".join(map(str, items)))
    return "\n".join(lines) + "\n"


def admissions(rng: random.Random, n: int = 400) -> str:
    codes = [code for chapter in CHAPTERS.values() for code in chapter]
    code_weights = [1.0 / (rank ** 0.7) for rank in range(1, len(codes) + 1)]
    rows = ["patient_id\tbirth_year\tsex\tzip3\tdiagnoses\tdrugs"]
    for i in range(1, n + 1):
        diagnoses = sorted(set(rng.choices(codes, code_weights, k=rng.randint(1, 6))))
        drugs = sorted(set(rng.choices(DRUGS, k=rng.randint(0, 4))))
        rows.append("\t".join([
            f"P{i:04d}", str(rng.randint(1930, 2005)), rng.choice("FM"),
            rng.choice(["021", "100", "112", "191", "606", "750", "941", "981"]),
            " ".join(diagnoses), " ".join(drugs),
        ]))
    return "\n".join(rows) + "\n"


def diagnosis_hierarchy() -> str:
    return "".join(f"{code};{chapter};*\n"
                   for chapter, chapter_codes in CHAPTERS.items() for code in chapter_codes)


def main() -> None:
    rng = random.Random(20261122)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "demo_baskets.dat").write_text(baskets(rng))
    (OUT / "demo_admissions.tsv").write_text(admissions(rng))
    (OUT / "demo_diagnosis_hierarchy.txt").write_text(diagnosis_hierarchy())


if __name__ == "__main__":
    main()
