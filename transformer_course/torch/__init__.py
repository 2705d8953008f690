"""The PyTorch twin of `transformer_course.numpy`: the same modules, names and shape comments (see
`transformer_course.twins` for what differs, and why), plus fast paths (fused attention, the key/value cache,
the fused loss), beam search, weight conversion and device helpers."""
from .._optional import torch as _torch  # noqa: F401  (without PyTorch: an ImportError naming the extra)
from .attention import KVCache, MultiHeadAttention, scaled_dot_product_attention
from .bahdanau import BahdanauDecoderStep, BahdanauEncoder, BahdanauSeq2Seq
from .convert import numpy_to_torch, torch_to_numpy
from .decoder import Decoder, DecoderCache, DecoderLayer
from .decoding import beam_search, greedy_decode, length_penalty, sample_decode, sampling_probs
from .device import autocast, maybe_compile, needs_grad_scaler, pick_device
from .embedding import Embedding, output_projection
from .encoder import Encoder, EncoderLayer
from .feedforward import FeedForward
from .layernorm import LayerNorm
from .loss import cross_entropy, fast_cross_entropy
from .masks import causal_mask, combine_masks, lengths_to_mask, padding_mask
from .positional import LearnedPositions, RotaryPositions, SinusoidalPositions, alibi_bias, sinusoidal_encoding
from .transformer import Transformer

__all__ = ["KVCache", "MultiHeadAttention", "scaled_dot_product_attention", "BahdanauDecoderStep",
           "BahdanauEncoder", "BahdanauSeq2Seq", "numpy_to_torch", "torch_to_numpy", "Decoder", "DecoderCache",
           "DecoderLayer", "beam_search", "greedy_decode", "length_penalty", "sample_decode", "sampling_probs",
           "autocast", "maybe_compile", "needs_grad_scaler", "pick_device", "Embedding", "output_projection",
           "Encoder", "EncoderLayer", "FeedForward", "LayerNorm", "cross_entropy", "fast_cross_entropy",
           "causal_mask", "combine_masks", "lengths_to_mask", "padding_mask", "LearnedPositions", "RotaryPositions",
           "SinusoidalPositions", "alibi_bias", "sinusoidal_encoding", "Transformer"]
