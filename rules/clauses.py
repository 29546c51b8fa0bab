"""Clause ids of the regulations: found in the texts, cited in free text, cited in test names.

A clause id is a section and its nested paragraph marks, e.g. "593.4(f)(2)(ii)": a letter (subsection), a
number (paragraph), a roman numeral (subparagraph). The map of every clause to the code and test that keep
it is docs/regulations.md; its test (tests/test_regulations_map.py) uses these functions to find the ids in
the regulation texts (../shared/regs) and the ids the tests cite. Written by hand: no library reads the
Pennsylvania Code's paragraph marks, and the rules are a few regular expressions.

In a regulation text a paragraph mark is "(x)" at the start of a line or after a space, followed by a
space and a capital or a digit (the first word of its sentence, or "499 to 1." in a payout list); a
reference such as "§ 601a.10(a) (relating to ..." or "subsections (b) and (c)" is not one. A single "i",
"v" or "x" is the next subsection letter when it follows the last letter ("(h)" then "(i)" in 675a.6), and
otherwise a roman numeral ("(g)" then "(i)" in 617b.3).
"""

from __future__ import annotations

import re

# The chapters whose sections the map covers (and whose ids a test may cite).
CHAPTERS: tuple[str, ...] = ("593", "675a", "617b", "631b", "633b")

_CHAPTER = "|".join(CHAPTERS)
_HEADING = re.compile(r"§ (\d{3}[a-z]?\.\d+)\. |^Section (\d{3}[a-z]?\.\d+) - ", re.MULTILINE)
_MARK = re.compile(r"(?:^|(?<=\s))\(([a-z]{1,4}|\d{1,2})\)(?=\s+[A-Z0-9\"'“‘])", re.MULTILINE)
_ROMAN = re.compile(r"^[ivx]+$")
_CITED = re.compile(rf"\b(?:{_CHAPTER})\.\d+(?:\([a-z]{{1,4}}\)|\(\d{{1,2}}\))*")


def _kind(mark: str, *, last_letter: str | None) -> str:
    """The kind of a paragraph mark (letter, number or roman), given the last subsection letter."""
    if mark.isdigit():
        return "number"
    if _ROMAN.match(mark):
        follows = last_letter is not None and len(mark) == 1 and ord(mark) == ord(last_letter) + 1
        if not follows:
            return "roman"
    return "letter"


def subsection_ids(text: str) -> tuple[str, ...]:
    """Every section and paragraph id of a regulation text, in the order they appear."""
    events = sorted(
        [(m.start(), "section", m.group(1) or m.group(2)) for m in _HEADING.finditer(text)]
        + [(m.start(), "mark", m.group(1)) for m in _MARK.finditer(text)]
    )
    ids: list[str] = []
    section: str | None = None
    letter: str | None = None
    number: str | None = None
    for _, what, value in events:
        if what == "section":
            section, letter, number = value, None, None
            ids.append(value)
            continue
        if section is None:  # the preamble's own numbered lists (Findings, Order)
            continue
        kind = _kind(value, last_letter=letter)
        if kind == "letter":
            letter, number = value, None
            ids.append(f"{section}({letter})")
        elif kind == "number" and letter is not None:
            number = value
            ids.append(f"{section}({letter})({number})")
        elif kind == "roman" and letter is not None:
            parent = f"{section}({letter})" + (f"({number})" if number is not None else "")
            ids.append(f"{parent}({value})")
    return tuple(dict.fromkeys(ids))


def cited_in_text(text: str) -> tuple[str, ...]:
    """The clause ids written out in free text (a docstring), e.g. "593.4(f)(3)", in order, once each."""
    return tuple(dict.fromkeys(m.group(0) for m in _CITED.finditer(text)))


def cited_in_test_name(name: str) -> tuple[str, ...]:
    """The clause ids a test name cites: `test_593_4_f_2_ii_...` -> 593.4(f)(2)(ii).

    After the section come at most a letter, a number and a roman numeral, in that order; the first word
    that is none of them ends the id (so `test_675a_4_c_a_cocked_die` cites 675a.4(c)). A name may cite
    several sections (`test_593_4_h_675a_4_h_...`).
    """
    words = name.split("_")
    ids: list[str] = []
    i = 0
    while i < len(words) - 1:
        if words[i] not in CHAPTERS or not words[i + 1].isdigit():
            i += 1
            continue
        clause = f"{words[i]}.{words[i + 1]}"
        i += 2
        for kind in ("letter", "number", "roman"):
            word = words[i] if i < len(words) else ""
            fits = {
                "letter": len(word) == 1 and word.isalpha(),
                "number": word.isdigit() and len(word) <= 2,
                "roman": bool(_ROMAN.match(word)),
            }[kind]
            if not fits:
                if kind == "letter":
                    break
                continue
            clause += f"({word})"
            i += 1
        ids.append(clause)
    return tuple(dict.fromkeys(ids))
