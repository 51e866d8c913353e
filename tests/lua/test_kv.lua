-- Tests of checks/kv.lua: presets, the formula with layer layouts, engine rounding, what-if
-- overrides, and every derived figure of kv-facts.md recomputed to its quoted precision.
-- Runs under `kvsite lua-test` (a global test(name, fn) per case).

local kv = require "kv"
local units = require "units"
local expect = require "expect"

local MiB, GiB = units.MiB, units.GiB

-- 16-bit KV bytes per token, from the notes column of models.tsv
local PER_TOKEN = {
  {"qwen2.5-7b", 57344},
  {"llama-3.1-8b", 131072},
  {"llama-3.1-70b", 327680},
  {"llama-2-7b", 524288},
  {"mistral-7b-v0.1", 131072},
  {"qwen3-next-80b-a3b", 24576},
  {"deepseek-v2", 69120},
  {"deepseek-v3", 70272},
}
for _, c in ipairs(PER_TOKEN) do
  test("per_token of preset " .. c[1], function()
    expect.eq(kv.per_token(kv.model(c[1])), c[2], c[1])
    expect.eq(kv.per_token(c[1]), c[2], c[1] .. " by id")
  end)
end

-- The library's presets; a site's checks/models.yaml may add more (kv.presets lists all).
local models = require "models"
test("presets: the library's sixteen ids, all among kv.presets(), sorted", function()
  expect.eq(table.concat(models.library_ids(), " "), "deepseek-v2 deepseek-v3 deepseek-v3.2-exp "
    .. "gemma-3-27b gemma-3n-e4b gpt-oss-120b gpt-oss-20b llama-2-7b llama-3.1-70b llama-3.1-8b "
    .. "llama-4-scout mistral-7b-v0.1 qwen2.5-7b qwen3-32b qwen3-8b qwen3-next-80b-a3b")
  local all, seen = kv.presets(), {}
  for i, id in ipairs(all) do
    seen[id] = true
    if i > 1 then expect.eq(all[i - 1] < id, true, "sorted at " .. id) end
  end
  for _, id in ipairs(models.library_ids()) do expect.eq(seen[id], true, id) end
end)

test("every preset carries its source and shape", function()
  for _, id in ipairs(kv.presets()) do
    local m = kv.model(id)
    expect.eq(type(m.source), "string", id .. " source")
    expect.eq(#m.source > 0, true, id .. " source is not empty")
    expect.eq(m.id, id)
    expect.eq(m.what_if, nil, id .. " is not a what-if")
  end
end)

test("gemma-3-27b: 8192 B per token per layer, 10 global + 52 windowed layers", function()
  local g = kv.model "gemma-3-27b"
  local layers = kv.layers(g)
  expect.eq(#layers, 62)
  local global, loc = 0, 0
  for _, l in ipairs(layers) do
    expect.eq(l.bytes_per_token, 8192, "layer " .. l.index)
    if l.kind == "full" then global = global + 1 else loc = loc + 1 end
  end
  expect.eq(global, 10, "global layers")
  expect.eq(loc, 52, "local layers")
  -- layer i (0-based) is global iff (i+1) % 6 == 0; the last two layers are local
  expect.eq(layers[6].kind, "full", "layer 5")
  expect.eq(layers[60].kind, "full", "layer 59")
  expect.eq(layers[1].kind, "swa", "layer 0")
  expect.eq(layers[1].window, 1024, "window")
  expect.eq(layers[61].kind, "swa", "layer 60")
  expect.eq(layers[62].kind, "swa", "layer 61")
  expect.eq(kv.per_token(g), 62 * 8192, "all layers, inside the window")
  expect.eq(kv.per_token(g, {beyond_window = true}), 81920, "global layers: 10 x 8192")
  -- the window caps the 52 local layers at 1024 tokens
  expect.eq(kv.bytes(g, 512), 62 * 8192 * 512)
  expect.eq(kv.bytes(g, 4096), 10 * 8192 * 4096 + 52 * 8192 * 1024)
  expect.eq(kv.bytes(g, 4096), 771751936)
end)

test("qwen3-next: only layers 3, 7, ..., 47 own a cache", function()
  local m = kv.model "qwen3-next-80b-a3b"
  expect.eq(kv.cache_layers(m), 12)
  for _, l in ipairs(kv.layers(m)) do
    local full = (l.index + 1) % 4 == 0
    expect.eq(l.kind, full and "full" or "none", "layer " .. l.index)
    expect.eq(l.bytes_per_token, full and 2 * 2 * 256 * 2 or 0, "layer " .. l.index)
  end
end)

test("deepseek: latent 576 values per token per layer, no factor 2", function()
  for id, layers in pairs{["deepseek-v2"] = 60, ["deepseek-v3"] = 61} do
    local m = kv.model(id)
    local l = kv.layers(m)[1]
    expect.eq(l.kind, "latent", id)
    expect.eq(l.k_values, 576, id)
    expect.eq(l.v_values, 0, id)
    expect.eq(kv.per_token(m), layers * 576 * 2, id)
  end
  -- DeepSeek-V3 with its MTP layer cached: 62 layers
  expect.eq(kv.per_token(kv.model("deepseek-v3", {layers = 62})), 62 * 576 * 2)
  -- what-if: the same model with a plain K/V cache (K 192, V 128 per head, 128 heads)
  expect.eq(kv.per_token(kv.model("deepseek-v2", {attention = "full"})), 60 * 128 * (192 + 128) * 2)
end)

test("mistral: the 4096 window caps the cache; window = false is llama.cpp's full cache", function()
  local m = kv.model "mistral-7b-v0.1"
  expect.eq(kv.bytes(m, 32768), kv.bytes(m, 4096))
  expect.eq(kv.bytes(m, 32768), 131072 * 4096)
  local full = kv.model("mistral-7b-v0.1", {window = false})
  expect.eq(kv.bytes(full, 32768), 131072 * 32768)
  expect.eq(full.id, "mistral-7b-v0.1{window=false}")
end)

-- kv-facts.md "Derived figures", each to the precision quoted there
local QWEN = kv.model "qwen2.5-7b"
local FIGURES = {
  {"qwen 4096 f16 bytes", function() return kv.bytes(QWEN, 4096) end, "234,881,024 B"},
  {"qwen 4096 f16", function() return kv.bytes(QWEN, 4096) end, "224.0 MiB"},
  {"qwen 16384 f16", function() return kv.bytes(QWEN, 16384) end, "896.0 MiB"},
  {"qwen 32768 f16", function() return kv.bytes(QWEN, 32768) end, "1,792.0 MiB"},
  {"qwen per token", function() return kv.per_token(QWEN) end, "57,344 B"},
  {"qwen 2048 bytes", function() return kv.bytes(QWEN, 2048) end, "117,440,512 B"},
  {"qwen 2048 MiB", function() return kv.bytes(QWEN, 2048) end, "112 MiB"},
  {"qwen 2048 MB", function() return kv.bytes(QWEN, 2048) end, "117.4 MB"},
  {"qwen 2048 x100", function() return kv.bytes(QWEN, 2048, {seqs = 100}) end, "11.7 GB"},
  {"q8_0 share of f16", function() return kv.ratio_f16 "q8_0" end, "53.1%"},
  {"q4_0 share of f16", function() return kv.ratio_f16 "q4_0" end, "28.1%"},
  {"q8_0 bits per value", function() return kv.dtype("q8_0").bits_per_value end, "8.5"},
  {"q4_0 bits per value", function() return kv.dtype("q4_0").bits_per_value end, "4.5"},
  {"qwen 4096 q8_0", function() return kv.bytes(QWEN, 4096, {dtype = "q8_0"}) end, "119.0 MiB"},
  {"qwen 4096 q4_0", function() return kv.bytes(QWEN, 4096, {dtype = "q4_0"}) end, "63.0 MiB"},
  {"4-bit with scales vs 25%", function() return kv.ratio_f16 "q4_0" / 0.25 - 1 end, "12.5%"},
  {"qwen GQA saving", function() return kv.gqa_ratio(QWEN) end, "7×"},
  {"qwen as MHA at 32768", function() return kv.bytes(kv.model(QWEN, {kv_heads = 28}), 32768) end, "12,544 MiB"},
  {"qwen as MHA at 32768 GiB", function() return kv.bytes(kv.model(QWEN, {kv_heads = 28}), 32768) end, "12.25 GiB"},
  {"MHA share of 24 GiB", function() return kv.bytes(kv.model(QWEN, {kv_heads = 28}), 32768) / (24 * GiB) end, "51%"},
  {"70B at 128K", function() return kv.bytes("llama-3.1-70b", 131072) end, "40.0 GiB"},
  {"70B at 128K in GB", function() return kv.bytes("llama-3.1-70b", 131072) end, "42.9 GB"},
  {"70B as MHA at 128K", function() return kv.bytes(kv.model("llama-3.1-70b", {kv_heads = 64}), 131072) end, "320 GiB"},
  {"qwen3-next at 128K", function() return kv.bytes("qwen3-next-80b-a3b", 131072) end, "3.0 GiB"},
  {"qwen3-next all 48 layers", function() return kv.bytes(kv.model("qwen3-next-80b-a3b", {every = 1}), 131072) end, "12.0 GiB"},
}
for _, f in ipairs(FIGURES) do
  test("derived figure: " .. f[1] .. " = " .. f[3], function() expect.quote(f[2](), f[3]) end)
end

test("the exact values behind the rounded figures", function()
  expect.eq(kv.bytes(QWEN, 4096), 234881024)
  expect.eq(kv.bytes(QWEN, 4096) / MiB, 224)
  expect.eq(kv.bytes(QWEN, 4096, {dtype = "q8_0"}), 119 * MiB)
  expect.eq(kv.bytes(QWEN, 4096, {dtype = "q4_0"}), 63 * MiB)
  expect.eq(kv.ratio_f16 "q8_0", 0.53125)
  expect.eq(kv.ratio_f16 "q4_0", 0.28125)
  expect.eq(kv.bytes(QWEN, 2048, {seqs = 100}), 11744051200)
  expect.eq(kv.bytes("llama-3.1-70b", 131072), 40 * GiB)
  expect.eq(kv.gqa_ratio(QWEN), 7)
  expect.eq(kv.bytes(kv.model(QWEN, {kv_heads = 28}), 32768), 12544 * MiB)
end)

test("kv-facts.md figures that do not hold as written", function()
  -- "28.1 vs 25 is a 12% relative error": 0.28125 / 0.25 - 1 is exactly 12.5%, which rounds
  -- half away from zero to 13%; quote 12.5% (or approximately 12%)
  expect.error(function() expect.quote(kv.ratio_f16 "q4_0" / 0.25 - 1, "12%") end,
    "quoted 12%, but value = 12.50%; rounds to 13% (half away from zero)")
  expect.quote(kv.ratio_f16 "q4_0" / 0.25 - 1, "≈12%")
  -- "weights already take about 4.2 GB (4168 MiB)": 4168 MiB is 4.37 GB = 4.07 GiB
  expect.quote(4168 * MiB, "4.37 GB")
  expect.quote(4168 * MiB, "4.07 GiB")
  expect.error(function() expect.quote(4168 * MiB, "4.2 GB") end, "quoted 4.2 GB, but value = 4.370 GB")
  expect.quote(4168 * MiB, "~4.2 GB") -- within the 5% default tolerance only
end)

-- Table 2 of the study-group notes: FP16, one sequence, Llama-2-7B shape, by n_kv_heads
local TABLE2 = {
  {"MHA", 32, "2.00 GiB", "64.00 GiB"},
  {"GQA", 8, "0.50 GiB", "16.00 GiB"},
  {"MQA", 1, "0.06 GiB", "2.00 GiB"},
}
for _, r in ipairs(TABLE2) do
  test("notes table 2: " .. r[1], function()
    local m = kv.model("llama-2-7b", {kv_heads = r[2]})
    expect.quote(kv.bytes(m, 4096), r[3])
    expect.quote(kv.bytes(m, 131072), r[4])
  end)
end
test("notes table 2: MQA at 4,096 is 0.0625 GiB exactly", function()
  expect.eq(kv.bytes(kv.model("llama-2-7b", {kv_heads = 1}), 4096), 0.0625 * GiB)
end)

test("dtype options: dtype, dtype_k, dtype_v", function()
  expect.eq(kv.bytes(QWEN, 4096, {dtype = "fp8"}), 112 * MiB)
  expect.eq(kv.bytes(QWEN, 4096, {dtype = "f32"}), 448 * MiB)
  expect.eq(kv.bytes(QWEN, 4096, {dtype_k = "q8_0"}), (119 + 224) / 2 * MiB)
  expect.eq(kv.bytes(QWEN, 4096, {dtype = "q4_0", dtype_v = "f16"}), (63 + 224) / 2 * MiB)
  expect.eq(kv.per_token(QWEN, {dtype = "fp8"}), 28672)
  local kivi = kv.group_quant{bits = 2, group = 32, scale_bytes = 2, zero_bytes = 2}
  expect.eq(kv.bytes(QWEN, 4096, {dtype = kivi}), 224 * MiB * 0.1875)
end)

test("engine rounding: llama.cpp pads cells to 256, vLLM rounds to pages", function()
  expect.eq(kv.bytes(QWEN, 4000, {pad = 256}), kv.bytes(QWEN, 4096))
  expect.eq(kv.bytes(QWEN, 4000, {engine = "llama.cpp"}), kv.bytes(QWEN, 4096))
  expect.eq(kv.bytes(QWEN, 4097, {engine = "llama.cpp"}), kv.bytes(QWEN, 4352))
  expect.eq(kv.bytes(QWEN, 4097, {block_size = 16}), kv.bytes(QWEN, 4112))
  expect.eq(kv.bytes(QWEN, 4097, {engine = "vllm"}), kv.bytes(QWEN, 4112))
  expect.eq(kv.bytes(QWEN, 4097, {block_size = 64}), kv.bytes(QWEN, 4160))
  expect.eq(kv.bytes(QWEN, 4096, {engine = "llama.cpp"}), kv.bytes(QWEN, 4096))
  -- per sequence: 3 sequences of 100 tokens take 3 x 256 cells
  expect.eq(kv.bytes(QWEN, 100, {pad = 256, seqs = 3}), 3 * kv.bytes(QWEN, 256))
  -- windowed layers: the window, then rounded
  expect.eq(kv.bytes("gemma-3-27b", 5000, {pad = 256}), 10 * 8192 * 5120 + 52 * 8192 * 1024)
  expect.eq(kv.bytes(QWEN, 0, {pad = 256}), 0)
end)

test("CLA: sharing one cache per k layers", function()
  local m = kv.model("llama-3.1-70b", {cla = 2})
  expect.eq(kv.cache_layers(m), 40)
  expect.eq(kv.bytes(m, 131072), 20 * GiB)
  expect.eq(kv.cache_layers(kv.model("llama-3.1-70b", {cla = 3})), 27) -- ceil(80 / 3)
  local l = kv.layers(m)
  expect.eq(l[1].owns_cache, true)
  expect.eq(l[2].owns_cache, false)
  expect.eq(l[2].bytes_per_token, 0)
end)

test("models from specs, from a base, and from a model", function()
  local m = kv.model{layers = 28, kv_heads = 4, head_dim = 128}
  expect.eq(kv.per_token(m), 57344)
  local g = kv.model{base = "gemma-3-27b", window = 4096}
  expect.eq(kv.bytes(g, 4096), 62 * 8192 * 4096)
  expect.eq(g.id, "gemma-3-27b{window=4096}")
  expect.eq(g.what_if, true)
  local mha = kv.model(QWEN, {kv_heads = 28})
  expect.eq(mha.id, "qwen2.5-7b{kv_heads=28}")
  local both = kv.model(mha, {head_dim = 64})
  expect.eq(kv.per_token(both), 2 * 28 * 28 * 64 * 2)
  expect.eq(kv.per_token(kv.model{layers = 2, kv_heads = 1, head_dim = 64, head_dim_v = 32}), 2 * (64 + 32) * 2)
  expect.eq(kv.per_token(kv.model{layers = 4, attention = "latent", latent = 100}), 4 * 100 * 2)
  -- the preset table is not changed by overrides
  expect.eq(kv.per_token "qwen2.5-7b", 57344)
end)

test("max_tokens and max_seqs", function()
  expect.eq(kv.max_tokens(QWEN, 24 * GiB), 449389) -- floor(24 GiB / 57344 B)
  expect.eq(kv.bytes(QWEN, 449389) <= 24 * GiB, true)
  expect.eq(kv.bytes(QWEN, 449390) > 24 * GiB, true)
  expect.eq(kv.max_tokens("mistral-7b-v0.1", GiB), math.huge) -- stops growing at the window
  expect.eq(kv.max_tokens(QWEN, 0), 0)
  expect.eq(kv.max_seqs(QWEN, 24 * GiB, 4096), 109)
  expect.eq(kv.max_seqs(QWEN, 224 * MiB, 4096), 1)
end)

local ERRORS = {
  {function() kv.model "qwen-7b" end,
    'unknown model "qwen-7b"; known: ' .. table.concat(kv.presets(), ", ")},
  {function() kv.bytes(QWEN, 4096, {dtype = "q3_k"}) end,
    'unknown dtype "q3_k"; known: bf16, f16, f32, fp8, fp8_e4m3, fp8_e5m2, int8, iq4_nl, q4_0, '
    .. "q4_1, q5_0, q5_1, q8_0 (or a dtype made by group_quant{...})"},
  {function() kv.bytes(QWEN, 4096, {dtyp = "f16"}) end,
    'kv.bytes: unknown option "dtyp"; known: block_size, dtype, dtype_k, dtype_v, engine, pad, seqs, ubatch'},
  {function() kv.bytes(QWEN, -1) end, "tokens must be an integer in [0, 281474976710656], got -1"},
  {function() kv.bytes(QWEN, 1.5) end, "tokens must be an integer in [0, 281474976710656], got 1.5"},
  {function() kv.bytes(QWEN, "4096") end, 'tokens must be an integer in [0, 281474976710656], got "4096"'},
  {function() kv.bytes(QWEN, 10, {seqs = 0}) end, "seqs must be at least 1"},
  {function() kv.bytes(QWEN, 10, {pad = 256, block_size = 16}) end,
    "give pad (llama.cpp cells) or block_size (vLLM pages), not both"},
  {function() kv.bytes(QWEN, 10, {engine = "sglang"}) end, 'unknown engine "sglang"; known: llama.cpp, vllm'},
  {function() kv.bytes(kv.model{layers = 1, kv_heads = 1, head_dim = 48}, 10, {dtype = "q8_0"}) end,
    "q8_0 stores blocks of 32 values, but a row has 48 values (not a multiple)"},
  {function() kv.model{layers = 0, kv_heads = 1, head_dim = 1} end, "kv.model: layers must be in [1, 10000], got 0"},
  {function() kv.model{layers = 2, kv_heads = 1} end, "kv.model: head_dim must be an integer, got nil"},
  {function() kv.model{layers = 2, heads = 1} end,
    'kv.model: unknown field "heads"; known: attention, base, cla, every, head_dim, head_dim_v, id, '
    .. "kv_heads, latent, layers, max_context, name, other, q_heads, source, window"},
  {function() kv.model(QWEN, {layers = false}) end, "kv.model: layers cannot be false"},
  {function() kv.model{layers = 4, kv_heads = 1, head_dim = 8, every = 2} end,
    "kv.model: every = 2 needs other = one of full, latent, none, swa (the kind of the remaining layers), got nil"},
  {function() kv.model{layers = 4, kv_heads = 1, head_dim = 8, attention = "mamba"} end,
    'kv.model: attention must be one of full, latent, swa, got "mamba"'},
  {function() kv.model{layers = 4, attention = "latent"} end, "kv.model: latent must be an integer, got nil"},
  {function() kv.model(42) end, "kv.model: expects a preset id or a table, got number"},
  {function() kv.per_token(QWEN, {beyond = true}) end,
    'kv.per_token: unknown option "beyond"; known: beyond_window, dtype, dtype_k, dtype_v'},
  {function() kv.gqa_ratio(kv.model{layers = 1, kv_heads = 1, head_dim = 8}) end,
    'kv.gqa_ratio: model "?" has no q_heads/kv_heads'},
  {function() kv.bytes({}, 1) end, "expected a model (kv.model ...) or a preset id, got table"},
}
for i, c in ipairs(ERRORS) do
  test("error " .. i .. ": " .. c[2]:sub(1, 40), function() expect.error(c[1], c[2]) end)
end

test("errors carry the caller's location, not the library's", function()
  local ok, msg = pcall(function() kv.bytes(QWEN, 4096, {dtype = "q3_k"}) end)
  expect.eq(ok, false)
  -- library chunks are checks/*.lua; the location must be this test file's
  expect.eq(msg:find("checks/", 1, true), nil, "message " .. msg)
  expect.eq(msg:match("^[^\n]+:%d+: unknown dtype") ~= nil, true, "message " .. msg)
end)

-- A page's own preset: kv.add_model checks the shape as checks/models.yaml is checked.
test("add_model: a page's preset, then kv.model and kv.bytes by its id", function()
  expect.eq(kv.add_model{id = "tiny-1b", name = "Tiny-1B", layers = 16, kv_heads = 4,
    head_dim = 64, source = "config.json of tiny-1b"}, "tiny-1b")
  expect.eq(kv.per_token "tiny-1b", 2 * 16 * 4 * 64 * 2)
  expect.eq(kv.model("tiny-1b").name, "Tiny-1B")
end)

test("add_model: shape errors say which field and what was wrong", function()
  expect.error(function() kv.add_model{id = "x", name = "X", layers = "28", kv_heads = 4,
    head_dim = 128, source = "s"} end, 'kv.add_model: model "x": layers must be an integer, got "28"')
  expect.error(function() kv.add_model{id = "x", name = "X", layers = 2, kv_heads = 4,
    head_dim = 128} end, 'kv.add_model: model "x": source is missing (required: name, layers, kv_heads, head_dim, source)')
  expect.error(function() kv.add_model{id = "x", name = "X", layers = 2, kv_heads = 4,
    head_dim = 128, source = "s", heads = 3} end, 'kv.add_model: model "x": unknown field "heads"; known: attention, cla, every, head_dim, '
    .. "head_dim_v, kv_heads, latent, layers, max_context, name, other, q_heads, source, window")
  expect.error(function() kv.add_model{id = "Bad Id", name = "X"} end,
    'kv.add_model: model id "Bad Id" must be lower-case letters, digits, \'.\', \'_\' and \'-\' (at most 64)')
end)

-- The round-two presets against hand arithmetic from their config.json fields.
test("presets: round-two configs", function()
  expect.eq(kv.per_token(kv.model "qwen3-8b"), 2 * 36 * 8 * 128 * 2)
  expect.eq(kv.per_token(kv.model "qwen3-32b"), 2 * 64 * 8 * 128 * 2)
  expect.eq(kv.per_token(kv.model "deepseek-v3.2-exp"), 61 * 576 * 2)
  -- at or below the window every layer holds every token
  expect.eq(kv.bytes(kv.model "gpt-oss-20b", 128), 24 * 2 * 8 * 64 * 2 * 128)
  expect.eq(kv.bytes(kv.model "gpt-oss-120b", 128), 36 * 2 * 8 * 64 * 2 * 128)
  expect.eq(kv.bytes(kv.model "llama-4-scout", 8192), 48 * 2 * 8 * 128 * 2 * 8192)
  expect.eq(kv.bytes(kv.model "gemma-3n-e4b", 512), 20 * 2 * 2 * 256 * 2 * 512)
  -- past the window only the full layers grow: 18 of gpt-oss-120b, 12 of Scout, 4 of Gemma 3n
  expect.eq(kv.bytes(kv.model "gpt-oss-120b", 1128) - kv.bytes(kv.model "gpt-oss-120b", 128),
    18 * 2 * 8 * 64 * 2 * 1000)
  expect.eq(kv.bytes(kv.model "llama-4-scout", 9192) - kv.bytes(kv.model "llama-4-scout", 8192),
    12 * 2 * 8 * 128 * 2 * 1000)
  expect.eq(kv.bytes(kv.model "gemma-3n-e4b", 1512) - kv.bytes(kv.model "gemma-3n-e4b", 512),
    4 * 2 * 2 * 256 * 2 * 1000)
end)
