"""transformer-course: the Transformer of Vaswani et al. (2017) in NumPy and PyTorch, built to be taught.

Import what you need from the subpackages: `transformer_course.numpy`, `transformer_course.torch`,
`transformer_course.data`, `transformer_course.training`, `transformer_course.viz`.
Importing this top-level package loads neither torch, matplotlib nor NumPy.
"""
from .config import ModelConfig, TrainConfig, get_preset, get_train_preset

__version__ = "0.1.0"
__all__ = ["ModelConfig", "TrainConfig", "get_preset", "get_train_preset", "set_seed", "__version__"]


def __getattr__(name: str):
    # set_seed needs NumPy, loaded on first use: `python -m transformer_course doctor` must run on a Python that
    # has nothing installed yet, to say what is missing
    if name == "set_seed":
        from .utils import set_seed
        return set_seed
    raise AttributeError(f"module 'transformer_course' has no attribute {name!r}")
