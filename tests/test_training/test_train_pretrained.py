"""The shipped checkpoint: loads without training or network, matches its recorded hash, translates."""
import hashlib
import json

import pytest

from transformer_course.data.tasks import number_translation
from transformer_course.training.checkpoint import load_pretrained, pretrained_dir
from transformer_course.training.evaluate import evaluate_pairs, translate


@pytest.fixture(scope="module")
def pretrained():
    return load_pretrained("numbers-en-fr")


def test_files_and_recorded_hash():
    folder = pretrained_dir()
    info = json.loads((folder / "numbers-en-fr.json").read_text(encoding="utf-8"))
    weights = folder / info["weights"]
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    assert digest == info["weights_sha256"]
    assert digest in (folder / "README.md").read_text(encoding="utf-8")
    assert weights.stat().st_size < 8_000_000


def test_translates_held_out_numbers(pretrained):
    model, src_vocab, tgt_vocab = pretrained
    assert not model.training
    assert translate(model, ["ninety-seven", "seventy-one", "eighty"], src_vocab, tgt_vocab) == \
        ["quatre-vingt-dix-sept", "soixante et onze", "quatre-vingts"]
    data = number_translation("en", "fr", max_number=9999, seed=0, split=1)   # the split it was trained with
    metrics = evaluate_pairs(model, data.test[:300], src_vocab, tgt_vocab)
    assert metrics["exact_match"] >= 0.97
