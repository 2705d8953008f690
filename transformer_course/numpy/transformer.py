"""The encoder-decoder Transformer of Vaswani et al. (2017) in NumPy: init, encode, decode, forward, backward.

Paper defaults from the ModelConfig: post-LN (`norm_first=True` for pre-LN), sinusoidal positions
(`positional="learned"` for learned ones added to the embeddings, "rope" or "alibi" for a position term inside
every self-attention), the target embedding tied to the output projection
(`tie_output_embedding`; the output layer has no bias in either case). Source and target share one position
table. Parameter keys follow the PyTorch `Transformer`'s submodules, so `torch.convert` maps them one to one:
src_embedding, tgt_embedding, positions (learned only), encoder, decoder, W_out (untied only).
"""
from __future__ import annotations

import numpy as np

from ..config import ModelConfig
from .decoder import decoder_backward, decoder_forward, init_decoder
from .dropout import dropout_backward, dropout_forward
from .embedding import (
    check_tokens,
    embedding_backward,
    embedding_forward,
    init_embedding,
    output_projection_backward,
    output_projection_forward,
)
from .encoder import encoder_backward, encoder_forward, init_encoder
from .functional import xavier_uniform
from .masks import causal_mask, combine_masks, padding_mask
from .positional import (
    check_length,
    init_learned_positions,
    learned_positions_backward,
    learned_positions_forward,
    sinusoidal_positions_backward,
    sinusoidal_positions_forward,
)

__all__ = ["init_transformer", "make_src_mask", "make_tgt_mask", "encode_forward", "encode_backward",
           "decode_forward", "decode_backward", "transformer_forward", "transformer_backward"]


def init_transformer(rng: np.random.Generator, config: ModelConfig, dtype=np.float32) -> dict:
    """Xavier uniform projections, N(0, D^-0.5) embeddings (and learned positions), zero biases, LN gamma=1 beta=0."""
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config: expected a ModelConfig, got {type(config).__name__}")
    c = config
    params = {"src_embedding": init_embedding(rng, c.src_vocab_size, c.d_model, dtype),
              "tgt_embedding": init_embedding(rng, c.tgt_vocab_size, c.d_model, dtype)}
    if c.positional == "learned":
        params["positions"] = init_learned_positions(rng, c.max_len, c.d_model, dtype)
    params["encoder"] = init_encoder(rng, c.n_encoder_layers, c.d_model, c.n_heads, c.d_ff, c.norm_first, dtype)
    params["decoder"] = init_decoder(rng, c.n_decoder_layers, c.d_model, c.n_heads, c.d_ff, c.norm_first, dtype)
    if not c.tie_output_embedding:
        params["W_out"] = xavier_uniform(rng, c.d_model, c.tgt_vocab_size, dtype)  # (D, V_tgt)
    return params


def _check_params(params: dict, config: ModelConfig) -> None:
    """The parameter tree must be the one this config builds (positions and W_out depend on flags)."""
    if (config.positional == "learned") != ("positions" in params):
        needs = "needs" if config.positional == "learned" else "has no"
        raise ValueError(f"params: positional={config.positional!r} {needs} 'positions'; got keys {sorted(params)}")
    if config.tie_output_embedding == ("W_out" in params):
        raise ValueError(f"params: tie_output_embedding={config.tie_output_embedding} "
                         f"{'has no' if config.tie_output_embedding else 'needs a'} 'W_out'; got keys {sorted(params)}")


def make_src_mask(src: np.ndarray, config: ModelConfig) -> np.ndarray:
    """(B, 1, S): every query may attend to every real source token."""
    return padding_mask(src, config.pad_id)              # (B, 1, S)


def make_tgt_mask(tgt_in: np.ndarray, config: ModelConfig) -> np.ndarray:
    """(B, T, T): causal AND not padding."""
    T = tgt_in.shape[1]
    return combine_masks(causal_mask(T), padding_mask(tgt_in, config.pad_id))  # (B, T, T)


def _positions_forward(x: np.ndarray, params: dict, config: ModelConfig, offset: int = 0):
    if config.positional == "learned":
        return learned_positions_forward(x, params["positions"], offset)  # (B, T, D)
    if config.positional == "sinusoidal":
        return sinusoidal_positions_forward(x, config.max_len, offset)  # (B, T, D)
    check_length(x, offset, config.max_len)              # rope / alibi: nothing added here, same length limit
    return x, None


def _positions_backward(dout: np.ndarray, cache, config: ModelConfig):
    if config.positional == "learned":
        return learned_positions_backward(dout, cache)   # (B, T, D), {"P": dP}
    return sinusoidal_positions_backward(dout, cache), None  # (B, T, D), no parameters (rope / alibi: none here)


# ---------------------------------------------------------------- the two halves

def _stack_settings(config: ModelConfig, rng: np.random.Generator | None, training: bool) -> dict:
    """The keyword arguments an encoder or decoder stack takes from the config (by keyword: seven settings, two
    of them dropouts, are easy to swap unnoticed in a row)."""
    return dict(dropout=config.dropout, attention_dropout=config.attention_dropout, norm_first=config.norm_first,
                eps=config.layer_norm_eps, rng=rng, training=training, positional=config.attention_positional)


def encode_forward(src: np.ndarray, params: dict, config: ModelConfig, src_mask: np.ndarray | None = None,
                   rng: np.random.Generator | None = None, training: bool = False) -> tuple[np.ndarray, dict]:
    """src (B, S) -> (memory (B, S, D), cache); cache["weights"] is [(B, H, S, S) per encoder layer]."""
    c = config
    check_tokens(src, c.src_vocab_size, "src")
    if src_mask is None:
        src_mask = make_src_mask(src, c)                 # (B, 1, S)
    x, emb_cache = embedding_forward(src, params["src_embedding"], name="src")  # (B, S) -> (B, S, D)
    x, pos_cache = _positions_forward(x, params, c)      # (B, S, D)
    x, drop_cache = dropout_forward(x, c.dropout, rng, training)  # (B, S, D)
    settings = _stack_settings(c, rng, training)
    memory, enc_cache = encoder_forward(x, params["encoder"], c.n_heads, src_mask, **settings)  # (B, S, D)
    cache = {"config": c, "emb": emb_cache, "pos": pos_cache, "drop": drop_cache, "encoder": enc_cache,
             "weights": enc_cache["weights"]}
    return memory, cache


def encode_backward(dmemory: np.ndarray, cache: dict) -> dict:
    """Returns the gradients of src_embedding, positions (learned only) and encoder."""
    c = cache["config"]
    dx, denc = encoder_backward(dmemory, cache["encoder"])  # (B, S, D)
    dx = dropout_backward(dx, cache["drop"])             # (B, S, D)
    dx, dpos = _positions_backward(dx, cache["pos"], c)  # (B, S, D)
    _, demb = embedding_backward(dx, cache["emb"])
    grads = {"src_embedding": demb, "encoder": denc}
    if dpos is not None:
        grads["positions"] = dpos
    return grads


def decode_forward(tgt_in: np.ndarray, memory: np.ndarray, params: dict, config: ModelConfig,
                   src_mask: np.ndarray | None = None, tgt_mask: np.ndarray | None = None,
                   rng: np.random.Generator | None = None, training: bool = False) -> tuple[np.ndarray, dict]:
    """tgt_in (B, T), memory (B, S, D) -> (logits (B, T, V_tgt), cache).

    src_mask must be given when the source had padding (encode_forward's default is `make_src_mask(src, config)`).
    cache["weights"] = {"self": [(B, H, T, T)], "cross": [(B, H, T, S)]}.
    """
    c = config
    check_tokens(tgt_in, c.tgt_vocab_size, "tgt_in")
    B, T = tgt_in.shape
    if not isinstance(memory, np.ndarray) or memory.ndim != 3 or memory.shape[0] != B or memory.shape[2] != c.d_model:
        raise ValueError(f"memory: expected shape (B={B}, S, d_model={c.d_model}), "
                         f"got {getattr(memory, 'shape', type(memory).__name__)}")
    if tgt_mask is None:
        tgt_mask = make_tgt_mask(tgt_in, c)              # (B, T, T)
    y, emb_cache = embedding_forward(tgt_in, params["tgt_embedding"], name="tgt_in")  # (B, T) -> (B, T, D)
    y, pos_cache = _positions_forward(y, params, c)      # (B, T, D)
    y, drop_cache = dropout_forward(y, c.dropout, rng, training)  # (B, T, D)
    settings = _stack_settings(c, rng, training)
    y, dec_cache = decoder_forward(y, memory, params["decoder"], c.n_heads, tgt_mask, src_mask, **settings)  # (B, T, D)
    tied = c.tie_output_embedding
    W = params["tgt_embedding"]["E"] if tied else params["W_out"]  # (V, D) tied, (D, V) untied
    logits, out_cache = output_projection_forward(y, W, tied)  # (B, T, D) -> (B, T, V)
    cache = {"config": c, "emb": emb_cache, "pos": pos_cache, "drop": drop_cache, "decoder": dec_cache,
             "out": out_cache, "weights": dec_cache["weights"]}
    return logits, cache


def decode_backward(dlogits: np.ndarray, cache: dict) -> tuple[np.ndarray, dict]:
    """Returns (dmemory (B, S, D), grads of tgt_embedding, positions (learned only), decoder, W_out (untied))."""
    c = cache["config"]
    dy, dout_proj = output_projection_backward(dlogits, cache["out"])  # (B, T, D)
    (dy, dmemory), ddec = decoder_backward(dy, cache["decoder"])  # (B, T, D), (B, S, D)
    dy = dropout_backward(dy, cache["drop"])             # (B, T, D)
    dy, dpos = _positions_backward(dy, cache["pos"], c)  # (B, T, D)
    _, demb = embedding_backward(dy, cache["emb"])
    grads = {"tgt_embedding": demb, "decoder": ddec}
    if c.tie_output_embedding:
        demb["E"] += dout_proj["W"]                      # E was used twice: lookup and output projection
    else:
        grads["W_out"] = dout_proj["W"]                  # (D, V)
    if dpos is not None:
        grads["positions"] = dpos
    return dmemory, grads


# ---------------------------------------------------------------- the whole model

def transformer_forward(src: np.ndarray, tgt_in: np.ndarray, params: dict, config: ModelConfig,
                        src_mask: np.ndarray | None = None, tgt_mask: np.ndarray | None = None,
                        rng: np.random.Generator | None = None,
                        training: bool = False) -> tuple[np.ndarray, dict]:
    """src (B, S), tgt_in (B, T) -> (logits (B, T, V_tgt), cache). Masks are built from pad_id when None.

    cache["weights"] = {"encoder": [(B, H, S, S)], "decoder_self": [(B, H, T, T)], "decoder_cross": [(B, H, T, S)]}.
    Dropout is active only with training=True, and then needs `rng`.
    """
    _check_params(params, config)
    check_tokens(src, config.src_vocab_size, "src")
    check_tokens(tgt_in, config.tgt_vocab_size, "tgt_in")
    if src.shape[0] != tgt_in.shape[0]:
        raise ValueError(f"tgt_in: expected batch size {src.shape[0]} (as src), got {tgt_in.shape[0]}")
    if src_mask is None:
        src_mask = make_src_mask(src, config)            # (B, 1, S)
    memory, enc_cache = encode_forward(src, params, config, src_mask, rng, training)  # (B, S, D)
    logits, dec_cache = decode_forward(tgt_in, memory, params, config, src_mask, tgt_mask, rng, training)  # (B, T, V)
    weights = {"encoder": enc_cache["weights"], "decoder_self": dec_cache["weights"]["self"],
               "decoder_cross": dec_cache["weights"]["cross"]}
    return logits, {"encode": enc_cache, "decode": dec_cache, "params": params, "weights": weights}


def transformer_backward(dlogits: np.ndarray, cache: dict) -> dict:
    """dlogits (B, T, V) -> grads with the same nesting and key order as the params."""
    dmemory, dec_grads = decode_backward(dlogits, cache["decode"])  # (B, S, D)
    enc_grads = encode_backward(dmemory, cache["encode"])
    if "positions" in enc_grads:
        dec_grads["positions"]["P"] += enc_grads["positions"]["P"]  # one table serves source and target
    merged = {**enc_grads, **dec_grads}
    return {key: merged[key] for key in cache["params"]}
