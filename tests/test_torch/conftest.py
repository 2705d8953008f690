"""One intra-op thread: these tests use tiny tensors, and on a shared 2-core machine OpenMP threads that wait
for each other make tiny ops 10-20x slower."""
try:
    import torch
except ModuleNotFoundError:  # without PyTorch, tests/conftest.py skips this folder
    pass
else:
    torch.set_num_threads(1)
