"""Multi-GPU (or multi-process CPU) training with DistributedDataParallel, launched by `torchrun`.

    torchrun --standalone --nproc_per_node 4 -m transformer_course train --task numbers --preset gpu ...

torchrun starts one process per GPU and sets RANK, LOCAL_RANK and WORLD_SIZE; `setup_distributed` reads
them and joins the process group (NCCL on CUDA, gloo on CPU). Each process then builds its loader with
`make_dataloader(..., rank=rank, world_size=world_size)` and calls `train`, which wraps the model in
DistributedDataParallel: gradients are averaged across processes during `backward`, so every process
takes the same optimiser step. With `batch_size` sequences per process the global batch is
batch_size * world_size; the result equals one process training on the global batch (tested on CPU with
gloo and two processes).
"""
from __future__ import annotations

import os

from .._optional import torch  # without PyTorch: an ImportError that names the extra to install

dist = torch.distributed  # (imported by `import torch`; a bare `import torch.distributed` would bypass _optional)

__all__ = ["launched_by_torchrun", "setup_distributed", "cleanup_distributed"]


def launched_by_torchrun() -> bool:
    """True when the environment says this process is one of several started by torchrun."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def setup_distributed(device: str = "auto", backend: str | None = None) -> tuple[int, int, torch.device]:
    """Join the process group described by torchrun's environment; return (rank, world_size, device).

    On CUDA each process uses GPU LOCAL_RANK and the NCCL backend; otherwise the CPU and gloo.
    Without torchrun (WORLD_SIZE unset or 1) nothing is initialised and (0, 1, device) is returned.
    """
    from ..torch.device import pick_device
    if not launched_by_torchrun():
        return 0, 1, pick_device(device)
    for name in ("RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        if name not in os.environ:
            raise RuntimeError(f"{name}: expected torchrun's environment variable, got none; launch with "
                               "`torchrun --nproc_per_node N -m transformer_course train ...`")
    rank, world_size, local_rank = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ["LOCAL_RANK"])
    chosen = pick_device(device)
    if chosen.type == "cuda":
        chosen = torch.device("cuda", local_rank)
        torch.cuda.set_device(chosen)
    backend = backend or ("nccl" if chosen.type == "cuda" else "gloo")
    if not dist.is_initialized():
        dist.init_process_group(backend=backend, rank=rank, world_size=world_size)
    return rank, world_size, chosen


def cleanup_distributed() -> None:
    """Leave the process group (call once at the end of a torchrun process)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


