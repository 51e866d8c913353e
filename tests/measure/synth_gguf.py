#!/usr/bin/env python3
"""synth_gguf: write a synthetic GGUF v3 model with a preset's attention shape.

Every weight is zero and the file is written sparse (the data section is a hole made by
truncate), so a 7B-shaped model takes a few kilobytes on disk. The KV cache llama.cpp
allocates depends only on the shape (layers, KV heads, head sizes, windows, latent rank),
never on weight values, so the engine's memory report for such a file is a real
measurement; nothing computed from the weights (speed, text) means anything.

Every number the cache depends on is the real model's: layers, KV heads, head sizes, the
sliding window and its layer pattern, MLA's latent rank and rope dimensions, the hybrid
layer pattern and recurrent state sizes. What the cache does not depend on is shrunk so
that a model loads in seconds (llama.cpp faults in every page of the file): the hidden
size is 256 (qwen2's is q heads x head size, as that architecture requires), the
feed-forward and expert widths are tiny, matrices are stored as q4_0 zeros, and the MLA
preset keeps 16 of its 128 query heads and q_lora_rank 64 (the latent cache has no
per-head dimension). The vocabulary is 256 entries of llama.cpp's "test" tokenizer.

Key and tensor names follow llama.cpp's src/llama-arch.cpp and src/models/<arch>.cpp at
the pinned commit (see tests/measure/README.md).

usage: synth_gguf.py PRESET OUT.gguf      (PRESET: one of the names in PRESETS)
       synth_gguf.py --list
"""
import struct
import sys

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGN = 32

# gguf value types
T_U32, T_I32, T_F32, T_BOOL, T_STRING, T_ARRAY = 4, 5, 6, 7, 8, 9
# ggml tensor types; big matrices are q4_0 (18 bytes per 32 zeros) so the file is small
# even where the architecture ties a matrix to the cache shape (qwen2's q and output
# projections are hidden x hidden, and its hidden size must be heads x head size)
G_F32, G_F16, G_Q4_0 = 0, 1, 2

N_VOCAB = 256
N_FF = 64          # dense feed-forward width: irrelevant to the KV cache
N_FF_EXP = 32      # expert width
N_EXPERT = 2
HIDDEN = 256       # hidden size: irrelevant to the KV cache (K/V width is heads x head size)


def qwen2(p):
    # qwen2 ties the hidden size to q heads x head size (its q projection is square)
    return dense("qwen2", dict(p, hidden=p["q_heads"] * p["head_dim"]), bias=True)


def llama(p):
    return dense("llama", p)


def dense(arch, p, bias=False, extra=None):
    e, hd, nh, nkv = p.get("hidden", HIDDEN), p["head_dim"], p["q_heads"], p["kv_heads"]
    kv = common_kv(arch, p)
    t = top_tensors(e)
    for i in range(p["layers"]):
        b = "blk.%d." % i
        t += [(b + "attn_norm.weight", [e], G_F32),
              (b + "attn_q.weight", [e, nh * hd], G_F16),
              (b + "attn_k.weight", [e, nkv * hd], G_F16),
              (b + "attn_v.weight", [e, nkv * hd], G_F16),
              (b + "attn_output.weight", [nh * hd, e], G_F16),
              (b + "ffn_norm.weight", [e], G_F32),
              (b + "ffn_gate.weight", [e, N_FF], G_F16),
              (b + "ffn_up.weight", [e, N_FF], G_F16),
              (b + "ffn_down.weight", [N_FF, e], G_F16)]
        if bias:
            t += [(b + "attn_q.bias", [nh * hd], G_F32),
                  (b + "attn_k.bias", [nkv * hd], G_F32),
                  (b + "attn_v.bias", [nkv * hd], G_F32)]
        if extra:
            t += extra(b)
    return kv, t


def gemma3(p):
    hd = p["head_dim"]
    e = HIDDEN

    def extra(b):
        return [(b + "post_attention_norm.weight", [e], G_F32),
                (b + "attn_k_norm.weight", [hd], G_F32),
                (b + "attn_q_norm.weight", [hd], G_F32),
                (b + "post_ffw_norm.weight", [e], G_F32)]
    kv, t = dense("gemma3", p, extra=extra)
    kv += [("gemma3.attention.sliding_window", T_U32, p["window"])]
    return kv, t


def deepseek2(p):
    """MLA: the cache holds kv_lora_rank + rope dims per token and layer (K only)."""
    a, e, nh = "deepseek2", HIDDEN, p["q_heads"]
    qr, kvr, rope = p["q_lora_rank"], p["kv_lora_rank"], p["rope_dim"]
    hk, hv = p["head_dim"], p["head_dim_v"]          # 192 and 128: q/k and v per head
    nope = hk - rope
    kv = common_kv(a, dict(p, kv_heads=1))
    kv += [(a + ".attention.key_length", T_U32, kvr + rope),
           (a + ".attention.value_length", T_U32, kvr),
           (a + ".attention.key_length_mla", T_U32, hk),
           (a + ".attention.value_length_mla", T_U32, hv),
           (a + ".rope.dimension_count", T_U32, rope),
           (a + ".attention.q_lora_rank", T_U32, qr),
           (a + ".attention.kv_lora_rank", T_U32, kvr),
           (a + ".leading_dense_block_count", T_U32, 1),
           (a + ".expert_feed_forward_length", T_U32, N_FF_EXP),
           (a + ".expert_shared_count", T_U32, 1),
           (a + ".expert_count", T_U32, N_EXPERT),
           (a + ".expert_used_count", T_U32, 1)]
    t = top_tensors(e)
    for i in range(p["layers"]):
        b = "blk.%d." % i
        t += [(b + "attn_norm.weight", [e], G_F32),
              (b + "attn_q_a_norm.weight", [qr], G_F32),
              (b + "attn_kv_a_norm.weight", [kvr], G_F32),
              (b + "attn_q_a.weight", [e, qr], G_F16),
              (b + "attn_q_b.weight", [qr, nh * hk], G_F16),
              (b + "attn_kv_a_mqa.weight", [e, kvr + rope], G_F16),
              (b + "attn_k_b.weight", [nope, kvr, nh], G_F16),
              (b + "attn_v_b.weight", [kvr, hv, nh], G_F16),
              (b + "attn_output.weight", [nh * hv, e], G_F16),
              (b + "ffn_norm.weight", [e], G_F32)]
        if i < 1:
            t += [(b + "ffn_gate.weight", [e, N_FF], G_F16),
                  (b + "ffn_up.weight", [e, N_FF], G_F16),
                  (b + "ffn_down.weight", [N_FF, e], G_F16)]
        else:
            t += experts(b, e)
    return kv, t


def qwen3next(p):
    """Hybrid: every 4th layer full attention, the rest Gated DeltaNet (recurrent state)."""
    a, e, hd, nh, nkv = "qwen3next", HIDDEN, p["head_dim"], p["q_heads"], p["kv_heads"]
    dconv, dstate, nvh, nkh = p["ssm_conv"], p["ssm_state"], p["ssm_v_heads"], p["ssm_k_heads"]
    key_dim, value_dim = dstate * nkh, dstate * nvh
    conv_dim = 2 * key_dim + value_dim
    kv = common_kv(a, p)
    kv += [(a + ".ssm.conv_kernel", T_U32, dconv),
           (a + ".ssm.inner_size", T_U32, value_dim),
           (a + ".ssm.state_size", T_U32, dstate),
           (a + ".ssm.time_step_rank", T_U32, nvh),
           (a + ".ssm.group_count", T_U32, nkh),
           (a + ".full_attention_interval", T_U32, p["every"]),
           (a + ".expert_feed_forward_length", T_U32, N_FF_EXP),
           (a + ".expert_shared_feed_forward_length", T_U32, N_FF_EXP),
           (a + ".expert_count", T_U32, N_EXPERT),
           (a + ".expert_used_count", T_U32, 1)]
    t = top_tensors(e)
    for i in range(p["layers"]):
        b = "blk.%d." % i
        t += [(b + "attn_norm.weight", [e], G_F32),
              (b + "post_attention_norm.weight", [e], G_F32)]
        if (i + 1) % p["every"] == 0:
            t += [(b + "attn_q.weight", [e, nh * hd * 2], G_F16),
                  (b + "attn_k.weight", [e, nkv * hd], G_F16),
                  (b + "attn_v.weight", [e, nkv * hd], G_F16),
                  (b + "attn_output.weight", [nh * hd, e], G_F16),
                  (b + "attn_q_norm.weight", [hd], G_F32),
                  (b + "attn_k_norm.weight", [hd], G_F32)]
        else:
            t += [(b + "attn_qkv.weight", [e, conv_dim], G_F16),
                  (b + "attn_gate.weight", [e, value_dim], G_F16),
                  (b + "ssm_conv1d.weight", [dconv, conv_dim], G_F32),
                  (b + "ssm_dt.bias", [nvh], G_F32),
                  (b + "ssm_a", [nvh], G_F32),
                  (b + "ssm_ba.weight", [e, 2 * nvh], G_F16),
                  (b + "ssm_norm.weight", [dstate], G_F32),
                  (b + "ssm_out.weight", [value_dim, e], G_F16)]
        t += experts(b, e)
        t += [(b + "ffn_gate_inp_shexp.weight", [e], G_F16)]
    return kv, t


def experts(b, e):
    return [(b + "ffn_gate_inp.weight", [e, N_EXPERT], G_F32),
            (b + "ffn_gate_exps.weight", [e, N_FF_EXP, N_EXPERT], G_F16),
            (b + "ffn_up_exps.weight", [e, N_FF_EXP, N_EXPERT], G_F16),
            (b + "ffn_down_exps.weight", [N_FF_EXP, e, N_EXPERT], G_F16),
            (b + "ffn_gate_shexp.weight", [e, N_FF_EXP], G_F16),
            (b + "ffn_up_shexp.weight", [e, N_FF_EXP], G_F16),
            (b + "ffn_down_shexp.weight", [N_FF_EXP, e], G_F16)]


def common_kv(a, p):
    kv = [("general.architecture", T_STRING, a),
          ("general.name", T_STRING, "kvsite synthetic " + p["id"] + " (zero weights)"),
          (a + ".vocab_size", T_U32, N_VOCAB),
          (a + ".context_length", T_U32, p["ctx_train"]),
          (a + ".embedding_length", T_U32, p.get("hidden", HIDDEN)),
          (a + ".block_count", T_U32, p["layers"]),
          (a + ".feed_forward_length", T_U32, N_FF),
          (a + ".attention.head_count", T_U32, p["q_heads"]),
          (a + ".attention.head_count_kv", T_U32, p["kv_heads"]),
          (a + ".attention.layer_norm_rms_epsilon", T_F32, p["rms_eps"]),
          (a + ".rope.freq_base", T_F32, p["rope_base"]),
          ("tokenizer.ggml.model", T_STRING, "test"),
          ("tokenizer.ggml.tokens", T_ARRAY, (T_STRING, ["tok_%d" % i for i in range(N_VOCAB)])),
          ("tokenizer.ggml.scores", T_ARRAY, (T_F32, [0.0] * N_VOCAB))]
    if a != "deepseek2":  # head size stated, not derived from the (shrunk) hidden size
        kv += [(a + ".attention.key_length", T_U32, p["head_dim"]),
               (a + ".attention.value_length", T_U32, p["head_dim"]),
               (a + ".rope.dimension_count", T_U32, p["head_dim"])]
    return kv


def top_tensors(e):
    return [("token_embd.weight", [e, N_VOCAB], G_F16),
            ("output_norm.weight", [e], G_F32)]


# The presets: cache shapes as in checks/models.lua (which cites the model configs); the
# trained context and rope base come from the same configs. DeepSeek-V2 has 128 query heads
# and q_lora_rank 1536; 16 and 64 here (see the top of this file).
PRESETS = {
    "qwen2.5-7b": (qwen2, dict(layers=28, q_heads=28, kv_heads=4, head_dim=128,
                               ctx_train=32768, rope_base=1e6, rms_eps=1e-6)),
    "llama-3.1-8b": (llama, dict(layers=32, q_heads=32, kv_heads=8, head_dim=128,
                                 ctx_train=131072, rope_base=5e5, rms_eps=1e-5)),
    "gemma-3-27b": (gemma3, dict(layers=62, q_heads=32, kv_heads=16, head_dim=128,
                                 window=1024, ctx_train=131072, rope_base=1e6, rms_eps=1e-6)),
    "deepseek-v2": (deepseek2, dict(layers=60, q_heads=16, head_dim=192,
                                    head_dim_v=128, q_lora_rank=64, kv_lora_rank=512,
                                    rope_dim=64, ctx_train=163840, rope_base=1e4,
                                    rms_eps=1e-6)),
    "qwen3-next-80b-a3b": (qwen3next, dict(layers=48, q_heads=16, kv_heads=2,
                                           head_dim=256, every=4, ssm_conv=4, ssm_state=128,
                                           ssm_v_heads=32, ssm_k_heads=16, ctx_train=262144,
                                           rope_base=1e7, rms_eps=1e-6)),
}


def gguf_str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def gguf_value(typ, v):
    if typ == T_U32:
        return struct.pack("<I", v)
    if typ == T_I32:
        return struct.pack("<i", v)
    if typ == T_F32:
        return struct.pack("<f", v)
    if typ == T_BOOL:
        return struct.pack("<B", 1 if v else 0)
    if typ == T_STRING:
        return gguf_str(v)
    if typ == T_ARRAY:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(gguf_value(et, x) for x in items)
    raise ValueError("unsupported gguf type %d" % typ)


def nbytes(shape, typ):
    n = 1
    for d in shape:
        n *= d
    if typ == G_Q4_0:
        return n // 32 * 18
    return n * (4 if typ == G_F32 else 2)


def small(tensors):
    """F16 matrices with rows of whole 32-value blocks become q4_0."""
    return [(n, s, G_Q4_0 if t == G_F16 and len(s) >= 2 and s[0] % 32 == 0 else t)
            for n, s, t in tensors]


def write(path, kv, tensors):
    head = bytearray(GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(tensors), len(kv)))
    for key, typ, v in kv:
        head += gguf_str(key) + struct.pack("<I", typ) + gguf_value(typ, v)
    off = 0
    for name, shape, typ in tensors:
        head += gguf_str(name) + struct.pack("<I", len(shape))
        head += b"".join(struct.pack("<Q", d) for d in shape)
        head += struct.pack("<IQ", typ, off)
        off += nbytes(shape, typ)
        off = (off + ALIGN - 1) // ALIGN * ALIGN
    head += b"\0" * ((-len(head)) % ALIGN)
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(len(head) + off)  # the zero weights: a hole, no blocks on disk


def main(argv):
    if len(argv) == 2 and argv[1] == "--list":
        print("\n".join(sorted(PRESETS)))
        return 0
    if len(argv) != 3 or argv[1] not in PRESETS:
        sys.stderr.write("usage: synth_gguf.py PRESET OUT.gguf (presets: %s)\n" % ", ".join(sorted(PRESETS)))
        return 2
    build, p = PRESETS[argv[1]]
    kv, tensors = build(dict(p, id=argv[1]))
    write(argv[2], kv, small(tensors))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
