"""The paper's warm-up schedule through LambdaLR."""
import pytest
import torch

from transformer_course.training.schedule import NoamSchedule, make_scheduler, noam_lr


def test_noam_formula_and_peak():
    d_model, warmup = 512, 4000
    assert noam_lr(1, d_model, warmup) == pytest.approx(512 ** -0.5 * 4000 ** -1.5)
    assert noam_lr(warmup, d_model, warmup) == pytest.approx(512 ** -0.5 * 4000 ** -0.5)
    assert noam_lr(16000, d_model, warmup) == pytest.approx(noam_lr(4000, d_model, warmup) / 2)   # 1/sqrt decay
    lrs = [noam_lr(s, d_model, warmup) for s in range(1, 10000)]
    assert max(lrs) == pytest.approx(NoamSchedule(d_model, warmup).peak_lr)
    assert lrs.index(max(lrs)) + 1 == warmup


def test_lambdalr_follows_the_formula():
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.Adam([p], lr=1.0)
    sched = make_scheduler(opt, d_model=64, warmup=10, factor=2.0)
    for step in range(1, 30):
        assert opt.param_groups[0]["lr"] == pytest.approx(noam_lr(step, 64, 10, 2.0))
        opt.step()
        sched.step()
    state = sched.state_dict()
    assert state["lr_lambdas"][0] == {"d_model": 64, "warmup": 10, "factor": 2.0}


def test_base_lr_must_be_one():
    opt = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=1e-3)
    with pytest.raises(ValueError, match=r"base lr 1.0"):
        make_scheduler(opt, 64, 10)
    with pytest.raises(ValueError, match="warmup"):
        NoamSchedule(64, 0)
    with pytest.raises(ValueError, match="step: expected an int >= 1"):
        noam_lr(0, 64, 10)  # the paper counts steps from 1; step 0 would divide by zero
