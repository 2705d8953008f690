"""Helpers shared by the training tests (imported by name: pytest puts this folder on sys.path)."""
import torch


def params_equal(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
