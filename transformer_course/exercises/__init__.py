"""Automatic checks for the book's coding exercises: `check_*` functions give specific, kind feedback.

Each chapter's checks live in their own module (named after the chapter's topic) and are re-exported here,
so `from transformer_course.exercises import check_masked_softmax` works. A check prints "✔ Correct: ..."
when an answer is right, "not attempted yet" for an untouched stub, and raises `ExerciseError` (an
AssertionError) with a hint naming the axis, the place or the likely mistake otherwise.
"""
from ._feedback import ExerciseError
from .attention_history import check_layer_complexity, check_rnn_encoder
from .backprop import (
    check_attention_backward,
    check_embedding_backward,
    check_encoder_layer_backward,
    check_label_smoothing_backward,
    check_layernorm_backward,
    check_linear_backward,
    check_merge_heads_backward,
    check_softmax_backward,
    check_softmax_walk,
)
from .bahdanau import check_additive_attention
from .decoder import check_beam_score, check_greedy_decode, check_top_p_filter
from .encoder import check_encoder_layer, check_feed_forward, check_layer_norm, check_residual
from .general_attention import check_masked_softmax, check_scaled_dot_product_attention
from .multi_head import check_merge_heads, check_multi_head_attention, check_multi_head_loop, check_split_heads
from .positional import check_shift_matrix, check_sinusoidal_encoding
from .real_sentences import check_sentence_chrf
from .rope import check_rope
from .self_attention import check_causal_head, check_causal_mask, check_self_attention
from .training import check_label_smoothing_targets, check_noam_lr

__all__ = ["ExerciseError", "check_rnn_encoder", "check_layer_complexity", "check_additive_attention",
           "check_masked_softmax", "check_scaled_dot_product_attention", "check_self_attention",
           "check_causal_mask", "check_causal_head", "check_multi_head_loop", "check_split_heads", "check_merge_heads",
           "check_multi_head_attention",
           "check_sinusoidal_encoding", "check_shift_matrix", "check_rope", "check_layer_norm", "check_feed_forward",
           "check_residual", "check_encoder_layer",
           "check_greedy_decode", "check_beam_score", "check_top_p_filter",
           "check_softmax_walk", "check_linear_backward", "check_embedding_backward",
           "check_encoder_layer_backward",
           "check_softmax_backward", "check_layernorm_backward", "check_attention_backward",
           "check_label_smoothing_backward", "check_merge_heads_backward",
           "check_noam_lr", "check_label_smoothing_targets", "check_sentence_chrf"]
