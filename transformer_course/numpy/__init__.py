"""The Transformer in NumPy: every layer as a pair of pure functions with a hand-written backward pass.

    out, cache = <layer>_forward(x, params, ...)      # params: nested dicts of arrays
    dx, grads = <layer>_backward(dout, cache)          # grads: the same nesting as params

Parameter-free layers (ReLU, dropout, the score functions without weights) return dx alone; softmax,
log-softmax and the masked softmax return their output, which is all their backward needs. Every learned
projection goes through `linear_forward` / `linear_backward`. Randomness comes in as an explicit
np.random.Generator; init functions take it and a dtype (float32 by default; float64 for gradient checks).
Masks are boolean, True = may attend. Each module has a PyTorch twin of the same name in
`transformer_course.torch` (see `transformer_course.twins` for what differs, and why).
"""
from .attention import (
    additive_scores_backward,
    additive_scores_forward,
    attention_pooling_backward,
    attention_pooling_forward,
    cosine_scores_backward,
    cosine_scores_forward,
    dot_scores_backward,
    dot_scores_forward,
    general_scores_backward,
    general_scores_forward,
    init_additive_scores,
    init_general_scores,
    init_location_scores,
    init_multi_head_attention,
    location_scores_backward,
    location_scores_forward,
    masked_softmax,
    masked_softmax_backward,
    multi_head_attention_backward,
    multi_head_attention_forward,
    scaled_dot_product_attention_backward,
    scaled_dot_product_attention_forward,
    scaled_dot_scores_backward,
    scaled_dot_scores_forward,
    self_attention_backward,
    self_attention_forward,
)
from .bahdanau import (
    bahdanau_decoder_step_backward,
    bahdanau_decoder_step_forward,
    bahdanau_encoder_backward,
    bahdanau_encoder_forward,
    gru_cell_backward,
    gru_cell_forward,
    init_bahdanau_decoder_step,
    init_bahdanau_encoder,
    init_gru_cell,
)
from .decoder import (
    decoder_backward,
    decoder_forward,
    decoder_layer_backward,
    decoder_layer_forward,
    init_decoder,
    init_decoder_layer,
)
from .decoding import greedy_decode
from .dropout import dropout_backward, dropout_forward
from .embedding import (
    check_tokens,
    embedding_backward,
    embedding_forward,
    init_embedding,
    output_projection_backward,
    output_projection_forward,
)
from .encoder import (
    encoder_backward,
    encoder_forward,
    encoder_layer_backward,
    encoder_layer_forward,
    init_encoder,
    init_encoder_layer,
)
from .feedforward import feedforward_backward, feedforward_forward, init_feedforward
from .functional import (
    linear_backward,
    linear_forward,
    log_softmax,
    log_softmax_backward,
    relu_backward,
    relu_forward,
    sigmoid,
    softmax,
    softmax_backward,
    tree_leaves,
    tree_map,
    tree_zeros_like,
    xavier_uniform,
)
from .gradcheck import gradcheck, numerical_gradient, relative_error
from .layernorm import init_layernorm, layernorm_backward, layernorm_forward
from .loss import cross_entropy_backward, cross_entropy_forward
from .masks import causal_mask, check_mask, combine_masks, lengths_to_mask, padding_mask
from .optim import Adam, clip_grad_norm, global_norm, noam_lr
from .positional import (
    init_learned_positions,
    learned_positions_backward,
    learned_positions_forward,
    sinusoidal_encoding,
    sinusoidal_positions_backward,
    sinusoidal_positions_forward,
)
from .sublayer import residual_backward, residual_forward
from .transformer import (
    decode_backward,
    decode_forward,
    encode_backward,
    encode_forward,
    init_transformer,
    make_src_mask,
    make_tgt_mask,
    transformer_backward,
    transformer_forward,
)

__all__ = [name for name in dir() if not name.startswith("_") and name not in {
    "attention", "bahdanau", "decoder", "decoding", "dropout", "embedding", "encoder", "feedforward", "functional",
    "gradcheck", "layernorm", "loss", "masks", "optim", "positional", "sublayer", "transformer"}]
