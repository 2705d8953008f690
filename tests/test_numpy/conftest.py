"""One intra-op thread for torch (used here only as a reference): the tensors are tiny, and on a shared 2-core
machine threads that wait for each other make tiny ops much slower."""
try:
    import torch
except ImportError:  # the NumPy tests that need torch skip themselves
    pass
else:
    torch.set_num_threads(1)
