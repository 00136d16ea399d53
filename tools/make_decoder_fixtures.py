#!/usr/bin/env python3
"""Writes an onnxruntime-genai model folder with random weights: decoder fixtures.

The graphs follow what onnxruntime-genai's model builder (src/python/py/models/
builder.py) emits for the CPU: opset 21 + com.microsoft 1, IR 10, every
initializer in one external model.onnx.data, SimplifiedLayerNormalization /
SkipSimplifiedLayerNormalization, one packed QKV projection, GroupQueryAttention
with do_rotary=1 and the cos/sin caches as initializers, SiLU written as
Sigmoid + Mul, and the ReduceSum -> Sub -> Cast mask subgraph. `--family optimum`
instead writes a Hugging Face optimum-style export in plain ONNX ops (MatMul,
Softmax over an additive -inf mask, Concat of past and new K/V). `--attention mha`
writes the older builder's form instead of GroupQueryAttention: RotaryEmbedding
on Q and K with a position_ids input, then MultiHeadAttention (causal, the
attention mask as key_padding_mask, BNSH past -> present); MultiHeadAttention has
no head grouping, so K/V get as many heads as Q.

Weights are N(0, 1/fan_in) so every residual-stream activation stays near unit
RMS and the top logits have clear margins; int4 weights are quantized from such
f32 weights per block of 32 with asymmetric scales and packed zero points, as
MatMulNBits stores them. Only onnx and numpy are needed. Other tools import
Fixture with trained weights instead (`weights`: numpy arrays named as the
initializers, linear weights [K, N]; `shape`: a PRESETS-style dict), e.g.
tools/train_default_model.py for the llama family:

  python3 tools/make_decoder_fixtures.py --family qwen2 --weights int4 \
      --shape qwen2.5-0.5b --layers 2 --vocab 8192 --out /tmp/qwen2-int4
"""
import argparse
import json
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

PRESETS = {
    "tiny": dict(hidden=128, heads=4, kv_heads=2, head=32, intermediate=256, vocab=512, layers=2),
    "qwen2.5-0.5b": dict(hidden=896, heads=14, kv_heads=2, head=64, intermediate=4864, vocab=151936, layers=24),
    "llama-3.2-1b": dict(hidden=2048, heads=32, kv_heads=8, head=64, intermediate=8192, vocab=128256, layers=16),
}

# theta: RoPE base; window: sliding window (-1: none); the rest switch on the
# family's graph differences.
FAMILIES = {
    "llama": dict(type="llama", theta=500000.0, eps=1e-5),
    "qwen2": dict(type="qwen2", theta=1000000.0, eps=1e-6, qkv_bias=True),
    "qwen3": dict(type="qwen3", theta=1000000.0, eps=1e-6, qk_norm=True),
    "phi3": dict(type="phi3", theta=10000.0, eps=1e-5, long_rope=True),
    "gemma2": dict(type="gemma2", theta=10000.0, eps=1e-6, window=4096, softcap=50.0, final_softcap=30.0),
    "mistral": dict(type="mistral", theta=1000000.0, eps=1e-5, window=4096),
    "optimum": dict(type="llama", theta=500000.0, eps=1e-5),
}

BLOCK = 32
# Q/K/V and o_proj weights at twice the 1/sqrt(fan_in) scale: attention scores
# with std ~4 give peaked softmaxes and an attention output comparable to the
# residual stream, so the logits depend on the past (and on the window, the
# softcap and the rotary caches), not on the current token alone.
ATTN_GAIN = 2.0
F32 = TensorProto.FLOAT
I64 = TensorProto.INT64


class Graph:
    """Nodes, initializers and small Constant nodes, named as the builder names them."""

    def __init__(self):
        self.nodes = []
        self.inits = []
        self.consts = {}

    def node(self, op, inputs, name, n_out=1, outputs=None, domain=None, **attrs):
        outputs = outputs or [f"{name}/output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outputs, name=name, domain=domain, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def const(self, value, dtype=np.int64):
        array = np.array(value, dtype=dtype)
        kind = "0D" if array.ndim == 0 else "1D"
        name = f"/model/constants/{array.dtype.name}/{kind}/{', '.join(str(v) for v in array.flatten())}"
        if name not in self.consts:
            self.consts[name] = name
            self.nodes.append(helper.make_node("Constant", [], [name], name=name.replace("constants", "constant_nodes"),
                                               value=numpy_helper.from_array(array)))
        return name


def quantize_int4(w):
    """w [K, N] f32 -> (uint8 [N, K/32, 16], f32 scales [N*K/32], uint8 zero points [N*ceil(K/32/2)]).

    Per block asymmetric: the range always includes 0 (as ONNX Runtime's
    quantizer does), code = round(w / scale) + zp in [0, 15], w ~= (code - zp) * scale;
    two codes per byte, the even element in the low nibble.
    """
    k, n = w.shape
    assert k % BLOCK == 0, f"K={k} must be a multiple of {BLOCK}"
    blocks = k // BLOCK
    wt = w.T.reshape(n, blocks, BLOCK).astype(np.float32)
    lo = np.minimum(wt.min(axis=-1), 0.0)
    hi = np.maximum(wt.max(axis=-1), 0.0)
    scale = ((hi - lo) / 15.0).astype(np.float32)
    scale[scale == 0] = 1.0
    zp = np.clip(np.round(-lo / scale), 0, 15).astype(np.uint8)
    q = np.clip(np.round(wt / scale[..., None]) + zp[..., None], 0, 15).astype(np.uint8)
    packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
    zp_even = np.zeros((n, blocks + (blocks & 1)), dtype=np.uint8)
    zp_even[:, :blocks] = zp
    zp_packed = (zp_even[:, 0::2] | (zp_even[:, 1::2] << 4)).astype(np.uint8)
    return packed, scale.reshape(-1), zp_packed.reshape(-1)


class Fixture:
    def __init__(self, args, weights=None, shape=None):
        """weights: {name: array} replacing the random draws of the embedding, norms and linear weights
        (the llama-family genai graph); shape: hidden/heads/kv_heads/head/intermediate/vocab/layers
        instead of PRESETS[args.shape]."""
        self.args = args
        self.fam = FAMILIES[args.family]
        self.weights = weights
        p = dict(shape if shape is not None else PRESETS[args.shape])
        if args.layers is not None:
            p["layers"] = args.layers
        if args.vocab is not None:
            p["vocab"] = args.vocab
        self.p = p
        self.hidden, self.heads, self.kv_heads, self.head = p["hidden"], p["heads"], p["kv_heads"], p["head"]
        self.inter, self.vocab, self.layers = p["intermediate"], p["vocab"], p["layers"]
        self.max_length = args.max_length
        self.window = args.window if args.window is not None else self.fam.get("window", -1)
        self.original_length = args.original_length or max(self.max_length // 4, 1)
        self.rng = np.random.default_rng(args.seed)
        self.g = Graph()
        self.int4 = args.weights == "int4"
        self.mha = args.attention == "mha"
        if self.mha:
            self.kv_heads = self.heads

    # ---- weights -----------------------------------------------------------------
    def randn(self, *shape, std=1.0):
        return (self.rng.standard_normal(shape) * std).astype(np.float32)

    def param(self, name, draw, shape):
        """The given weight `name` when the fixture has weights, else draw() (keeps the random stream as before)."""
        if self.weights is None:
            return draw()
        if name not in self.weights:
            raise KeyError(f"weights: no '{name}' (expected shape {shape})")
        w = np.asarray(self.weights[name], dtype=np.float32)
        if w.shape != tuple(shape):
            raise ValueError(f"weights: '{name}' has shape {w.shape}, expected {tuple(shape)}")
        return w

    def norm_weight(self, name=None):
        return self.param(name, lambda: (1.0 + 0.1 * self.rng.standard_normal(self.hidden)).astype(np.float32),
                          (self.hidden,))

    def linear(self, name, x, k, n, out=None, gain=1.0):
        """x [B,S,k] @ W [k,n]; W ~ N(0, gain^2/k). MatMulNBits for int4, MatMul for fp32."""
        w = self.param(name[1:].replace("/", ".") + ".weight", lambda: self.randn(k, n, std=gain / np.sqrt(k)),
                       (k, n))
        g = self.g
        outputs = [out] if out else None
        if not self.int4:
            return g.node("MatMul", [x, g.init(name[1:].replace("/", ".") + ".weight", w)], f"{name}/MatMul", outputs=outputs)
        base = f"{name}/MatMulNBits"
        stem = base[1:].replace("/", ".")
        packed, scales, zp = quantize_int4(w)
        inputs = [x, g.init(stem + ".qweight", packed), g.init(stem + ".scales", scales), g.init(stem + ".qzeros", zp)]
        return g.node("MatMulNBits", inputs, base, outputs=outputs, domain="com.microsoft", K=k, N=n, bits=4,
                      block_size=BLOCK, accuracy_level=4)

    def rope_caches(self, length, factors=None, mscale=1.0):
        """cos/sin [length, head/2] as the builder makes them: inv_freq = 1 / (factor * theta^(2i/d))."""
        d = self.head
        inv_freq = 1.0 / (self.fam["theta"] ** (np.arange(0, d, 2, dtype=np.float64) / d))
        if factors is not None:
            inv_freq = inv_freq / factors
        freqs = np.outer(np.arange(length, dtype=np.float64), inv_freq)
        return (np.cos(freqs) * mscale).astype(np.float32), (np.sin(freqs) * mscale).astype(np.float32)

    # ---- graph pieces ------------------------------------------------------------
    def simplified_norm(self, name, x, weight_name, skip=None, last=False):
        """(Skip)SimplifiedLayerNormalization: returns (normalized, residual sum or None)."""
        g = self.g
        w = g.init(weight_name, self.norm_weight(weight_name))
        if skip is None:
            return g.node("SimplifiedLayerNormalization", [x, w], f"{name}/LayerNorm", axis=-1, epsilon=self.fam["eps"],
                          stash_type=1), None
        outputs = [f"{name}/output_0"] if last else [f"{name}/output_0", "", "", f"{name}/output_3"]
        g.node("SkipSimplifiedLayerNormalization", [x, skip, w], f"{name}/SkipLayerNorm", outputs=outputs,
               domain="com.microsoft", epsilon=self.fam["eps"])
        return outputs[0], (None if last else outputs[-1])

    def mask_subgraph(self):
        """seqlens_k = ReduceSum(mask) - 1 as int32 [B,1] (keepdims, as the builder emits it);
        total_sequence_length = mask.shape[1] as an int32 scalar."""
        g = self.g
        base = "/model/attn_mask_reformat/attn_mask_subgraph"
        rs = g.node("ReduceSum", ["attention_mask", g.const([1])], f"{base}/ReduceSum", keepdims=1)
        sub = g.node("Sub", [rs, g.const([1])], f"{base}/Sub")
        seqlens = g.node("Cast", [sub], f"{base}/Sub/Cast", to=TensorProto.INT32)
        shape = g.node("Shape", ["attention_mask"], f"{base}/Shape")
        total = g.node("Gather", [shape, g.const(1)], f"{base}/Gather", axis=0)
        total32 = g.node("Cast", [total], f"{base}/Gather/Cast", to=TensorProto.INT32)
        return seqlens, total32, total

    def rope_inputs(self, total_len):
        """Initializers cos_cache/sin_cache, or for phi3 an If picking the long caches past the original length."""
        g = self.g
        if not self.fam.get("long_rope"):
            cos, sin = self.rope_caches(self.max_length)
            return g.init("cos_cache", cos), g.init("sin_cache", sin)
        half = self.head // 2
        short = (1.0 + 0.05 * self.rng.random(half)).astype(np.float64)
        long = (1.0 + 3.0 * self.rng.random(half)).astype(np.float64)
        scale = self.max_length / self.original_length
        mscale = float(np.sqrt(1 + np.log(scale) / np.log(self.original_length))) if scale > 1 else 1.0
        branches = {}
        for tag, length, factors in (("large", self.max_length, long), ("small", self.original_length, short)):
            cos, sin = self.rope_caches(length, factors, mscale)
            nodes = [helper.make_node("Constant", [], [f"cos_cache_{tag}"], name=f"/{tag}/cos_cache/Constant",
                                      value=numpy_helper.from_array(cos)),
                     helper.make_node("Constant", [], [f"sin_cache_{tag}"], name=f"/{tag}/sin_cache/Constant",
                                      value=numpy_helper.from_array(sin))]
            outs = [helper.make_tensor_value_info(f"cos_cache_{tag}", F32, cos.shape),
                    helper.make_tensor_value_info(f"sin_cache_{tag}", F32, sin.shape)]
            branches[tag] = helper.make_graph(nodes, f"{tag}_rotemb_caches_graph", [], outs)
        base = "/model/rotemb_caches_subgraph"
        greater = g.node("Greater", [total_len, g.const(self.original_length)], f"{base}/Greater")
        g.node("If", [greater], f"{base}/If", outputs=["cos_cache", "sin_cache"], then_branch=branches["large"],
               else_branch=branches["small"])
        return "cos_cache", "sin_cache"

    def qk_norm(self, layer, x, which, heads):
        g = self.g
        base = f"/model/layers.{layer}/attn/{which}_norm"
        r1 = g.node("Reshape", [x, g.const([0, 0, heads, self.head])], f"{base}/Reshape_1")
        w = g.init(f"model.layers.{layer}.attn.{which}_norm.weight",
                   (1.0 + 0.1 * self.rng.standard_normal(self.head)).astype(np.float32))
        n = g.node("SimplifiedLayerNormalization", [r1, w], f"{base}/SimplifiedLayerNormalization", axis=-1,
                   epsilon=self.fam["eps"], stash_type=1)
        return g.node("Reshape", [n, g.const([0, 0, heads * self.head])], f"{base}/Reshape_2")

    def attention(self, layer, x, seqlens, total32, cos, sin):
        g = self.g
        q_size, kv_size = self.heads * self.head, self.kv_heads * self.head
        base = f"/model/layers.{layer}/attn"
        qkv = self.linear(f"{base}/qkv_proj", x, self.hidden, q_size + 2 * kv_size, gain=ATTN_GAIN)
        if self.fam.get("qkv_bias"):
            bias = g.init(f"model.layers.{layer}.attn.qkv_proj.Add.bias", self.randn(q_size + 2 * kv_size, std=0.1))
            qkv = g.node("Add", [qkv, bias], f"{base}/qkv_proj/Add")
        q, k, v = qkv, "", ""
        if self.fam.get("qk_norm"):
            q, k, v = g.node("Split", [qkv, g.const([q_size, kv_size, kv_size])], f"{base}/qkv_proj/Split", n_out=3,
                             axis=-1)
            q = self.qk_norm(layer, q, "q", self.heads)
            k = self.qk_norm(layer, k, "k", self.kv_heads)
        if self.mha:
            return self.linear(f"{base}/o_proj", self.mha_attention(layer, qkv, cos, sin), q_size, self.hidden,
                               gain=ATTN_GAIN)
        attrs = dict(num_heads=self.heads, kv_num_heads=self.kv_heads, scale=float(1.0 / np.sqrt(self.head)),
                     do_rotary=1, rotary_interleaved=0)
        window = self.window
        if self.args.family == "gemma2":
            attrs["softcap"] = self.fam["softcap"]
            window = self.window if layer % 2 == 0 else -1  # Gemma2: even layers slide
        attrs["local_window_size"] = int(window)
        outs = [f"{base}/GroupQueryAttention/output_0", f"present.{layer}.key", f"present.{layer}.value"]
        g.node("GroupQueryAttention",
               [q, k, v, f"past_key_values.{layer}.key", f"past_key_values.{layer}.value", seqlens, total32, cos, sin],
               f"{base}/GroupQueryAttention", outputs=outs, domain="com.microsoft", **attrs)
        return self.linear(f"{base}/o_proj", outs[0], q_size, self.hidden, gain=ATTN_GAIN)

    def mha_attention(self, layer, qkv, cos, sin):
        """Older exports: Split -> RotaryEmbedding(q), RotaryEmbedding(k) -> MultiHeadAttention."""
        g = self.g
        base = f"/model/layers.{layer}/attn"
        size = self.heads * self.head
        q, k, v = g.node("Split", [qkv, g.const([size, size, size])], f"{base}/qkv_proj/Split", n_out=3, axis=-1)
        q = g.node("RotaryEmbedding", [q, "position_ids", cos, sin], f"{base}/q_rotary/RotaryEmbedding",
                   domain="com.microsoft", interleaved=0)
        k = g.node("RotaryEmbedding", [k, "position_ids", cos, sin], f"{base}/k_rotary/RotaryEmbedding",
                   domain="com.microsoft", interleaved=0)
        outs = [f"{base}/MultiHeadAttention/output_0", f"present.{layer}.key", f"present.{layer}.value"]
        g.node("MultiHeadAttention", [q, k, v, "", self.key_padding_mask, "", f"past_key_values.{layer}.key",
                                      f"past_key_values.{layer}.value"],
               f"{base}/MultiHeadAttention", outputs=outs, domain="com.microsoft", num_heads=self.heads,
               unidirectional=1, scale=float(1.0 / np.sqrt(self.head)))
        return outs[0]

    def mlp(self, layer, x):
        g = self.g
        base = f"/model/layers.{layer}/mlp"
        gate = self.linear(f"{base}/gate_proj", x, self.hidden, self.inter)
        up = self.linear(f"{base}/up_proj", x, self.hidden, self.inter)
        if self.args.family == "gemma2":
            act = g.node("FastGelu", [gate], f"{base}/act_fn/FastGelu", domain="com.microsoft")
        else:
            sig = g.node("Sigmoid", [gate], f"{base}/act_fn/Sigmoid")
            act = g.node("Mul", [gate, sig], f"{base}/act_fn/Mul")
        prod = g.node("Mul", [act, up], f"{base}/Mul")
        return self.linear(f"{base}/down_proj", prod, self.inter, self.hidden)

    def build_genai(self):
        g = self.g
        gemma = self.args.family == "gemma2"
        emb_std = 1.0 / np.sqrt(self.hidden) if gemma else 1.0  # Gemma scales by sqrt(hidden) after the Gather
        table = self.param("model.embed_tokens.weight", lambda: self.randn(self.vocab, self.hidden, std=emb_std),
                           (self.vocab, self.hidden))
        emb = g.node("Gather", [g.init("model.embed_tokens.weight", table), "input_ids"], "/model/embed_tokens/Gather")
        if gemma:
            emb = g.node("Mul", [emb, g.const(np.round(np.sqrt(self.hidden), 2), np.float32)], "/model/embed_tokens/Mul")
        seqlens, total32, total = self.mask_subgraph()
        if self.mha:
            self.key_padding_mask = g.node("Cast", ["attention_mask"], "/model/attn_mask_reformat/Cast",
                                           to=TensorProto.INT32)
        cos, sin = self.rope_inputs(total)
        residual, skip = emb, None
        for i in range(self.layers):
            pre = f"/model/layers.{i}"
            x, res = self.simplified_norm(f"{pre}/input_layernorm", residual, f"model.layers.{i}.input_layernorm.weight",
                                          skip)
            residual = res or residual
            attn = self.attention(i, x, seqlens, total32, cos, sin)
            if gemma:
                attn, _ = self.simplified_norm(f"{pre}/post_attention_layernorm", attn,
                                               f"model.layers.{i}.post_attention_layernorm.weight")
                x, residual = self.simplified_norm(f"{pre}/pre_feedforward_layernorm", residual,
                                                   f"model.layers.{i}.pre_feedforward_layernorm.weight", attn)
                down = self.mlp(i, x)
                skip, _ = self.simplified_norm(f"{pre}/post_feedforward_layernorm", down,
                                               f"model.layers.{i}.post_feedforward_layernorm.weight")
            else:
                x, residual = self.simplified_norm(f"{pre}/post_attention_layernorm", residual,
                                                   f"model.layers.{i}.post_attention_layernorm.weight", attn)
                skip = self.mlp(i, x)
        x, _ = self.simplified_norm(f"/model/layers.{self.layers}/final_norm_layernorm", residual,
                                    f"model.layers.{self.layers}.final_norm_layernorm.weight", skip, last=True)
        cap = self.fam.get("final_softcap")
        logits = self.linear("/lm_head", x, self.hidden, self.vocab, out=None if cap else "logits")
        if cap:
            div = g.node("Div", [logits, g.const(cap, np.float32)], "/lm_head/softcap/Div")
            tanh = g.node("Tanh", [div], "/lm_head/softcap/Tanh")
            g.node("Mul", [tanh, g.const(cap, np.float32)], "/lm_head/softcap/Mul", outputs=["logits"])

    # ---- optimum-style plain ONNX export ---------------------------------------------
    def rms_norm(self, name, x):
        g = self.g
        sq = g.node("Pow", [x, g.const(2.0, np.float32)], f"{name}/Pow")
        mean = g.node("ReduceMean", [sq, g.const([-1])], f"{name}/ReduceMean", keepdims=1)
        eps = g.node("Add", [mean, g.const(self.fam["eps"], np.float32)], f"{name}/Add")
        root = g.node("Sqrt", [eps], f"{name}/Sqrt")
        inv = g.node("Reciprocal", [root], f"{name}/Reciprocal")
        scaled = g.node("Mul", [x, inv], f"{name}/Mul")
        return g.node("Mul", [g.init(f"{name[1:]}.weight".replace("/", "."), self.norm_weight()), scaled], f"{name}/Mul_1")

    def optimum_mask(self):
        """Additive mask [B,1,S,T]: 0 where key t <= query position and attention_mask[b,t] = 1, else -inf."""
        g = self.g
        b = "/model/mask"
        t = g.node("Gather", [g.node("Shape", ["attention_mask"], f"{b}/Shape"), g.const(1)], f"{b}/Gather_T", axis=0)
        s = g.node("Gather", [g.node("Shape", ["input_ids"], f"{b}/Shape_1"), g.const(1)], f"{b}/Gather_S", axis=0)
        past = g.node("Sub", [t, s], f"{b}/Sub")
        kpos = g.node("Range", [g.const(0), t, g.const(1)], f"{b}/Range")
        qpos = g.node("Unsqueeze", [g.node("Range", [past, t, g.const(1)], f"{b}/Range_1"), g.const([1])],
                      f"{b}/Unsqueeze")
        causal = g.node("LessOrEqual", [kpos, qpos], f"{b}/LessOrEqual")
        keep = g.node("Unsqueeze", [g.node("Cast", ["attention_mask"], f"{b}/Cast", to=TensorProto.BOOL),
                                    g.const([1, 2])], f"{b}/Unsqueeze_1")
        allowed = g.node("And", [causal, keep], f"{b}/And")
        batch = g.node("Gather", [g.node("Shape", ["input_ids"], f"{b}/Shape_2"), g.const([0])], f"{b}/Gather_B", axis=0)
        s1, t1 = (g.node("Unsqueeze", [v, g.const([0])], f"{b}/Unsqueeze_{n}") for v, n in ((s, "S"), (t, "T")))
        shape = g.node("Concat", [batch, g.const([1]), s1, t1], f"{b}/Concat", axis=0)
        allowed = g.node("Expand", [allowed, shape], f"{b}/Expand")
        return g.node("Where", [allowed, g.const(0.0, np.float32), g.const(-np.inf, np.float32)], f"{b}/Where")

    def optimum_rotate(self, name, x, cos, sin):
        g = self.g
        half = self.head // 2
        x1 = g.node("Slice", [x, g.const([0]), g.const([half]), g.const([-1])], f"{name}/Slice")
        x2 = g.node("Slice", [x, g.const([half]), g.const([self.head]), g.const([-1])], f"{name}/Slice_1")
        rot = g.node("Concat", [g.node("Neg", [x2], f"{name}/Neg"), x1], f"{name}/Concat", axis=-1)
        return g.node("Add", [g.node("Mul", [x, cos], f"{name}/Mul"), g.node("Mul", [rot, sin], f"{name}/Mul_1")],
                      f"{name}/Add")

    def optimum_kv(self, name, x, layer, kind, cos=None, sin=None):
        """[B,S,kv*H] -> BNSH, rotated for keys, Concat after the past (-> present), repeated to all heads."""
        g = self.g
        x = g.node("Transpose", [g.node("Reshape", [x, g.const([0, 0, self.kv_heads, self.head])], f"{name}/Reshape")],
                   f"{name}/Transpose", perm=[0, 2, 1, 3])
        if cos is not None:
            x = self.optimum_rotate(f"{name}/rotary", x, cos, sin)
        present = g.node("Concat", [f"past_key_values.{layer}.{kind}", x], f"{name}/Concat", axis=2,
                         outputs=[f"present.{layer}.{kind}"])
        rep = self.heads // self.kv_heads
        grown = g.node("Expand", [g.node("Unsqueeze", [present, g.const([2])], f"{name}/Unsqueeze"),
                                  g.const([1, 1, rep, 1, 1])], f"{name}/Expand")
        return g.node("Reshape", [grown, g.const([0, self.heads, -1, self.head])], f"{name}/Reshape_1")

    def optimum_attention(self, layer, x, mask, cos, sin):
        g = self.g
        base = f"/model/layers.{layer}/self_attn"
        q = self.linear(f"{base}/q_proj", x, self.hidden, self.heads * self.head, gain=ATTN_GAIN)
        k = self.linear(f"{base}/k_proj", x, self.hidden, self.kv_heads * self.head, gain=ATTN_GAIN)
        v = self.linear(f"{base}/v_proj", x, self.hidden, self.kv_heads * self.head, gain=ATTN_GAIN)
        q = g.node("Transpose", [g.node("Reshape", [q, g.const([0, 0, self.heads, self.head])], f"{base}/q/Reshape")],
                   f"{base}/q/Transpose", perm=[0, 2, 1, 3])
        q = self.optimum_rotate(f"{base}/q/rotary", q, cos, sin)
        k = self.optimum_kv(f"{base}/k", k, layer, "key", cos, sin)
        v = self.optimum_kv(f"{base}/v", v, layer, "value")
        kt = g.node("Transpose", [k], f"{base}/Transpose_k", perm=[0, 1, 3, 2])
        scores = g.node("Mul", [g.node("MatMul", [q, kt], f"{base}/MatMul"),
                                g.const(1.0 / np.sqrt(self.head), np.float32)], f"{base}/Mul")
        probs = g.node("Softmax", [g.node("Add", [scores, mask], f"{base}/Add")], f"{base}/Softmax", axis=-1)
        # Rows with every key masked are NaN after the Softmax; exports zero them.
        probs = g.node("Where", [g.node("IsNaN", [probs], f"{base}/IsNaN"), g.const(0.0, np.float32), probs],
                       f"{base}/Where")
        ctx = g.node("Transpose", [g.node("MatMul", [probs, v], f"{base}/MatMul_1")], f"{base}/Transpose",
                     perm=[0, 2, 1, 3])
        ctx = g.node("Reshape", [ctx, g.const([0, 0, self.heads * self.head])], f"{base}/Reshape")
        return self.linear(f"{base}/o_proj", ctx, self.heads * self.head, self.hidden, gain=ATTN_GAIN)

    def build_optimum(self):
        g = self.g
        h = g.node("Gather", [g.init("model.embed_tokens.weight", self.randn(self.vocab, self.hidden)), "input_ids"],
                   "/model/embed_tokens/Gather")
        mask = self.optimum_mask()
        cos_full, sin_full = self.rope_caches(self.max_length)
        cos_tab = g.init("model.rotary_emb.cos_cached", np.concatenate([cos_full, cos_full], axis=1))
        sin_tab = g.init("model.rotary_emb.sin_cached", np.concatenate([sin_full, sin_full], axis=1))
        cos = g.node("Unsqueeze", [g.node("Gather", [cos_tab, "position_ids"], "/model/rotary_emb/Gather", axis=0),
                                   g.const([1])], "/model/rotary_emb/Unsqueeze")
        sin = g.node("Unsqueeze", [g.node("Gather", [sin_tab, "position_ids"], "/model/rotary_emb/Gather_1", axis=0),
                                   g.const([1])], "/model/rotary_emb/Unsqueeze_1")
        for i in range(self.layers):
            pre = f"/model/layers.{i}"
            attn = self.optimum_attention(i, self.rms_norm(f"{pre}/input_layernorm", h), mask, cos, sin)
            h = g.node("Add", [h, attn], f"{pre}/Add")
            x = self.rms_norm(f"{pre}/post_attention_layernorm", h)
            h = g.node("Add", [h, self.mlp(i, x)], f"{pre}/Add_1")
        x = self.rms_norm("/model/norm", h)
        self.linear("/lm_head", x, self.hidden, self.vocab, out="logits")

    # ---- files -----------------------------------------------------------------
    def io(self):
        optimum = self.args.family == "optimum"
        kv = ["batch_size", self.kv_heads, "past_sequence_length", self.head]
        present = ["batch_size", self.kv_heads, "total_sequence_length", self.head]
        inputs = [helper.make_tensor_value_info("input_ids", I64, ["batch_size", "sequence_length"]),
                  helper.make_tensor_value_info("attention_mask", I64, ["batch_size", "total_sequence_length"])]
        if optimum or self.mha:
            inputs.append(helper.make_tensor_value_info("position_ids", I64, ["batch_size", "sequence_length"]))
        outputs = [helper.make_tensor_value_info("logits", F32, ["batch_size", "sequence_length", self.vocab])]
        for i in range(self.layers):
            for kind in ("key", "value"):
                inputs.append(helper.make_tensor_value_info(f"past_key_values.{i}.{kind}", F32, kv))
                outputs.append(helper.make_tensor_value_info(f"present.{i}.{kind}", F32, present))
        return inputs, outputs

    def save_model(self, out):
        if self.args.family == "optimum":
            self.build_optimum()
        else:
            self.build_genai()
        inputs, outputs = self.io()
        graph = helper.make_graph(self.g.nodes, "main_graph", inputs, outputs, self.g.inits)
        model = helper.make_model(graph, ir_version=10, producer_name="ember-tools/make_decoder_fixtures",
                                  opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])
        for name in ("model.onnx", "model.onnx.data"):
            if os.path.exists(os.path.join(out, name)):
                os.remove(os.path.join(out, name))
        onnx.save_model(model, os.path.join(out, "model.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                        location="model.onnx.data", size_threshold=0, convert_attribute=False)

    def special_ids(self):
        return {"bos": self.vocab - 3, "eos": self.vocab - 2, "pad": self.vocab - 1}

    def save_genai_config(self, out):
        ids = self.special_ids()
        optimum = self.args.family == "optimum"
        inputs = {"input_ids": "input_ids", "attention_mask": "attention_mask",
                  "past_key_names": "past_key_values.%d.key", "past_value_names": "past_key_values.%d.value"}
        if optimum or self.mha:
            inputs["position_ids"] = "position_ids"
        config = {
            "model": {
                "bos_token_id": ids["bos"], "context_length": self.max_length,
                "decoder": {
                    "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                    "filename": "model.onnx", "head_size": self.head, "hidden_size": self.hidden, "inputs": inputs,
                    "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                                "present_value_names": "present.%d.value"},
                    "num_attention_heads": self.heads, "num_hidden_layers": self.layers,
                    "num_key_value_heads": self.kv_heads,
                },
                "eos_token_id": ids["eos"], "pad_token_id": ids["pad"], "type": self.fam["type"],
                "vocab_size": self.vocab,
            },
            "search": {
                "diversity_penalty": 0.0, "do_sample": False, "early_stopping": True, "length_penalty": 1.0,
                "max_length": self.max_length, "min_length": 0, "no_repeat_ngram_size": 0, "num_beams": 1,
                "num_return_sequences": 1, "past_present_share_buffer": not (optimum or self.mha), "repetition_penalty": 1.0,
                "temperature": 1.0, "top_k": 1, "top_p": 1.0,
            },
        }
        with open(os.path.join(out, "genai_config.json"), "w") as f:
            json.dump(config, f, indent=4)

    def save_tokenizer(self, out):
        write_tokenizer(out, self.vocab, self.special_ids(), self.args.seed)


def byte_symbols():
    """GPT-2's byte -> printable character table used by byte-level BPE."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return [table[b] for b in range(256)]


def write_tokenizer(out, vocab_size, ids, seed):
    """A byte-level BPE: the 256 byte symbols, merges of earlier tokens up to the vocabulary, three specials."""
    assert vocab_size >= 256 + 3, "the vocabulary needs the 256 byte tokens and 3 special tokens"
    symbols = byte_symbols()
    vocab = {s: i for i, s in enumerate(symbols)}
    tokens = list(symbols)
    letters = [symbols[b] for b in b"etaoinshrdlucmfwypvbgkqjxz ETAOINSHRDLU"]
    rng = np.random.default_rng(seed + 1)
    merges = []
    while len(tokens) < vocab_size - 3:
        pool = len(tokens)
        a = letters[rng.integers(len(letters))] if rng.random() < 0.3 else tokens[256 + rng.integers(pool - 256)] \
            if pool > 256 else letters[rng.integers(len(letters))]
        b = letters[rng.integers(len(letters))]
        if a + b in vocab or len(a + b) > 16:
            continue
        vocab[a + b] = len(tokens)
        tokens.append(a + b)
        merges.append(f"{a} {b}")
    names = {"bos": "<|begin_of_text|>", "eos": "<|end_of_text|>", "pad": "<|pad|>"}
    added = []
    for key in ("bos", "eos", "pad"):
        vocab[names[key]] = ids[key]
        added.append({"id": ids[key], "content": names[key], "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": True})
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": byte_level, "post_processor": byte_level, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }
    with open(os.path.join(out, "tokenizer.json"), "w") as f:
        json.dump(tokenizer, f, ensure_ascii=False)
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": names["bos"], "eos_token": names["eos"],
              "pad_token": names["pad"], "add_bos_token": False, "model_max_length": 1 << 20}
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", required=True, choices=sorted(FAMILIES))
    ap.add_argument("--weights", default="int4", choices=["int4", "fp32"])
    ap.add_argument("--shape", default="tiny", choices=sorted(PRESETS))
    ap.add_argument("--layers", type=int, help="override the preset's layer count")
    ap.add_argument("--vocab", type=int, help="override the preset's vocabulary size")
    ap.add_argument("--max-length", type=int, default=4096, help="context length: cos/sin cache rows")
    ap.add_argument("--window", type=int, help="local_window_size for mistral and gemma2's sliding layers")
    ap.add_argument("--original-length", type=int, help="phi3: longest total length that uses the short caches")
    ap.add_argument("--attention", default="gqa", choices=["gqa", "mha"],
                    help="mha: the older RotaryEmbedding + MultiHeadAttention form (K/V heads = Q heads)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.family == "optimum" and args.weights != "fp32":
        ap.error("--family optimum is a plain-ONNX export: use --weights fp32")
    if args.attention == "mha" and (args.family in ("optimum", "gemma2", "mistral", "qwen3")):
        ap.error("--attention mha: MultiHeadAttention has no window or softcap, and the older exports had no q/k "
                 "norms; use llama, qwen2 or phi3")
    os.makedirs(args.out, exist_ok=True)
    fixture = Fixture(args)
    fixture.save_model(args.out)
    fixture.save_genai_config(args.out)
    fixture.save_tokenizer(args.out)


if __name__ == "__main__":
    main()
