"""The NumPy and PyTorch twins: the rule that pairs them, and every place where they differ on purpose.

`transformer_course.numpy` and `transformer_course.torch` are written so that a reader can put them side by
side (`display.show_diff`). tests/test_twins.py reads both packages' source and this module, and fails on
any difference that is not listed here with its reason.

The rule
--------
* Modules: the same file names on both sides, except the one-sided modules below.
* Names: a NumPy `name_forward(x, ..., params, ...)` / `name_backward(dout, cache)` pair is the twin of a
  PyTorch function `name` or of a module `Name` (the class name without underscores, any case), whose
  `forward` it is; a module's other public methods are the twins of the NumPy functions of the same name
  (`Transformer.encode` and `encode`). Public names appear in the same order on both sides.
* Arguments: the same names in the same order, once the arguments that exist on one side by nature are
  set aside (`BY_NATURE`), as are the NumPy arguments that the PyTorch twin takes in its constructor (a
  module holds its hyper-parameters: `n_heads`, `norm_first`, `eps`, ...); those hyper-parameters come in
  the same order in the NumPy call and the constructor. Every argument both take has the same default and
  the same annotation (np.ndarray and torch.Tensor count as one type).
* Returns: the same values. A NumPy layer also returns its cache; where that cache holds the attention
  weights (cache["weights"]), the PyTorch twin returns the weights in its place (always, or on request
  with need_weights).
* NumPy convention: every layer is `name_forward(...) -> (out, cache)` / `name_backward(dout, cache)`, built on
  `linear_forward` / `linear_backward`; `init_name` builds its parameters. Softmax, log-softmax and the masked
  softmax return their output alone and their backward takes (dout, output): the output is their cache.

Everything else that differs is listed below, each with its reason. Intended duplicates of helpers (code
that exists twice on purpose) are listed at the end.
"""
from __future__ import annotations

__all__ = ["NUMPY_ONLY_MODULES", "TORCH_ONLY_MODULES", "BY_NATURE", "OUTPUT_IS_CACHE", "NUMPY_ONLY_NAMES",
           "TORCH_ONLY_NAMES", "ARGUMENT_DIFFERENCES", "TYPE_DIFFERENCES", "RETURN_DIFFERENCES",
           "INTENDED_DUPLICATES"]

NUMPY_ONLY_MODULES = {
    "dropout": "PyTorch has nn.Dropout; NumPy needs its own, with an explicit random generator and a backward",
    "functional": "softmax, ReLU, sigmoid, the linear map and their backward passes: torch.nn.functional's",
    "gradcheck": "central differences check the hand-written backward passes; PyTorch's autograd needs none",
    "optim": "Adam and gradient clipping by hand; PyTorch has torch.optim and clip_grad_norm_",
}

TORCH_ONLY_MODULES = {
    "convert": "the one module that knows both weight layouts: it copies weights between the twins",
    "device": "CUDA / MPS / CPU, mixed precision and torch.compile: NumPy runs on the CPU in one precision",
    "toy_tasks": "chapter 7's sorting and repeat-detection models, trained in PyTorch only (the chapter and the "
                 "stored multi-seed runs share them)",
}

BY_NATURE = {  # set aside before the twins are compared, each on its own side only (patterns as in fnmatch)
    "names": {
        "init_*": "NumPy builds parameters with init functions; a PyTorch module in its constructor",
        "*_backward": "backward passes by hand; PyTorch's autograd derives them",
        "reset_parameters": "a PyTorch module's initialisation: NumPy's init functions",
    },
    "numpy_arguments": {
        "params": "NumPy layers are pure functions: the parameters come in as a dict",
        "config": "the NumPy model is params + config; the PyTorch model holds its config",
        "rng": "NumPy randomness is an explicit generator; PyTorch uses its global one",
        "training": "NumPy passes the mode; a PyTorch module knows its own (model.train() / model.eval())",
        "dtype": "NumPy creates arrays of a dtype; PyTorch converts modules and tensors afterwards",
        "*_backward": "the backward functions a NumPy forward needs (autograd finds them in PyTorch)",
    },
    "torch_arguments": {
        "self": "a PyTorch method's module",
        "model": "the PyTorch model replaces NumPy's params and config",
        "device": "where PyTorch creates a tensor",
        "need_weights": "NumPy always computes the attention weights; PyTorch only on request, because its fused "
                        "kernel never forms them",
        "fused": "PyTorch's choice of attention kernel (F.scaled_dot_product_attention or written out); NumPy "
                 "always writes attention out",
        "cache": "the key/value cache of decoding exists only in PyTorch",
        "use_cache": "the key/value cache exists only in PyTorch (decoding without it is the NumPy twin's loop)",
    },
}

OUTPUT_IS_CACHE = {
    "softmax": "its backward needs only its output y: dx = y * (dout - sum(dout * y))",
    "log_softmax": "its backward needs only its output log p: dx = dout - p * sum(dout)",
    "masked_softmax": "the softmax of the unmasked scores; masked weights are 0 and get no gradient",
}

NUMPY_ONLY_NAMES = {
    "attention.self_attention_forward": "x feeds queries, keys and values, so its gradient is the sum of both "
                                        "paths; PyTorch's autograd adds them by itself (MultiHeadAttention(x, x))",
    "bahdanau.gru_cell_forward": "the GRU equations written out; PyTorch's twin is its own nn.GRUCell",
}

TORCH_ONLY_NAMES = {
    "attention.KVCache": "the key/value cache: a fast path of decoding",
    "bahdanau.BahdanauDecoderStep.project_keys": "the fast path: U_a h_j, the same at every step, computed once",
    "bahdanau.BahdanauDecoderStep.forward_cached": "the fast path of training and generation, with project_keys",
    "bahdanau.BahdanauSeq2Seq": "the whole model (embeddings, initial state, output layer, generation) is "
                                "trained in PyTorch only; the NumPy chapter builds and checks its two pieces",
    "decoder.DecoderCache": "the key/value caches of every decoder layer: a fast path of decoding",
    "decoding.length_penalty": "for beam search",
    "decoding.beam_search": "a decoding extra: the NumPy twin has greedy decoding only",
    "decoding.sampling_probs": "the distribution sample_decode draws from (temperature, top-k, top-p)",
    "decoding.sample_decode": "a decoding extra, like beam search: random draws (a torch.Generator) belong to "
                              "generation, which the course runs in PyTorch; the NumPy twin has greedy only",
    "layernorm.LayerNorm": "the module the layers use: F.layer_norm's fused kernel, tested equal to `layernorm`",
    "loss.fast_cross_entropy": "the loss the trainer uses: F.cross_entropy's fused kernel, tested equal to "
                               "`cross_entropy`",
    "transformer.Transformer.new_cache": "an empty key/value cache for decode while generating",
}

ARGUMENT_DIFFERENCES = {  # {pair: ({"numpy": [names], "torch": [names]}, reason)}
    "embedding.output_projection": ({"numpy": ["tied"], "torch": []},
                                    "NumPy stores an untied W_out as (D, V) like all its linear maps and the tied "
                                    "one as E (V, D), so it must know which; in PyTorch both are (V, D)"),
    "layernorm.layernorm": ({"numpy": [], "torch": ["gamma", "beta"]},
                            "the NumPy parameters come as one dict (params = {gamma, beta}); the PyTorch function "
                            "takes the two tensors its LayerNorm module holds"),
    "sublayer.residual": ({"numpy": ["eps"], "torch": []},
                          "the NumPy norm is a dict of arrays; the PyTorch LayerNorm module carries its eps"),
}

TYPE_DIFFERENCES = {  # {pair: reason}: arguments of the same name whose annotations differ
    "sublayer.residual": "NumPy passes the norm's parameters (a dict) and a sublayer that returns (out, cache) for "
                         "its backward; PyTorch passes the LayerNorm module and a sublayer that returns its output",
}

RETURN_DIFFERENCES = {
    "loss.cross_entropy": "NumPy returns a Python float (and its cache); PyTorch a 0-dim tensor that autograd "
                          "differentiates",
    "bahdanau.bahdanau_decoder_step": "the PyTorch step also returns the context c_i and the weights alpha_i, "
                                      "which its output layer and plots read; NumPy keeps both in its cache",
}

INTENDED_DUPLICATES = {  # {path: (what, why)}
    "transformer_course/exercises": (
        "the checkers' reference solutions (softmax, attention, layer norm, greedy decoding, ...)",
        "a learner's answer is compared with an independent reference, and the checkers must not break (or "
        "pass) when the package changes"),
    "transformer_course/torch/loss.py": (
        "cross_entropy and fast_cross_entropy",
        "the first writes the loss out for teaching (the NumPy twin's maths); the second is the fused kernel "
        "training runs; a test keeps them equal"),
    "transformer_course/training/numpy_trainer.py": (
        "train_step and its loop, next to training/trainer.py",
        "the NumPy model's trainer is small on purpose (the chapters read it whole) and has no devices, "
        "precision, checkpoints or DDP"),
    "transformer_course/torch/decoding.py": (
        "the generation loops of greedy_decode and sample_decode",
        "greedy_decode is the NumPy twin's loop, read line for line in chapter 8; sampling adds a distribution and "
        "a random generator, and a shared loop with a callback would hide the twin's loop from the reader"),
    "transformer_course/torch/bahdanau.py": (
        "BahdanauSeq2Seq.generate, a greedy loop next to decoding.greedy_decode; the attention lines of "
        "BahdanauDecoderStep.forward and forward_cached",
        "the RNN decodes one state at a time and returns its attention weights; the Transformer's interface "
        "(encode / decode / a key/value cache) does not fit it. The step's forward reads line for line as its NumPy "
        "twin; forward_cached takes the keys' projection U_a h_j, the same at every step, computed once"),
    "benchmarks/bench_model.py": (
        "a torch.nn.Transformer model and a minimal hand-written key/value decoding loop",
        "the references the benchmark measures the package against"),
}
