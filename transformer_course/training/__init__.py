"""Training and evaluation of the PyTorch model: schedule, trainer, checkpoints, DDP, metrics.

    from transformer_course.training import train, evaluate, load_pretrained
    model, src_vocab, tgt_vocab = load_pretrained("numbers-en-fr")

Names are loaded on first use, so `transformer_course.training.numpy_trainer` (the NumPy model's trainer)
imports without torch.
"""
from importlib import import_module

_NAMES = {
    "callbacks": ["ProgressBar"],
    "checkpoint": ["average_checkpoints", "export_pretrained", "load_checkpoint", "load_pretrained",
                   "model_from_checkpoint", "save_checkpoint"],
    "evaluate": ["corpus_bleu", "evaluate", "evaluate_pairs", "exact_match", "make_evaluator", "perplexity",
                 "token_accuracy", "translate"],
    "history": ["TrainingDiverged"],
    "run": ["cpu_settings", "finish_run", "prepare_run"],
    "schedule": ["NoamSchedule", "make_scheduler", "noam_lr"],
    "trainer": ["train"],
}
_MODULE_OF = {name: module for module, names in _NAMES.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name):
    if name in _MODULE_OF:
        return getattr(import_module(f".{_MODULE_OF[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
