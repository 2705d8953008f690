"""The workshop agendas of the guide (book/workshop_guide.md), timed by a stated rule from measured inputs.

    python -m tools.agenda            # write book/generated/workshop_agenda.md (the guide includes it) and
                                      # book/generated/study_times.md (the introduction includes it)
    python -m tools.agenda --check    # exit 1 when they are not what the inputs give now (a test runs it)

A block's minutes come from four measured or counted inputs and one rule per part:
- lecture: one minute per slide of the chapter's deck (tools/slides.py);
- walk-through: the chapter's main line (the student copy's words outside maths, code, solutions and dropdowns)
  at 400 words a minute: the instructor reads the key passages and shows the figures, learners skim; a
  dropdown is a detour (a derivation, a check, a second experiment) left to reading alone, so it counts in the
  study times (all the prose at 200 words a minute) and not in the workshop;
- code: the chapter's measured run time top to bottom (transformer_course/results/chapter_times.json, from
  `python benchmarks/chapter_times.py`) times 4, since the environment check accepts a laptop up to four times
  slower than the machine that measured it; a "demo" block runs the code once, on the instructor's screen
  (factor 1);
- exercises: 15 minutes for a coding exercise (a stub and its check, in pairs), 5 for a pen-and-paper exercise
  or a widget question.
The block's total is rounded up to the next 5 minutes. A day's slack is its length minus its blocks and breaks.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from .book import ROOT, cell_source, write_or_check
from .colab import build_site
from .course_colab import colab_path
from .slides import deck, visible_words

OUT = ROOT / "book" / "generated" / "workshop_agenda.md"
STUDY_OUT = ROOT / "book" / "generated" / "study_times.md"
READING_WORDS_PER_MINUTE = 200   # a learner reading alone, carefully (the workshop's 400 is a skim of key passages)
TIMES = ROOT / "transformer_course" / "results" / "chapter_times.json"
SLIDE_MINUTES = 1
WORDS_PER_MINUTE = 400
LAPTOP_SLOWDOWN = 4
CODING_MINUTES, OTHER_MINUTES = 15, 5


@dataclass(frozen=True)
class Block:
    chapter: str                   # "03_general_attention", or "" for a fixed item (welcome, break)
    what: str
    exercises: tuple[str, ...] = ()   # labels (Exercise numbers are looked up)
    demo: bool = False             # shown on the instructor's screen: code once, no walk-through by the room
    minutes: int = 0               # a fixed item's length


def _break(what: str, minutes: int) -> Block:
    return Block("", what, minutes=minutes)


FULL_DAY = ("9:00", "17:30", (
    _break("Welcome; every laptop runs `doctor`; pairs are formed", 20),
    Block("01_attention_history", "Chapter 1: the bottleneck and the line of papers, shown on your screen", (),
          demo=True),
    Block("02_bahdanau_attention", "Chapter 2: Bahdanau attention, shown on your screen", (), demo=True),
    _break("Break", 15),
    Block("03_general_attention", "Chapter 3: queries, keys and values; scaling; masks",
          ("ex-ad-softmax", "ex-03-masked-softmax")),
    Block("04_self_attention", "Chapter 4: self-attention and the causal mask", ("ex-04-self-attention",)),
    _break("Lunch", 45),
    Block("05_multi_head_attention", "Chapter 5: multi-head attention", ("ex-05-split-merge",)),
    Block("06_positional_encoding", "Chapter 6: positions", ("ex-06-code",)),
    _break("Break", 15),
    Block("07_encoder", "Chapter 7: the encoder layer", ("ex-07-layer-norm",)),
    Block("08_decoder", "Chapter 8: the decoder and decoding", ("ex-08-greedy",)),
    _break("Break", 10),
    Block("09_training", "Chapter 9: training, shown on your screen", ("ex-ad-warmup",), demo=True),
    _break("Questions, what to read next, feedback", 15),
))
HALF_DAY = ("0:00", "3:30", (
    _break("Welcome; `doctor` on every laptop, or Colab", 15),
    Block("01_attention_history", "Why attention: chapter 1, shown on your screen", (), demo=True),
    Block("03_general_attention", "Chapter 3: queries, keys and values; scaling; masks",
          ("ex-ad-softmax", "ex-03-masked-softmax")),
    _break("Break", 15),
    Block("05_multi_head_attention", "Chapter 5: multi-head attention", ("ex-05-split-merge",)),
    Block("09_training", "Chapter 9: training, shown on your screen", ("ex-ad-warmup",), demo=True),
    _break("Questions and what to read next", 10),
))
OPTIONAL = Block("10_real_sentences", "Chapter 10: real sentences, shown on your screen (its dictionary installed)",
                 (), demo=True)


def _minutes(clock: str) -> int:
    hours, minutes = clock.split(":")
    return 60 * int(hours) + int(minutes)


def _clock(minutes: int) -> str:
    return f"{minutes // 60}:{minutes % 60:02d}"


@dataclass
class Chapter:
    slides: int
    words: int                     # all the prose (study times)
    main_words: int                # the prose outside dropdowns (the workshop's walk-through)
    seconds: float
    exercises: dict[str, tuple[str, bool]]   # label -> ("Exercise 3.6", coding?)


def _exercises(notebook: Path, site) -> dict[str, tuple[str, bool]]:
    """label -> (its name, as the site's index gives it, and whether it is a coding exercise: a code cell with
    a check_ call before the exercise's end)."""
    found: dict[str, tuple[str, bool]] = {}
    current = None
    for cell in json.loads(notebook.read_text())["cells"]:
        source = cell_source(cell)
        if cell["cell_type"] == "markdown":
            for match in re.finditer(r"\{exercise(-start)?\}[^\n]*\n:label: ([\w-]+)", source):
                found[match.group(2)] = (site.labels[match.group(2)]["text"], False)
                current = match.group(2) if match.group(1) else None
            if "{exercise-end}" in source:
                current = None
        elif current and re.search(r"\bcheck_\w+\(", source):
            found[current] = (found[current][0], True)
    return found


def main_line(student_prose: str) -> str:
    """A student copy's prose without its dropdowns: that copy has no solutions, so its only `<details>` blocks
    are the page's dropdowns (tools/colab.py folds each `{dropdown}` into one)."""
    return re.sub(r"<details>.*?</details>", " ", student_prose, flags=re.DOTALL)


def chapters() -> dict[str, Chapter]:
    site = build_site(ROOT)
    times = json.loads(TIMES.read_text())["notebooks"]
    result = {}
    for docname in site.docnames:
        notebook = ROOT / f"{docname}.ipynb"
        if not notebook.exists():
            continue
        student = json.loads((ROOT / colab_path(docname, student=True)).read_text())
        prose = "\n".join(re.sub(r"```.*?```", " ", cell_source(c), flags=re.DOTALL)
                          for c in student["cells"] if c["cell_type"] == "markdown")
        _, _, slides = deck(notebook, site)
        result[notebook.stem] = Chapter(slides, visible_words(prose), visible_words(main_line(prose)),
                                        times[notebook.name]["seconds"], _exercises(notebook, site))
    return result


def block_minutes(block: Block, all_chapters: dict[str, Chapter]) -> dict[str, int]:
    """The parts of a block (minutes, by the rule above) and its total; its exercises may come from another
    page (appendix D's widget questions)."""
    chapter = all_chapters[block.chapter]
    exercises = {label: kind for c in all_chapters.values() for label, kind in c.exercises.items()}
    parts = {"lecture": chapter.slides * SLIDE_MINUTES,
             "walk-through": 0 if block.demo else math.ceil(chapter.main_words / WORDS_PER_MINUTE),
             "code": math.ceil(chapter.seconds * (1 if block.demo else LAPTOP_SLOWDOWN) / 60),
             "exercises": sum(CODING_MINUTES if exercises[label][1] else OTHER_MINUTES
                              for label in block.exercises)}
    parts["total"] = 5 * math.ceil(sum(parts.values()) / 5)
    return parts


def _exercise_names(block: Block, all_chapters: dict[str, Chapter]) -> str:
    names = {}
    for chapter in all_chapters.values():
        names.update({label: name for label, (name, _) in chapter.exercises.items()})
    return ", ".join(names[label] for label in block.exercises) or "none"


def schedule(day: tuple, all_chapters: dict[str, Chapter]) -> tuple[list[str], int]:
    """The Markdown table rows of a day and its slack in minutes."""
    start, end, blocks = day
    now = _minutes(start)
    rows = ["| time | block | minutes | of which lecture / walk-through / code / exercises | the exercises |",
            "|---|---|---|---|---|"]
    for block in blocks:
        if not block.chapter:
            rows.append(f"| {_clock(now)} | {block.what} | {block.minutes} | | |")
            now += block.minutes
            continue
        parts = block_minutes(block, all_chapters)
        split = " / ".join(str(parts[key]) for key in ("lecture", "walk-through", "code", "exercises"))
        rows.append(f"| {_clock(now)} | {block.what} | {parts['total']} | {split} | "
                    f"{_exercise_names(block, all_chapters)} |")
        now += parts["total"]
    slack = _minutes(end) - now
    rows.append(f"| {_clock(now)} | Slack, for set-up trouble and questions | {slack} | | |")
    rows.append(f"| {end} | End | | | |")
    return rows, slack


def render(all_chapters: dict[str, Chapter]) -> tuple[str, dict[str, int]]:
    full, full_slack = schedule(FULL_DAY, all_chapters)
    half, half_slack = schedule(HALF_DAY, all_chapters)
    optional = block_minutes(OPTIONAL, all_chapters)
    inputs = ["| chapter | slides | words (main line / all) | code (s) |", "|---|---|---|---|"]
    inputs += [f"| {name} | {c.slides} | {c.main_words} / {c.words} | {c.seconds:.0f} |"
               for name, c in all_chapters.items()]
    text = "\n".join([
        "<!-- Written by `python -m tools.agenda` (tools/agenda.py) from the decks, the student copies and "
        "transformer_course/results/chapter_times.json; do not edit by hand. -->",
        "", "**A full day.**", "", *full, "",
        "**A half day.**", "", *half, "",
        f"**Optional block** (a group that is ahead, or a second day): {OPTIONAL.what}, {optional['total']} minutes.",
        "", "The inputs, per chapter (code: seconds top to bottom on the machine that measured it):", "", *inputs, ""])
    return text, {"full day": full_slack, "half day": half_slack}


def render_study_times(all_chapters: dict[str, Chapter]) -> str:
    """Each chapter's time for a learner alone, by a stated rule: its prose at READING_WORDS_PER_MINUTE, its code
    once on the machine that measured it, and its exercises at the workshop's minutes (15 coding, 5 other)."""
    rows = ["| page | words | reading (min) | code, top to bottom (s) | exercises: coding + other | "
            "total (h) |", "|---|---|---|---|---|---|"]
    sums = {"words": 0, "reading": 0, "seconds": 0.0, "coding": 0, "other": 0, "minutes": 0.0}
    for name, chapter in all_chapters.items():
        coding = sum(1 for _, is_coding in chapter.exercises.values() if is_coding)
        other = len(chapter.exercises) - coding
        reading = math.ceil(chapter.words / READING_WORDS_PER_MINUTE)
        total = reading + chapter.seconds / 60 + coding * CODING_MINUTES + other * OTHER_MINUTES
        rows.append(f"| {{doc}}`{name}` | {chapter.words} | {reading} | {chapter.seconds:.0f} | {coding} + {other} | "
                    f"{total / 60:.1f} |")
        for key, value in zip(sums, (chapter.words, reading, chapter.seconds, coding, other, total)):
            sums[key] += value
    rows.append(f"| **all pages** | {sums['words']} | {sums['reading']} | {sums['seconds']:.0f} | "
                f"{sums['coding']} + {sums['other']} | {sums['minutes'] / 60:.1f} |")
    return "\n".join([
        "<!-- Written by `python -m tools.agenda` (tools/agenda.py) from the student copies and "
        "transformer_course/results/chapter_times.json; do not edit by hand. -->", "", *rows, ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help=f"exit 1 when {OUT.relative_to(ROOT)} is stale")
    args = parser.parse_args(argv)
    all_chapters = chapters()
    text, slack = render(all_chapters)
    status = write_or_check(OUT, text, "python -m tools.agenda", args.check)
    status |= write_or_check(STUDY_OUT, render_study_times(all_chapters), "python -m tools.agenda", args.check)
    print("slack: " + ", ".join(f"{day} {minutes} min" for day, minutes in slack.items()))
    return status


if __name__ == "__main__":
    sys.exit(main())
