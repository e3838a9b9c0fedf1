"""What a config field is, by its name: the tables the shrinker goes by.

Each table is a regular expression matched against the whole field name; `NAMED` lists those
whose fields the shrinker changes, so that a field none of them names can follow a width
(mimi's `upsample_groups` equals its hidden size).
"""

from __future__ import annotations

import re
from typing import Any


def _names(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern.replace(" ", "").replace("\n", ""))


LAYERS = _names(r"""
    num_hidden_layers|num_layers|n_layers?|layers|depth|num_blocks|resampler_depth|
    (encoder|decoder|text|vision|audio|speech|t2u_encoder|t2u_decoder|text_encoder|conf|pred|prompt|
     memory_attention|memory_fuser|mit|perceiver_resampler)_(num_)?(hidden_)?layers|
    num_(encoder|decoder|global|text|vision|audio)_layers|(encoder|decoder)_num_hidden_layers|
    num_self_attends_per_block|num_layers_per_stack""")
WIDTH = _names(r"""
    hidden_size|d_model|n_embd|embed_dim|embedding_size|embedding_dim|hidden_dim|dim|projection_dim|
    d_latents|
    (out|output|text|vision|audio|encoder|decoder|projector|pooler|fpn|cross|cross_attention|
     memory_attention|memory_encoder|image_text|fusion|backbone|perceiver_resampler|pred|mit|
     attention|downsample|mask_downsampler|memory_fuser)_(hidden_)?(size|dim)|
    hidden_size_global|word_embed_proj_dim|classifier_proj_size|pooler_output_size|emb_dim|
    projection_size|text_encoder_width|vit_dim|true_hidden_size|intra_bottleneck_size|lru_width|
    memory_encoder_output_channels|iou_head_hidden_dim|codevector_dim|proj_codevector_dim|output_dim|
    vision_output_dim|image_token_embed_dim|projector_(input|output)_dim|visual_embedding_dim|
    unit_embed_dim|condition_dim|fpn_feature_size|mask_feature_size|image_embedding_size""")
INTERMEDIATE = _names(r"""
    .*intermediate_size.*|.*ffn_dim|d_ff|dim_ff|n_inner|mlp_dim|.*ffn_hidden_size|dim_feedforward|
    .*feedforward_dim|.*intermediate_dim|moe_hidden_size|share_expert_dim|feed_forward_size|
    memory_attention_(feed_forward|mlp)_hidden_size""")
HEADS = _names(r"""
    num_attention_heads|num_heads|n_head|n_heads|attention_heads|
    (encoder|decoder|speech_encoder|t2u_encoder|t2u_decoder|decoder_self|decoder_cross|conf|pred|prompt|
     mit|swa|cross|memory_attention|perceiver_resampler|global)_(num_)?attention_heads|
    (encoder|decoder)_num_attention_heads|resampler_n_heads|index_n_heads|linear_num_heads|
    num_(self|cross|encoder|decoder|sliding)_attention_heads|
    mamba_num_heads|mamba_n_heads|n_mamba_heads""")
KV_HEADS = _names(r"""
    num_key_value_heads|num_kv_heads|n_head_kv|multi_query_group_num|num_key_value_attention_heads|
    (swa|cross|encoder|decoder)_num_key_value_heads""")
HEAD_DIMS = _names(r"""
    head_dim|d_kv|kv_channels|swa_head_dim|cross_head_dim|dim_head|d_head|attention_head_size|
    attention_head_dim|resampler_head_dim|perceiver_resampler_attention_head_dim|linear_head_dim|
    index_head_dim|v_head_dim|qk_head_dim|linear_key_head_dim|linear_value_head_dim|rotary_dim|
    mamba_head_dim|mamba_d_head""")
ROPE_HEAD_DIMS = _names(r"qk_rope_head_dim|qk_nope_head_dim")
LORA_RANKS = _names(r"q_lora_rank|kv_lora_rank|o_lora_rank")
LINEAR_HEADS = _names(r"linear_num_key_heads|linear_num_value_heads")
EXPERTS = _names(r"num_experts|num_local_experts|n_routed_experts|moe_num_experts|num_routed_experts")
EXPERTS_PER_TOKEN = _names(r"""
    num_experts_per_tok|num_experts_per_token|moe_topk|moe_k|router_top_k|num_selected_experts|
    top_k_experts|moe_top_k""")
EXPERT_GROUPS = _names(r"n_group|topk_group|num_expert_group")
VOCAB = _names(r".*vocab_size.*|.*_vocab|num_embeddings|codebook_size")
POSITIONS = _names(r"""
    max_position_embeddings|n_positions|max_2d_position_embeddings|position_embedding_size|
    model_max_length""")
AUDIO_POSITIONS = _names(r"max_source_positions")
FILTERS = _names(r"num_filters|n_filters")
BASE_CHANNELS = _names(r"base_channels")
FRAMES = _names(r"num_frames")
CYCLES = _names(r"[HL]_cycles")  # hrm: passes over the layers, each traced again
TOKEN_ID = _names(r".*(_token_id|_token_index|_token_ids)")
LAYER_INDICES = _names(r"""
    _?out_indices|backbone_out_indices|global_attn_indexes|fullatt_block_indexes|deepstack_visual_indexes|
    full_attn_idxs|moe_layers|rope_scaling_layers|mlp_only_layers|intermediate_hook_ids|extract_layers|
    vision_feature_layers?|feature_layer|insert_layer_id|global_attention_blocks|return_idx|select_layer|
    encode_proj_layers|layers_to_keep|cross_attention_layers""")
STAGE_DEPTHS = _names(r"depths|stage_num_blocks|blocks_per_stage|num_block_repeats|stage_numb_of_layers|depth")
STAGE_WIDTHS = _names(r"""
    hidden_sizes|embed_dims?|embed_dim_per_stage|neck_hidden_sizes|stage_(in|mid|out)_channels|
    (encoder|decoder)_in_channels|in_channels|out_channels|backbone_channel_list|tdnn_dim|conv_dim|
    fine_fusion_dims|intermediate_feature_dims|out_features""")
BASE_WIDTHS = _names(r"encoder_hidden_size|num_filters|n_filters|base_channels|channels|encoder_dim")
RATIOS = _names(r".*(sampling_ratios|sample_rates|ratios|strides)")
COEFFICIENTS = _names(r"width_coefficient|depth_coefficient|width_multiplier|depth_multiplier")
# Counts of layers that must stay below the layer count: shrunk in proportion.
LAYER_FRACTIONS = _names(r"""
    first_k_dense_replace|num_kv_shared_layers|max_window_layers|num_first_full_attention_layers|
    num_last_full_attention_layers|num_dense_layers""")
# Names the tables above would catch but that are not what they seem.
KEEP = {
    "num_feat_extract_layers", "num_adapter_layers", "num_conv_pos_embedding_groups", "num_lstm_layers",
    "num_residual_layers", "iou_head_depth", "num_nextn_predict_layers", "depth_divisor", "conv_dim",
    "num_channels", "in_channels", "out_channels", "num_mel_bins", "channels", "num_labels",
}
NAMED = (LAYERS, WIDTH, INTERMEDIATE, HEADS, KV_HEADS, HEAD_DIMS, ROPE_HEAD_DIMS, LORA_RANKS,
          LINEAR_HEADS, EXPERTS, EXPERTS_PER_TOKEN, EXPERT_GROUPS, VOCAB, POSITIONS, AUDIO_POSITIONS,
          FILTERS, BASE_CHANNELS, FRAMES, CYCLES, TOKEN_ID, LAYER_INDICES, STAGE_DEPTHS, LAYER_FRACTIONS)
PER_LAYER_STRINGS = re.compile(r".*pattern.*")
PER_LAYER_NAMES = _names(r"""
    .*(layer|type|pattern|block).*|(moe_)?intermediate_size|.*_per_layer|sliding_window|attention_window""")
ALWAYS_PASSED = {"rope_parameters", "_out_features", "_out_indices", "attention_types"}  # repaired here, not derived
NOT_PASSED = {"num_labels", "ignore_keys_at_rope_validation", "per_layer_config"}
MIN_MATCHED_WIDTH = 128  # an unnamed field equal to an old width this large follows that width


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
