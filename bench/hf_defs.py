"""Tiny random-init Hugging Face `transformers` models, one nn.Module class per architecture (and per
attention implementation where eager and sdpa differ), for bench/hf_models.py.

Runs under the torch Python only, and needs `transformers` there (not a dependency of the workbench:
`pip install transformers` into the torch Python). Each class builds its model from a small config
(2 layers, hidden 64, vocab 1000; no weights downloaded), in eval mode with use_cache=False, and
returns the main output tensor(s). MODELS maps a class name to its input specs (import's syntax).
"""
from __future__ import annotations

import os

import torch
import torch.nn as nn
import transformers as tf

#: LH_HF_SIZE=bench: the text and ViT-like models at a larger size (4 layers, hidden 256, 128 tokens, 64x64 images)
BENCH = os.environ.get("LH_HF_SIZE") == "bench"
V, H, L, NH, FF = (1000, 256, 4, 4, 1024) if BENCH else (1000, 64, 2, 4, 128)
P = 256 if BENCH else 64                             # max positions
T = 128 if BENCH else 16                             # tokens per sequence
S = 64 if BENCH else 32                              # image side
TOK = f"2x{T}xi64[0:1000]"
IMG = f"1x3x{S}x{S}xf32"

MODELS: dict[str, str] = {}


def _text_cfg(cls, **kw):
    return cls(vocab_size=V, hidden_size=H, num_hidden_layers=L, num_attention_heads=NH, intermediate_size=FF,
               max_position_embeddings=P, **kw)


def _decoder_cfg(cls, **kw):
    base = dict(vocab_size=V, hidden_size=H, num_hidden_layers=L, num_attention_heads=NH, intermediate_size=FF,
                max_position_embeddings=P, use_cache=False)
    base.update(kw)
    return cls(**base)


class _HF(nn.Module):
    """`build()`'s model called on the inputs; outputs[:n_out] (tuple outputs, return_dict=False)."""

    n_out = 1
    attn = "eager"
    reinit = False          # torch's default init of every layer (HF's vanishes through MobileViT: zero outputs)
    arg_names: tuple = ()   # the inputs passed by keyword (input_ids, attention_mask, ...)

    def __init__(self):
        super().__init__()
        cfg_or_model = self.build()
        if isinstance(cfg_or_model, nn.Module):
            self.m = cfg_or_model
        else:
            cfg_or_model._attn_implementation = self.attn
            self.m = self.model_class(cfg_or_model)
        if self.reinit:
            for layer in self.m.modules():
                if hasattr(layer, "reset_parameters"):
                    layer.reset_parameters()
        self.m.eval()

    def forward(self, *xs):
        named = dict(zip(self.arg_names, xs))
        out = self.m(*xs[len(named):], return_dict=False, **named, **self.call_kwargs())
        if isinstance(out, torch.Tensor):
            return out
        outs = tuple(o for o in out[: self.n_out])
        return outs[0] if len(outs) == 1 else outs

    def call_kwargs(self):
        return {}


def _register(name, spec, model_class, build, attns=("eager",), n_out=1, kwargs=None, arg_names=(), reinit=False):
    for attn in attns:
        cls_name = name if len(attns) == 1 else f"{name}_{attn}"
        cls = type(cls_name, (_HF,), {
            "model_class": model_class, "build": staticmethod(build), "attn": attn, "n_out": n_out, "reinit": reinit,
            "arg_names": tuple(arg_names) or (("input_ids", "attention_mask") if spec in (MASKED, PADDED) else ()),
            "call_kwargs": (lambda self, kw=kwargs or {}: dict(kw)),
        })
        globals()[cls_name] = cls
        MODELS[cls_name] = spec


BOTH = ("eager", "sdpa")
MASKED = f"2x{T}xi64[0:1000],2x{T}xi64[1:2]"          # all-ones masks: decoders (no fully padded rows)
PADDED = f"2x{T}xi64[0:1000],2x{T}xi64[0:2]"          # random padding: encoders

# -- decoders (causal LMs: logits) ---------------------------------------------------------------
_register("GPT2", TOK, tf.GPT2LMHeadModel,
          lambda: tf.GPT2Config(vocab_size=V, n_embd=H, n_layer=L, n_head=NH, n_positions=P, use_cache=False), BOTH)
_register("Llama", TOK, tf.LlamaForCausalLM, lambda: _decoder_cfg(tf.LlamaConfig, num_key_value_heads=2), BOTH)
_register("Mistral", TOK, tf.MistralForCausalLM, lambda: _decoder_cfg(tf.MistralConfig, num_key_value_heads=2,
                                                                      sliding_window=8), BOTH)
_register("Qwen2", TOK, tf.Qwen2ForCausalLM, lambda: _decoder_cfg(tf.Qwen2Config, num_key_value_heads=2), BOTH)
_register("Phi", TOK, tf.PhiForCausalLM, lambda: _decoder_cfg(tf.PhiConfig, partial_rotary_factor=0.5), BOTH)
_register("GPTNeoX", TOK, tf.GPTNeoXForCausalLM, lambda: _decoder_cfg(tf.GPTNeoXConfig, rotary_pct=0.25), BOTH)
_register("OPT", TOK, tf.OPTForCausalLM,
          lambda: tf.OPTConfig(vocab_size=V, hidden_size=H, num_hidden_layers=L, num_attention_heads=NH, ffn_dim=FF,
                               word_embed_proj_dim=H, max_position_embeddings=P, use_cache=False), BOTH)
_register("Bloom", TOK, tf.BloomForCausalLM,
          lambda: tf.BloomConfig(vocab_size=V, hidden_size=H, n_layer=L, n_head=NH, use_cache=False))
_register("Falcon", TOK, tf.FalconForCausalLM,
          lambda: tf.FalconConfig(vocab_size=V, hidden_size=H, num_hidden_layers=L, num_attention_heads=NH,
                                  use_cache=False), BOTH)
_register("Gemma", TOK, tf.GemmaForCausalLM,
          lambda: _decoder_cfg(tf.GemmaConfig, num_key_value_heads=1, head_dim=16), BOTH)

# -- encoders (last hidden state) ----------------------------------------------------------------
_register("Bert", TOK, tf.BertModel, lambda: _text_cfg(tf.BertConfig), BOTH, n_out=2)
_register("DistilBert", TOK, tf.DistilBertModel,
          lambda: tf.DistilBertConfig(vocab_size=V, dim=H, n_layers=L, n_heads=NH, hidden_dim=FF,
                                      max_position_embeddings=P), BOTH)
_register("Roberta", TOK, tf.RobertaModel, lambda: _text_cfg(tf.RobertaConfig, pad_token_id=1), BOTH)
_register("T5Encoder", TOK, tf.T5EncoderModel,
          lambda: tf.T5Config(vocab_size=V, d_model=H, d_kv=16, d_ff=FF, num_layers=L, num_heads=NH, use_cache=False))
_register("Bart", TOK, tf.BartModel,
          lambda: tf.BartConfig(vocab_size=V, d_model=H, encoder_layers=L, decoder_layers=L, encoder_attention_heads=NH,
                                decoder_attention_heads=NH, encoder_ffn_dim=FF, decoder_ffn_dim=FF,
                                max_position_embeddings=P, use_cache=False), BOTH)
_register("CLIPText", TOK, tf.CLIPTextModel,
          lambda: tf.CLIPTextConfig(vocab_size=V, hidden_size=H, intermediate_size=FF, num_hidden_layers=L,
                                    num_attention_heads=NH, max_position_embeddings=P), BOTH, n_out=2)

# -- vision --------------------------------------------------------------------------------------
_vit_kw = dict(image_size=S, patch_size=8, hidden_size=H, num_hidden_layers=L, num_attention_heads=NH,
               intermediate_size=FF)
_register("ViT", IMG, tf.ViTModel, lambda: tf.ViTConfig(**_vit_kw), BOTH)
_register("DeiT", IMG, tf.DeiTModel, lambda: tf.DeiTConfig(**_vit_kw))
_register("CLIPVision", IMG, tf.CLIPVisionModel, lambda: tf.CLIPVisionConfig(**_vit_kw), n_out=2)
_register("ConvNext", IMG, tf.ConvNextModel,
          lambda: tf.ConvNextConfig(num_stages=2, hidden_sizes=[32, 64], depths=[2, 2]), n_out=2)
_register("ResNet", IMG, tf.ResNetModel,
          lambda: tf.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic"),
          n_out=2)
_register("Swin", IMG, tf.SwinModel,
          lambda: tf.SwinConfig(image_size=S, patch_size=4, embed_dim=16, depths=[2, 2], num_heads=[2, 4],
                                window_size=4))
_register("MobileViT", "1x3x64x64xf32", tf.MobileViTModel,
          lambda: tf.MobileViTConfig(image_size=64, hidden_sizes=[32, 48, 64],
                                     neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64]), reinit=True)
_register("Segformer", "1x3x64x64xf32", tf.SegformerModel,
          lambda: tf.SegformerConfig(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32],
                                     num_attention_heads=[1, 2], patch_sizes=[7, 3], strides=[4, 2],
                                     mlp_ratios=[2, 2]))

# -- audio ---------------------------------------------------------------------------------------
_register("Wav2Vec2", "1x1600xf32", tf.Wav2Vec2Model,
          lambda: tf.Wav2Vec2Config(hidden_size=H, num_hidden_layers=L, num_attention_heads=NH, intermediate_size=FF,
                                    conv_dim=(32, 32), conv_stride=(5, 2), conv_kernel=(10, 3),
                                    num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4), BOTH)


def _whisper_encoder():
    cfg = tf.WhisperConfig(d_model=H, encoder_layers=L, decoder_layers=L, encoder_attention_heads=NH,
                           decoder_attention_heads=NH, encoder_ffn_dim=FF, decoder_ffn_dim=FF, num_mel_bins=80,
                           max_source_positions=16, vocab_size=V, use_cache=False,
                           pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    return tf.WhisperModel(cfg).get_encoder()


_register("WhisperEncoder", "1x80x32xf32", None, _whisper_encoder)

# -- more architectures, and attention masks as inputs (padding: the mask-building code runs in the graph) -----
_register("GPT2_mask", MASKED, tf.GPT2LMHeadModel,
          lambda: tf.GPT2Config(vocab_size=V, n_embd=H, n_layer=L, n_head=NH, n_positions=P, use_cache=False), BOTH)
_register("Llama_mask", MASKED, tf.LlamaForCausalLM, lambda: _decoder_cfg(tf.LlamaConfig, num_key_value_heads=2),
          BOTH)
_register("Bert_mask", PADDED, tf.BertModel, lambda: _text_cfg(tf.BertConfig), BOTH)
_register("Mixtral", TOK, tf.MixtralForCausalLM,
          lambda: _decoder_cfg(tf.MixtralConfig, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2))
_register("Qwen3", TOK, tf.Qwen3ForCausalLM, lambda: _decoder_cfg(tf.Qwen3Config, num_key_value_heads=2, head_dim=16))
_register("Phi3", TOK, tf.Phi3ForCausalLM, lambda: _decoder_cfg(tf.Phi3Config, num_key_value_heads=2, pad_token_id=0))
_register("GPTJ", TOK, tf.GPTJForCausalLM,
          lambda: tf.GPTJConfig(vocab_size=V, n_embd=H, n_layer=L, n_head=NH, n_positions=P, rotary_dim=8,
                                use_cache=False))
_register("Albert", TOK, tf.AlbertModel,
          lambda: tf.AlbertConfig(vocab_size=V, embedding_size=32, hidden_size=H, num_hidden_layers=L,
                                  num_attention_heads=NH, intermediate_size=FF, max_position_embeddings=P), n_out=2)
_register("Electra", TOK, tf.ElectraModel,
          lambda: tf.ElectraConfig(vocab_size=V, embedding_size=32, hidden_size=H, num_hidden_layers=L,
                                   num_attention_heads=NH, intermediate_size=FF, max_position_embeddings=P))
_register("DebertaV2", TOK, tf.DebertaV2Model,
          lambda: tf.DebertaV2Config(vocab_size=V, hidden_size=H, num_hidden_layers=L, num_attention_heads=NH,
                                     intermediate_size=FF, max_position_embeddings=P, relative_attention=True,
                                     position_buckets=32, pos_att_type=["p2c", "c2p"]))
_register("MPNet", TOK, tf.MPNetModel, lambda: _text_cfg(tf.MPNetConfig), n_out=2)
_register("T5", "2x16xi64[0:1000],2x8xi64[0:1000]", tf.T5ForConditionalGeneration,
          lambda: tf.T5Config(vocab_size=V, d_model=H, d_kv=16, d_ff=FF, num_layers=L, num_heads=NH, use_cache=False,
                              decoder_start_token_id=0), arg_names=("input_ids", "decoder_input_ids"))
_register("Dinov2", IMG, tf.Dinov2Model,
          lambda: tf.Dinov2Config(image_size=S, patch_size=8, hidden_size=H, num_hidden_layers=L,
                                  num_attention_heads=NH, mlp_ratio=2), n_out=2)
_register("Beit", IMG, tf.BeitModel,
          lambda: tf.BeitConfig(image_size=S, patch_size=8, hidden_size=H, num_hidden_layers=L, num_attention_heads=NH,
                                intermediate_size=FF, use_relative_position_bias=True))
_register("Hubert", "1x1600xf32", tf.HubertModel,
          lambda: tf.HubertConfig(hidden_size=H, num_hidden_layers=L, num_attention_heads=NH, intermediate_size=FF,
                                  conv_dim=(32, 32), conv_stride=(5, 2), conv_kernel=(10, 3),
                                  num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4))
