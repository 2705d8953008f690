"""One process of the 2-process DDP test (run by torchrun from test_train_ddp.py; not a test module itself).

    torchrun --standalone --nproc_per_node 2 tests/test_training/training_ddp_worker.py OUT.pt GLOBAL_BATCH STEPS
"""
import sys

import torch


def run(out: str | None, global_batch: int, steps: int) -> dict:
    from transformer_course.config import get_preset, get_train_preset
    from transformer_course.data.loader import make_dataloader
    from transformer_course.data.tasks import reverse_task
    from transformer_course.torch.transformer import Transformer
    from transformer_course.training.ddp import cleanup_distributed, setup_distributed
    from transformer_course.training.trainer import train
    from transformer_course.utils import set_seed

    torch.set_num_threads(1)
    rank, world_size, device = setup_distributed("cpu")
    try:
        data = reverse_task(n_train=48, n_val=16, n_test=16, min_len=2, max_len=6, alphabet="abcdef", seed=0)
        src_vocab, tgt_vocab = data.build_vocabs()
        set_seed(0)
        model = Transformer(get_preset("tiny").replace(src_vocab_size=len(src_vocab),
                                                       tgt_vocab_size=len(tgt_vocab)))
        per_process = global_batch // world_size
        loader = make_dataloader(data.train, src_vocab, tgt_vocab, batch_size=per_process, seed=0, rank=rank,
                                 world_size=world_size)
        config = get_train_preset("tiny").replace(batch_size=per_process, max_steps=steps, warmup_steps=4,
                                                  device=str(device))
        history = train(model, loader, config, callbacks=[])
        if rank == 0 and out:
            torch.save({"model": model.state_dict(), "loss": history["loss"]}, out)
        return {"model": model.state_dict(), "loss": history["loss"]}
    finally:
        cleanup_distributed()


if __name__ == "__main__":
    run(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
