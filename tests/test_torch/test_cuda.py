"""The CUDA paths: the same model on a GPU computes what it computes on the CPU, trains in bf16, decodes the same
tokens, and the shipped models translate there as they do here. Every test needs a CUDA device and is skipped
without one (CI has none); run them on a GPU machine with `pytest tests/test_torch/test_cuda.py`."""
from __future__ import annotations

import copy

import pytest
import torch
from torch_helpers import SMALL, random_batch, trained_model, with_kernel

from transformer_course.config import get_preset
from transformer_course.torch.decoding import beam_search, greedy_decode
from transformer_course.torch.device import autocast
from transformer_course.torch.loss import cross_entropy
from transformer_course.torch.transformer import Transformer

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture(autouse=True)
def _exact_float32():
    """TF32 matmuls would round to 10 mantissa bits on purpose: the parity tests compare full float32."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _course_model(fused: bool, seed: int = 0) -> Transformer:
    """The `course` preset (the size chapters 9 and 10 train) with random weights, in training mode without
    dropout so that both devices compute the same function."""
    torch.manual_seed(seed)
    return Transformer(get_preset("course").replace(src_vocab_size=300, tgt_vocab_size=200, dropout=0.0,
                                                    fused_attention=fused)).train()


@pytest.mark.parametrize("fused", [True, False], ids=["fused kernel", "attention written out"])
def test_forward_and_backward_match_the_cpu(fused):
    cpu = _course_model(fused)
    gpu = _course_model(fused).cuda()
    gpu.load_state_dict(cpu.state_dict())
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, 300, (8, 21), generator=g)    # (B, S)
    tgt = torch.randint(4, 200, (8, 17), generator=g)    # (B, T)
    src[3, 15:] = 0                                      # padding on both sides: the masks travel too
    tgt[5, 10:] = 0
    losses = {}
    for name, model in (("cpu", cpu), ("cuda", gpu)):
        device = next(model.parameters()).device
        logits = model(src.to(device), tgt.to(device))   # (B, T, V)
        loss = cross_entropy(logits, tgt.to(device), pad_id=0, label_smoothing=0.1)
        loss.backward()
        losses[name] = (logits.detach().cpu(), loss.item())
    torch.testing.assert_close(losses["cuda"][0], losses["cpu"][0], rtol=1e-4, atol=1e-4)
    assert abs(losses["cuda"][1] - losses["cpu"][1]) < 1e-5
    for (name, p_cpu), p_gpu in zip(cpu.named_parameters(), gpu.parameters()):
        torch.testing.assert_close(p_gpu.grad.cpu(), p_cpu.grad, rtol=1e-3, atol=1e-5, msg=name)


def test_the_fused_kernel_and_written_out_attention_agree_on_the_gpu():
    model = trained_model()                              # cached and shared: copied, never moved
    src, tgt = (t.cuda() for t in random_batch())
    with torch.no_grad():
        fused = with_kernel(model, fused=True).cuda()(src, tgt)
        plain = with_kernel(model, fused=False).cuda()(src, tgt)
    torch.testing.assert_close(fused, plain, rtol=1e-4, atol=1e-5)


def test_bf16_autocast_trains_on_the_gpu():
    """A few Adam steps under bf16 autocast: logits in bf16, the loss in float32, and the loss falls."""
    torch.manual_seed(0)
    model = Transformer(SMALL.replace(d_model=32, n_heads=4, d_ff=64)).cuda().train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, betas=(0.9, 0.98), eps=1e-9)
    src, tgt = (t.cuda() for t in random_batch(B=16))
    losses = []
    for _ in range(30):
        with autocast("cuda", "bf16"):
            logits = model(src, tgt)                     # (B, T, V)
            loss = cross_entropy(logits, tgt, pad_id=0)
        assert logits.dtype == torch.bfloat16 and loss.dtype == torch.float32
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.parametrize("search", ["greedy", "beam"])
def test_decoding_on_the_gpu_writes_the_cpu_tokens(search):
    model = copy.deepcopy(trained_model())               # the cached one is shared with other tests
    src, _ = random_batch(S=6, seed=3)
    decode = greedy_decode if search == "greedy" else (lambda m, s: beam_search(m, s, beam_size=3))
    with torch.no_grad():
        on_cpu = decode(model, src)
        on_gpu = decode(model.cuda(), src.cuda()).cpu()
    assert torch.equal(on_gpu, on_cpu)


def test_the_shipped_models_translate_on_the_gpu_as_on_the_cpu():
    from transformer_course.data.tasks import EVERYDAY_NUMBERS, number_to_words
    from transformer_course.training.checkpoint import load_pretrained, pretrained_names
    from transformer_course.training.evaluate import translate

    sentences = {"numbers-en-fr": [number_to_words(n, "en") for n in EVERYDAY_NUMBERS],
                 "numbers-en-de": [number_to_words(n, "en") for n in EVERYDAY_NUMBERS],
                 "multi30k-de-en": ["Ein Hund rennt über eine grüne Wiese.", "Zwei Kinder spielen am Strand.",
                                    "Eine Frau mit einem roten Hut liest ein Buch."]}
    assert set(pretrained_names()) == set(sentences)
    for name, batch in sentences.items():
        outputs = {}
        for device in ("cpu", "cuda"):
            model, src_vocab, tgt_vocab = load_pretrained(name, device=device)
            assert next(model.parameters()).device.type == device
            outputs[device] = translate(model, batch, src_vocab, tgt_vocab)
        assert outputs["cuda"] == outputs["cpu"], name


def test_the_command_line_trains_on_the_gpu_in_bf16(tmp_path, capsys):
    from transformer_course.__main__ import main

    out = tmp_path / "run"
    assert main(["train", "--task", "numbers", "--device", "cuda", "--precision", "bf16", "--max-steps", "60",
                 "--no-progress", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "device cuda" in printed and (out / "model.pt").is_file()
