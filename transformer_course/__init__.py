"""transformer-course: the Transformer of Vaswani et al. (2017) in NumPy and PyTorch, built to be taught.

Import what you need from the subpackages: `transformer_course.numpy`, `transformer_course.torch`,
`transformer_course.data`, `transformer_course.training`, `transformer_course.viz`.
Importing this top-level package loads neither torch nor matplotlib.
"""
from .config import ModelConfig, TrainConfig, get_preset, get_train_preset
from .utils import set_seed

__version__ = "0.1.0"
__all__ = ["ModelConfig", "TrainConfig", "get_preset", "get_train_preset", "set_seed", "__version__"]
