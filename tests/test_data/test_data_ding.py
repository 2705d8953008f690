"""The Ding dictionary's example sentences: which lines become pairs, the fixed split, the errors.

The tests read a small file in Ding's format that they write themselves (the sentences are the project's own);
the dictionary itself (GPL, installed by `apt-get install trans-de-en`) is never needed here.
"""
from __future__ import annotations

import gzip
import hashlib

import pytest

from transformer_course.data.corpora import CorpusError
from transformer_course.data.ding import DING_DOWNLOAD, load_ding, read_ding_pairs

HEADER = "# Version :: test\n# License :: written for the course's tests\n"
ENTRIES = [
    # kept: one sense on each side, a sentence of 3-12 words
    "Das Wetter ist heute schön. :: The weather is nice today.",
    # kept: the first alternative of each side ("; " separates alternatives)
    "Ich bin müde.; Ich bin erschöpft. :: I am tired.; I am worn out.",
    # kept: the second sense (aligned by position); the first sense is a word, not a sentence
    "Haus {n} | Wir bauen ein neues Haus. :: house | We are building a new house.",
    # dropped: the senses do not align (two against one)
    "laufen {vi} | Er läuft schnell. :: to run",
    # dropped: markup on either side: brackets, a slash between variants
    "Das ist (ziemlich) gut. :: That is pretty good.",
    "Sie kommt morgen / übermorgen. :: She comes tomorrow.",
    "Er schläft schon lange. :: He has been sleeping [for] a long time.",
    # dropped: too short (2 words) and too long (13 words)
    "Komm her! :: Come here now!",
    "Eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn. :: One two three.",
    # dropped: not a sentence (no capital letter first, no final mark)
    "guten Morgen allerseits :: good morning everybody",
    # dropped: a German sentence seen before, and an English sentence seen before
    "Das Wetter ist heute schön. :: Today the weather is fine.",
    "Heute ist das Wetter schön. :: The weather is nice today.",
    # kept: a question
    "Wo ist der Bahnhof bitte? :: Where is the station, please?",
]
KEPT = [("Das Wetter ist heute schön.", "The weather is nice today."), ("Ich bin müde.", "I am tired."),
        ("Wir bauen ein neues Haus.", "We are building a new house."),
        ("Wo ist der Bahnhof bitte?", "Where is the station, please?")]


@pytest.fixture
def ding_file(tmp_path):
    path = tmp_path / "de-en"
    path.write_text(HEADER + "\n".join(ENTRIES) + "\n", encoding="utf-8")
    return path


def test_the_sentence_pairs_follow_the_documented_rules(ding_file):
    assert read_ding_pairs(ding_file) == KEPT


def test_a_gzip_file_reads_the_same(ding_file, tmp_path):
    packed = tmp_path / "de-en.txt.gz"
    packed.write_bytes(gzip.compress(ding_file.read_bytes()))
    assert read_ding_pairs(packed) == KEPT


def _many_pairs_file(tmp_path, n: int):
    lines = [f"Satz Nummer {i} ist hier. :: Sentence number {i} is here." for i in range(n)]
    path = tmp_path / "many"
    path.write_text(HEADER + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_split_is_by_the_hash_of_the_german_sentence_and_the_same_both_ways(tmp_path):
    path = _many_pairs_file(tmp_path, 40)
    data = load_ding(path, "de", "en", tokenizer="word", n_test=5, n_val=7)
    by_key = sorted((hashlib.sha256(de.encode()).hexdigest(), de) for de, _ in read_ding_pairs(path))
    assert [de for de, _ in data.test] == [de for _, de in by_key[:5]]
    assert [de for de, _ in data.val] == [de for _, de in by_key[5:12]]
    assert (len(data.train), data.name) == (28, "ding-de-en")
    reverse = load_ding(path, "en", "de", tokenizer="word", n_test=5, n_val=7)
    assert reverse.test == [(en, de) for de, en in data.test] and reverse.name == "ding-en-de"
    smaller = load_ding(path, tokenizer="word", n_test=5, n_val=7, n_train=10)
    assert smaller.train == data.train[:10] and smaller.test == data.test      # a subset grows, never swaps


def test_a_missing_file_names_the_apt_command_and_the_projects_download(tmp_path):
    with pytest.raises(FileNotFoundError, match="apt-get install trans-de-en") as err:
        read_ding_pairs(tmp_path / "absent")
    assert DING_DOWNLOAD in str(err.value)


def test_bad_files_and_arguments_are_named(tmp_path, ding_file):
    other = tmp_path / "other.txt"
    other.write_text("Go.\tVa !\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="expected Ding dictionary entries"):
        read_ding_pairs(other)
    with pytest.raises(CorpusError, match="too few for 1000 test and 1000 validation"):
        load_ding(ding_file)
    with pytest.raises(ValueError, match="src_lang/tgt_lang: expected 'de' and 'en'"):
        load_ding(ding_file, "de", "fr")
    with pytest.raises(ValueError, match="n_train: expected at most the 28 training pairs"):
        load_ding(_many_pairs_file(tmp_path, 40), tokenizer="word", n_test=5, n_val=7, n_train=29)


def test_bpe_on_ding_data_is_one_joint_vocabulary(tmp_path):
    pytest.importorskip("tokenizers")
    data = load_ding(_many_pairs_file(tmp_path, 40), n_test=5, n_val=7, vocab_size=60)
    src, tgt = data.build_vocabs()
    assert src is tgt and len(src) == 60 and src.tokenizer.name == "bpe"
    assert all(src.decode(src.encode(text)) == text for pair in data.test for text in pair)
