-- models: model presets for kv.model. The library's own come from a table of published
-- model configurations (models.tsv, one row each, checked against the config files and
-- model cards it names); a site adds its own in checks/models.yaml, merged over these.
--
-- Every preset is a spec in kv.model's language (see kv.lua and README.md) plus `name`,
-- `max_context` and `source`. Numbers are copied from models.tsv; `source` says which
-- columns and config copies they come from. models.get returns a fresh copy.
--
-- checks/models.yaml (optional, in the site's checks/):
--   my-model:
--     name: My-Model-7B
--     layers: 32
--     kv_heads: 8
--     head_dim: 128
--     max_context: 32768
--     source: "config.json of org/my-model-7b"
-- A preset with the id of a library preset replaces it. models.add (kv.add_model) adds one
-- for the current page only, with the same checks.

local fail = require "fail"

local M = {}

local TSV = "models.tsv"

local PRESETS = {
  ["qwen2.5-7b"] = {
    name = "Qwen2.5-7B-Instruct",
    layers = 28, q_heads = 28, kv_heads = 4, head_dim = 128, -- head_dim = hidden 3584 / 28
    attention = "full",                                      -- use_sliding_window=false
    max_context = 32768,                                     -- 131072 only with YaRN
    source = TSV .. " row Qwen2.5-7B-Instruct: config.json copies declaring _name_or_path "
      .. "Qwen/Qwen2.5-7B-Instruct and the official model card; 16-bit KV per token 57344 B",
  },
  ["llama-3.1-8b"] = {
    name = "Llama-3.1-8B",
    layers = 32, q_heads = 32, kv_heads = 8, head_dim = 128,
    attention = "full", max_context = 131072,
    source = TSV .. " row Llama-3.1-8B: config copies (mlx-community, NbAiLab); "
      .. "16-bit KV per token 131072 B",
  },
  ["llama-3.1-70b"] = {
    name = "Llama-3.1-70B",
    layers = 80, q_heads = 64, kv_heads = 8, head_dim = 128, -- hidden 8192 / 64 = 128
    attention = "full", max_context = 131072,
    source = TSV .. " row Llama-3.1-70B: config copies of base and Instruct; "
      .. "16-bit KV per token 327680 B",
  },
  ["llama-2-7b"] = {
    name = "Llama-2-7B",
    layers = 32, q_heads = 32, kv_heads = 32, head_dim = 128, -- MHA
    attention = "full", max_context = 4096,
    source = TSV .. " row Llama-2-7B: config copies (_name_or_path meta-llama/Llama-2-7b-hf); "
      .. "16-bit KV per token 524288 B",
  },
  ["mistral-7b-v0.1"] = {
    name = "Mistral-7B-v0.1",
    layers = 32, q_heads = 32, kv_heads = 8, head_dim = 128,
    attention = "swa", window = 4096, -- all 32 layers, same 4096-token window
    max_context = 32768,
    source = TSV .. " row Mistral-7B-v0.1: config copies and Mistral params.json; "
      .. "16-bit KV per token 131072 B. llama.cpp converts it to the llama arch without SWA "
      .. "and allocates the full context: use {window = false} for that engine",
  },
  ["qwen3-next-80b-a3b"] = {
    name = "Qwen3-Next-80B-A3B",
    layers = 48, q_heads = 16, kv_heads = 2, head_dim = 256,
    -- full_attention_interval=4: layer i (0-based) is full attention iff (i+1)%4==0 (12 layers);
    -- the other 36 are Gated DeltaNet with a fixed per-sequence state, no per-token KV
    attention = "full", every = 4, other = "none",
    max_context = 262144,
    source = TSV .. " row Qwen3-Next-80B-A3B: maxtext conversion script, vLLM Qwen3NextConfig "
      .. "defaults, llama.cpp qwen3next.cpp; 16-bit KV per token (12 full layers) 24576 B",
  },
  ["gemma-3-27b"] = {
    name = "Gemma-3-27B",
    layers = 62, q_heads = 32, kv_heads = 16, head_dim = 128,
    -- sliding_window_pattern 6: layer i (0-based) is global iff (i+1)%6==0 (10 global),
    -- the other 52 are local with a 1024-token window
    attention = "full", every = 6, other = "swa", window = 1024,
    max_context = 131072,
    source = TSV .. " row Gemma-3-27B: TensorRT-LLM test config copy, Gemma3TextConfig defaults, "
      .. "llama.cpp set_swa_pattern(6); 16-bit KV per token per layer 8192 B",
  },
  ["deepseek-v2"] = {
    name = "DeepSeek-V2",
    layers = 60, q_heads = 128, kv_heads = 128, head_dim = 192, head_dim_v = 128,
    -- MLA: engines cache the latent, kv_lora_rank 512 + qk_rope_head_dim 64 = 576 values
    -- per token per layer, no K/V factor 2; kv_heads/head_dim only matter for what-ifs
    attention = "latent", latent = 576,
    max_context = 163840,
    source = TSV .. " row DeepSeek-V2: DeepSeek-V2-Chat config.json (blame f1e9ce2c) and a "
      .. "GPTQ copy; 16-bit latent cache 60*576*2 = 69120 B/token",
  },
  ["deepseek-v3"] = {
    name = "DeepSeek-V3",
    layers = 61, q_heads = 128, kv_heads = 128, head_dim = 192, head_dim_v = 128,
    attention = "latent", latent = 576,
    max_context = 163840,
    source = TSV .. " row DeepSeek-V3: identical-architecture config copies and vLLM "
      .. "DeepseekV3Config defaults; 16-bit latent cache 61*576*2 = 70272 B/token "
      .. "(62 layers if the MTP layer is cached: {layers = 62})",
  },
  -- Round-two presets (issue 21). Each names the config.json in the model's own repository;
  -- the values were read from copies that quote that file (see checks/sources.yaml).
  ["qwen3-8b"] = {
    name = "Qwen3-8B",
    layers = 36, q_heads = 32, kv_heads = 8, head_dim = 128,
    attention = "full", max_context = 40960, -- 131072 only with YaRN added by the user
    source = "Qwen/Qwen3-8B config.json: num_hidden_layers 36, num_attention_heads 32, "
      .. "num_key_value_heads 8, head_dim 128, max_position_embeddings 40960",
  },
  ["qwen3-32b"] = {
    name = "Qwen3-32B",
    layers = 64, q_heads = 64, kv_heads = 8, head_dim = 128,
    attention = "full", max_context = 40960,
    source = "Qwen/Qwen3-32B config.json: num_hidden_layers 64, num_attention_heads 64, "
      .. "num_key_value_heads 8, head_dim 128, max_position_embeddings 40960",
  },
  ["gpt-oss-20b"] = {
    name = "gpt-oss-20b",
    layers = 24, q_heads = 64, kv_heads = 8, head_dim = 64,
    -- layer_types alternate sliding_attention (even index) and full_attention (odd index);
    -- each layer also has learned sink logits, which add no cached tokens
    attention = "full", every = 2, other = "swa", window = 128,
    max_context = 131072,
    source = "openai/gpt-oss-20b config.json: 24 layers, 64 q / 8 KV heads, head_dim 64, "
      .. "sliding_window 128 on alternate layers, max_position_embeddings 131072",
  },
  ["gpt-oss-120b"] = {
    name = "gpt-oss-120b",
    layers = 36, q_heads = 64, kv_heads = 8, head_dim = 64,
    attention = "full", every = 2, other = "swa", window = 128,
    max_context = 131072,
    source = "openai/gpt-oss-120b config.json: 36 layers, 64 q / 8 KV heads, head_dim 64, "
      .. "sliding_window 128 on alternate layers, max_position_embeddings 131072",
  },
  ["llama-4-scout"] = {
    name = "Llama-4-Scout-17B-16E",
    layers = 48, q_heads = 40, kv_heads = 8, head_dim = 128,
    -- no_rope_layer_interval 4: layer i (0-based) is a global NoPE layer iff (i+1)%4==0
    -- (12 layers); the other 36 use chunked attention (attention_chunk_size 8192), which
    -- never needs more than the current 8192-token chunk: modelled as an 8192 window
    attention = "full", every = 4, other = "swa", window = 8192,
    max_context = 10485760,
    source = "meta-llama/Llama-4-Scout-17B-16E config.json text_config: 48 layers, 40 q / "
      .. "8 KV heads, head_dim 128, attention_chunk_size 8192, max_position_embeddings 10485760",
  },
  ["gemma-3n-e4b"] = {
    name = "Gemma-3n-E4B (20 of 35 layers own a cache)",
    -- 35 layers, layer_types (4 sliding + 1 full) x 7; num_kv_shared_layers 15: the last 15
    -- layers reuse the K/V of the last earlier layer of their kind, so only the first 20
    -- (16 sliding, 4 full) hold a cache
    layers = 20, q_heads = 8, kv_heads = 2, head_dim = 256,
    attention = "full", every = 5, other = "swa", window = 512,
    max_context = 32768,
    source = "google/gemma-3n-E4B config.json text_config: num_hidden_layers 35, "
      .. "num_kv_shared_layers 15, 8 q / 2 KV heads, head_dim 256, sliding_window 512",
  },
  ["deepseek-v3.2-exp"] = {
    name = "DeepSeek-V3.2-Exp (MLA part)",
    layers = 61, q_heads = 128, kv_heads = 128, head_dim = 192, head_dim_v = 128,
    -- the MLA latent as in V3; DSA adds a lightning-indexer key per token per layer
    -- (index_head_dim 128, stored in FP8 with a scale by the engines), counted on the DSA card
    attention = "latent", latent = 576,
    max_context = 163840,
    source = "deepseek-ai/DeepSeek-V3.2-Exp config.json: 61 layers, kv_lora_rank 512, "
      .. "qk_rope_head_dim 64, index_n_heads 64, index_head_dim 128, index_topk 2048",
  },
}

-- The shape of a preset, as a site writes it: field -> "integer" or "string".
local FIELDS = {
  name = "string", source = "string", attention = "string", other = "string",
  layers = "integer", q_heads = "integer", kv_heads = "integer", head_dim = "integer",
  head_dim_v = "integer", window = "integer", latent = "integer", every = "integer",
  cla = "integer", max_context = "integer",
}
local REQUIRED = {"name", "layers", "kv_heads", "head_dim", "source"}

-- Checks one preset written by a site; returns its spec or nil and a message.
local function S_check(where, id, p)
  if type(id) ~= "string" or not id:match("^[a-z0-9][a-z0-9._-]*$") or #id > 64 then
    return nil, string.format("%s: model id %s must be lower-case letters, digits, '.', '_' "
      .. "and '-' (at most 64)", where, fail.show(id))
  end
  if type(p) ~= "table" then
    return nil, string.format("%s: model %q must be a map of fields, got %s", where, id, type(p))
  end
  local spec = {}
  for k, v in pairs(p) do
    local want = FIELDS[k]
    if not want then
      return nil, string.format("%s: model %q: unknown field %s; known: %s", where, id,
        fail.show(k), fail.keys(FIELDS))
    end
    local ok = want == "string" and type(v) == "string"
      or want == "integer" and math.type(v) == "integer"
    if not ok then
      return nil, string.format("%s: model %q: %s must be %s, got %s", where, id, k,
        want == "string" and "a string" or "an integer", fail.show(v))
    end
    spec[k] = v
  end
  for _, k in ipairs(REQUIRED) do
    if spec[k] == nil then
      return nil, string.format("%s: model %q: %s is missing (required: %s)", where, id, k,
        table.concat(REQUIRED, ", "))
    end
  end
  return spec
end

-- The library's own ids, before a site adds any (sorted).
local LIBRARY_IDS = {}
for k in pairs(PRESETS) do LIBRARY_IDS[#LIBRARY_IDS + 1] = k end
table.sort(LIBRARY_IDS)
M.library_ids = fail.api(function() return table.move(LIBRARY_IDS, 1, #LIBRARY_IDS, 1, {}) end)

-- The site's checks/models.yaml, when there is one (data looks in the site's checks/
-- before the library, which has none).
do
  local ok, doc = pcall(data, "models.yaml")
  if not ok then
    local msg = tostring(doc)
    if not (msg:find("no such file", 1, true) or msg:find("no checks/ folder", 1, true)) then
      error(msg, 0)
    end
  elseif type(doc) ~= "table" then
    error("checks/models.yaml: must be a map of model id to preset, got " .. type(doc), 0)
  else
    for id, p in pairs(doc) do
      local spec, why = S_check("checks/models.yaml", id, p)
      if not spec then error(why, 0) end
      PRESETS[id] = spec
    end
  end
end

-- Adds (or replaces) preset `id` for the current page: add{id = "x", name = ..., ...}.
M.add = fail.api(function(p)
  if type(p) ~= "table" then fail.raisef("kv.add_model: expects a table, got %s", type(p)) end
  local id, fields = p.id, {}
  for k, v in pairs(p) do if k ~= "id" then fields[k] = v end end
  local spec, why = S_check("kv.add_model", id, fields)
  if not spec then fail.raise(why) end
  PRESETS[id] = spec
  return id
end)

-- Sorted preset ids.
M.ids = fail.api(function()
  local ids = {}
  for k in pairs(PRESETS) do ids[#ids + 1] = k end
  table.sort(ids)
  return ids
end)

-- A fresh copy of the preset spec `id`; unknown ids are an error listing the known ones.
M.get = fail.api(function(id)
  if type(id) ~= "string" then fail.raisef("model id must be a string, got %s", type(id)) end
  local p = PRESETS[id]
  if not p then
    fail.raisef("unknown model %s; known: %s", fail.show(id), table.concat(M.ids(), ", "))
  end
  local c = {id = id}
  for k, v in pairs(p) do c[k] = v end
  return c
end)

return M
