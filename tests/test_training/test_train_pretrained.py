"""The shipped checkpoints: load without training or network, match their recorded hash and model card; the
number models translate every everyday number and score on the held-out numbers of the split they were trained
with; the caption model translates captions written for this test (the corpus is not shipped)."""
import hashlib
import json
import re
from pathlib import Path

import pytest

from transformer_course.data.tasks import EVERYDAY_NUMBERS, number_to_words, number_translation
from transformer_course.training.checkpoint import load_pretrained, pretrained_dir, pretrained_names
from transformer_course.training.evaluate import evaluate_pairs, translate

NUMBER_MODELS = ("numbers-en-fr", "numbers-en-de")
SHIPPED = (*NUMBER_MODELS, "multi30k-de-en")


def _info(name):
    return json.loads((pretrained_dir() / f"{name}.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module", params=NUMBER_MODELS)
def shipped(request):
    return request.param, *load_pretrained(request.param)


def test_the_shipped_models_are_these():
    assert pretrained_names() == sorted(SHIPPED)


def test_the_model_cards_are_what_the_json_files_say():
    """The cards are written by tools/model_cards.py from what `train --export` recorded: no figure by hand."""
    from tools import model_cards

    assert (pretrained_dir() / "README.md").read_text(encoding="utf-8") == model_cards.render(pretrained_dir())
    assert "## numbers-en-de" in model_cards.render(pretrained_dir())


@pytest.mark.parametrize("name", SHIPPED)
def test_files_recorded_hash_and_model_card(name):
    folder = pretrained_dir()
    info = _info(name)
    weights = folder / info["weights"]
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    assert digest == info["weights_sha256"]
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert f"## {name}" in card and digest in card and info["metadata"]["command"] in card
    # small enough to ship inside the package: a number model's vocabularies are tens of tokens, the caption
    # model's joint BPE has thousands, each with its embedding row
    assert weights.stat().st_size < (8_000_000 if name in NUMBER_MODELS else 12_000_000)


def test_the_caption_model_translates_captions_it_never_saw():
    """German captions written for this test, in no corpus, with the English words a right translation holds
    (alternatives as a regular expression): the model trained on Multi30k's image captions gets them all."""
    model, src_vocab, tgt_vocab = load_pretrained("multi30k-de-en")
    assert not model.training
    captions = {"Ein Hund rennt über eine grüne Wiese.": ("dog", "green", "grass|field|meadow|lawn"),
                "Zwei Kinder spielen im Sand am Strand.": ("two", "children|kids", "sand", "beach"),
                "Eine Frau mit einem roten Hut liest ein Buch.": ("woman|lady", "red", "hat", "book"),
                "Ein Mann fährt mit dem Fahrrad durch die Stadt.": ("man", "bike|bicycle", "city|town")}
    outputs = translate(model, list(captions), src_vocab, tgt_vocab)
    for (german, words), english in zip(captions.items(), outputs):
        missing = [w for w in words if not re.search(rf"\b({w})\b", english.lower())]
        assert not missing, f"{german!r} -> {english!r}: no {missing}"


def test_every_everyday_number_is_right(shipped):
    """The numbers people type first (0-100, round hundreds and thousands): all of them, exactly."""
    name, model, src_vocab, tgt_vocab = shipped
    spec = _info(name)["metadata"]["data"]
    numbers = [n for n in EVERYDAY_NUMBERS if n <= spec["max_number"]]
    sources = [number_to_words(n, spec["src_lang"]) for n in numbers]
    outputs = translate(model, sources, src_vocab, tgt_vocab)
    wrong = [(s, o) for n, s, o in zip(numbers, sources, outputs) if o != number_to_words(n, spec["tgt_lang"])]
    assert not wrong and len(numbers) == 119


def test_held_out_numbers_of_its_own_split(shipped):
    name, model, src_vocab, tgt_vocab = shipped
    assert not model.training
    spec = _info(name)["metadata"]["data"]
    data = number_translation(spec["src_lang"], spec["tgt_lang"], max_number=spec["max_number"],
                              seed=spec["data_seed"], split=spec["split"])
    trained = {s for s, _ in data.train}
    held_out = data.test[::4]                            # a quarter of the test numbers: fast, every magnitude
    assert not trained & {s for s, _ in held_out}
    assert evaluate_pairs(model, held_out, src_vocab, tgt_vocab)["exact_match"] >= 0.99


def _readme_transcripts(subcommand: str):
    """(argv, expected stdout lines) of each README console example `python -m transformer_course <subcommand>
    --pretrained ...`: what a reader copies must print what the README shows."""
    import shlex
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    prefix = f"$ python -m transformer_course {subcommand} --pretrained "
    examples, current = [], None
    for line in readme.splitlines():
        if line.startswith(prefix):
            current = (shlex.split(line[len("$ python -m transformer_course "):]), [])
            examples.append(current)
        elif line.startswith(("$ ", "```")) or current is None:
            current = None
        elif not line.startswith("transformer-course: "):      # warnings go to stderr
            current[1].append(line)
    return examples


def test_the_readme_translations_of_the_shipped_models_are_real(capsys):
    from transformer_course.__main__ import main

    examples = _readme_transcripts("translate")
    assert len(examples) >= 2
    for argv, expected in examples:
        assert main(argv) == 0
        assert capsys.readouterr().out.splitlines() == expected, argv


def test_the_readme_evaluation_of_the_shipped_model_is_real(capsys):
    from transformer_course.__main__ import main

    (argv, expected), = _readme_transcripts("evaluate")
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines() == expected
