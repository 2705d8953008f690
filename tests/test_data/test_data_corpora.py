"""Corpus loaders on small local files; download-with-checksum through file:// URLs (no network)."""
import gzip
import hashlib
from pathlib import Path

import pytest

from transformer_course.data import corpora
from transformer_course.data.corpora import (
    CorpusError,
    download,
    load_multi30k,
    load_tsv_corpus,
    read_tsv_pairs,
    split_pairs,
)

SAMPLE = Path(corpora.__file__).parent / "files" / "sample_en_fr.tsv"


def test_shipped_sample_tsv():
    pairs = read_tsv_pairs(SAMPLE)
    assert len(pairs) == 20 and pairs[0] == ("Go.", "Va !")
    data = load_tsv_corpus(SAMPLE, n_val=3, n_test=3, seed=0)
    test_sources = {s for s, _ in data.test}
    assert not test_sources & {s for s, _ in data.train}     # "Go." (two translations) stays in one split
    assert len(data.train) + len(data.val) + len(data.test) == 20


def test_empty_file(tmp_path):
    path = tmp_path / "empty.tsv"
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="empty"):
        read_tsv_pairs(path)


def test_malformed_line_reports_line_number(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("Hi.\tSalut.\nOops no tab here\nBye.\tAu revoir.\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"bad\.tsv:2: expected at least 2 tab-separated columns"):
        read_tsv_pairs(path)
    path.write_text("Hi.\tSalut.\nBye.\tAu revoir.\nEmpty.\t \n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r":3: empty target"):
        read_tsv_pairs(path)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no corpus file"):
        read_tsv_pairs(tmp_path / "nope.tsv")


def test_split_pairs_errors_when_too_small():
    with pytest.raises(ValueError, match="n_val"):
        split_pairs([("a", "b"), ("c", "d")], n_val=1, n_test=1)


def _write_multi30k(root: Path, gz: bool):
    root.mkdir()
    names = {"train": "train", "val": "val", "test": "test_2016_flickr"}
    for split, stem in names.items():
        for lang, lines in (("en", ["A dog runs.", "Two men talk."]),
                            ("de", ["Ein Hund rennt.", "Zwei Männer reden."])):
            text = "\n".join(f"{line} ({split})" for line in lines) + "\n"
            if gz:
                with gzip.open(root / f"{stem}.{lang}.gz", "wt", encoding="utf-8") as f:
                    f.write(text)
            else:
                (root / f"{stem}.{lang}").write_text(text, encoding="utf-8")


@pytest.mark.parametrize("gz", [False, True])
def test_multi30k_local_files(tmp_path, gz):
    _write_multi30k(tmp_path / "m30k", gz)
    data = load_multi30k(tmp_path / "m30k", "en", "de")
    assert data.train[0] == ("A dog runs. (train)", "Ein Hund rennt. (train)")
    assert len(data.val) == len(data.test) == 2


def test_multi30k_misaligned_and_missing(tmp_path):
    _write_multi30k(tmp_path / "m30k", gz=False)
    (tmp_path / "m30k" / "val.de").write_text("only one line\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="line-aligned"):
        load_multi30k(tmp_path / "m30k")
    with pytest.raises(FileNotFoundError, match="download_missing"):
        load_multi30k(tmp_path / "elsewhere")


def test_multi30k_downloads_missing_files(tmp_path, monkeypatch):
    source = tmp_path / "server"
    _write_multi30k(source, gz=True)
    urls = {split: source.as_uri() + "/" + url.rsplit("/", 1)[1] for split, url in corpora.MULTI30K_URLS.items()}
    monkeypatch.setattr(corpora, "MULTI30K_URLS", urls)
    data = load_multi30k(tmp_path / "cache", download_missing=True)
    assert len(data.train) == 2 and (tmp_path / "cache" / "train.en.gz").exists()


def test_download_checks_sha256(tmp_path):
    src = tmp_path / "corpus.tsv"
    src.write_bytes(b"Hi.\tSalut.\n")
    good = hashlib.sha256(src.read_bytes()).hexdigest()
    dest = download(src.as_uri(), tmp_path / "out" / "corpus.tsv", sha256=good)
    assert dest.read_bytes() == src.read_bytes()
    with pytest.raises(CorpusError, match="sha256"):
        download(src.as_uri(), tmp_path / "out2" / "corpus.tsv", sha256="0" * 64)
    assert not any((tmp_path / "out2").iterdir())        # nothing half-written is left behind


def test_the_loaders_default_to_the_tokenization_the_command_line_trains_with(tmp_path):
    """A notebook calling load_multi30k or load_ding without tokenizer arguments gets the data `transformer-course
    train --task multi30k | trans-de-en` builds: the same tokenizer and vocabulary size."""
    from transformer_course.__main__ import _data_args, build_parser
    from transformer_course.data.ding import load_ding

    _write_multi30k(tmp_path / "m30k", gz=False)
    ding = tmp_path / "de-en"
    ding.write_text("\n".join(f"Der Hund {i} läuft. :: The dog {i} runs." for i in range(40)) + "\n", encoding="utf-8")
    for task, data in (("multi30k", load_multi30k(tmp_path / "m30k", "de", "en")),
                       ("trans-de-en", load_ding(ding, "de", "en", n_test=5, n_val=5))):
        corpus = tmp_path / "m30k" if task == "multi30k" else ding
        args = build_parser().parse_args(["train", "--task", task, "--corpus", str(corpus), "--out",
                                          str(tmp_path / "run")])
        spec = _data_args(args)
        assert (data.src_tokenizer, data.tgt_tokenizer, data.vocab_size) == \
            (spec["tokenizer"], spec["tokenizer"], spec["vocab_size"]), task


def test_task_spec_fills_in_each_tasks_defaults_and_names_the_argument_it_refuses():
    from transformer_course.config import TOKENIZATION
    from transformer_course.data.spec import load_task, task_spec
    from transformer_course.data.tasks import SPLIT_VERSIONS

    numbers = task_spec("numbers")
    assert (numbers["src_lang"], numbers["tgt_lang"], numbers["split"]) == ("en", "fr", SPLIT_VERSIONS[-1])
    assert task_spec("numbers", tgt_lang="en")["src_lang"] == "fr"    # the default source never equals the target
    ding = task_spec("trans-de-en", tgt_lang="de")
    assert (ding["src_lang"], ding["tokenizer"], ding["vocab_size"]) == \
        ("en", "bpe", TOKENIZATION["trans-de-en"]["vocab_size"])
    for kwargs, culprit in ((dict(task="sentiment"), "task:"), (dict(task="trans-de-en", src_lang="fr"), "src_lang"),
                            (dict(task="numbers", src_lang="de", tgt_lang="de"), "src_lang/tgt_lang"),
                            (dict(task="tsv", tokenizer="bpe"), "vocab_size:")):
        with pytest.raises(ValueError, match=culprit):
            task_spec(**kwargs)
    reverse = load_task(task_spec("reverse", max_len=4, n_train=30, n_val=5, n_test=5))
    assert (len(reverse.train), len(reverse.val), len(reverse.test)) == (30, 5, 5)
    assert all(target == source[::-1] for source, target in reverse.train)
