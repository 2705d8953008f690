"""Shared fixtures: a tiny model on the reverse task, small enough for many CPU runs per second."""
import pytest

from transformer_course.config import get_preset, get_train_preset
from transformer_course.data.tasks import reverse_task
from transformer_course.utils import set_seed

try:
    import torch

    from transformer_course.data.loader import make_dataloader
    from transformer_course.torch.transformer import Transformer
except ModuleNotFoundError:  # without PyTorch, tests/conftest.py skips this folder
    pass


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models gain nothing from threads, and lose a lot to thread contention on a shared machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def toy():
    """(data, src_vocab, tgt_vocab) of a small reverse task."""
    data = reverse_task(n_train=48, n_val=16, n_test=16, min_len=2, max_len=6, alphabet="abcdef", seed=0)
    return (data, *data.build_vocabs())


@pytest.fixture
def make_model(toy):
    _, sv, tv = toy

    def make(seed=0, **overrides):
        set_seed(seed)
        config = get_preset("tiny").replace(src_vocab_size=len(sv), tgt_vocab_size=len(tv), **overrides)
        return Transformer(config)
    return make


@pytest.fixture
def loaders(toy):
    data, sv, tv = toy

    def make(batch_size=8, seed=0):
        return (make_dataloader(data.train, sv, tv, batch_size=batch_size, seed=seed),
                make_dataloader(data.val, sv, tv, batch_size=16, shuffle=False))
    return make


@pytest.fixture
def run(loaders):
    """train(model, config, ...) on the toy loaders, evaluated on the validation loader, no progress bar."""
    from transformer_course.training.evaluate import make_evaluator
    from transformer_course.training.trainer import train

    def run_(model, config, **kwargs):
        train_loader, val_loader = loaders()
        kwargs.setdefault("evaluate_fn", make_evaluator(val_loader, config))
        return train(model, train_loader, config, callbacks=kwargs.pop("callbacks", []), **kwargs)
    return run_


@pytest.fixture
def tiny_config():
    return get_train_preset("tiny").replace(device="cpu", eval_every=5)
