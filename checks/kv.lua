-- kv: the KV-cache formula with real layer layouts.
--
--   bytes = sum over layers that own a cache of
--           (K values + V values per token) x bytes per value x cached tokens
--
-- which for a plain model is 2 x layers x kv_heads x head_dim x tokens x bytes_per_value.
-- Layer kinds: "full" (caches every token), "swa" (caches min(n, window) tokens), "latent"
-- (MLA: `latent` values per token, no K/V factor 2), "none" (linear or recurrent layers: no
-- per-token cache). CLA-k (`cla = k`) makes k consecutive cache layers share one cache.
--
-- kv.model returns a fresh model table (the caller owns it; the library never mutates it).
-- All results are plain numbers in base units: bytes, counts, ratios.

local fail = require "fail"
local dtypes = require "dtypes"
local models = require "models"
local units = require "units"

local M = {}

-- Bounds on every input number: generous for real models, small enough that no loop or
-- float product can run away.
local MAX_LAYERS, MAX_HEADS, MAX_DIM = 10000, 65536, 65536
local MAX_TOKENS = 1 << 48
local MAX_SEQS = 1000000

local SPEC_KEYS = {
  id = true, name = true, base = true, layers = true, q_heads = true, kv_heads = true,
  head_dim = true, head_dim_v = true, attention = true, window = true, latent = true,
  every = true, other = true, cla = true, max_context = true, source = true,
}
-- keys an override may set to false to remove them
local REMOVABLE = {window = true, every = true, cla = true, head_dim_v = true, q_heads = true}
local ATTENTION = {full = true, swa = true, latent = true}
local OTHER = {full = true, swa = true, latent = true, none = true}

local function S_int(what, v, lo, hi)
  if type(v) ~= "number" or v ~= math.floor(v) then
    fail.raisef("kv.model: %s must be an integer, got %s", what, fail.show(v))
  end
  if v < lo or v > hi then
    fail.raisef("kv.model: %s must be in [%d, %d], got %s", what, lo, hi, tostring(math.tointeger(v) or v))
  end
  return math.tointeger(v)
end

-- Integers stay integers when exact (and small enough to be exact); floats otherwise.
local function S_num(x)
  if x == math.floor(x) and math.abs(x) < 2 ^ 53 then return math.tointeger(x) end
  return x
end

local function S_copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

-- Spec -> model: validate every field, lay out the layers, group identical ones.
local function S_build(spec, label_overrides)
  for k in pairs(spec) do
    if not SPEC_KEYS[k] then
      fail.raisef("kv.model: unknown field %s; known: %s", fail.show(k), fail.keys(SPEC_KEYS))
    end
  end
  local m = {kind = "model"}
  m.layers = S_int("layers", spec.layers, 1, MAX_LAYERS)
  m.attention = spec.attention or "full"
  if not ATTENTION[m.attention] then
    fail.raisef("kv.model: attention must be one of %s, got %s", fail.keys(ATTENTION), fail.show(m.attention))
  end
  if spec.every then
    m.every = S_int("every", spec.every, 1, MAX_LAYERS)
    if m.every > 1 then
      m.other = spec.other
      if not OTHER[m.other] then
        fail.raisef("kv.model: every = %d needs other = one of %s (the kind of the remaining layers), got %s",
          m.every, fail.keys(OTHER), fail.show(m.other))
      end
    end
  elseif spec.other ~= nil and spec.other ~= false then
    fail.raise("kv.model: other is set but every is not (other names the layers that are not every k-th)")
  end
  -- kinds present decide which shape fields are needed
  local uses = {[m.attention] = true}
  if m.other and m.every and m.every > 1 then uses[m.other] = true end
  if uses.swa then
    if spec.window then
      m.window = S_int("window", spec.window, 1, MAX_TOKENS)
    end
    -- window = false: the engine ignores the window (llama.cpp's llama arch), swa -> full
  end
  if uses.latent then
    m.latent = S_int("latent", spec.latent, 1, MAX_DIM * 16)
  end
  if spec.kv_heads ~= nil or uses.full or uses.swa then
    m.kv_heads = S_int("kv_heads", spec.kv_heads, 1, MAX_HEADS)
    m.head_dim = S_int("head_dim", spec.head_dim, 1, MAX_DIM)
    m.head_dim_v = spec.head_dim_v and S_int("head_dim_v", spec.head_dim_v, 1, MAX_DIM) or m.head_dim
  end
  if spec.q_heads then m.q_heads = S_int("q_heads", spec.q_heads, 1, MAX_HEADS) end
  m.cla = spec.cla and S_int("cla", spec.cla, 1, MAX_LAYERS) or 1
  if spec.max_context then m.max_context = S_int("max_context", spec.max_context, 1, MAX_TOKENS) end
  m.id, m.name, m.source = spec.id, spec.name, spec.source
  if label_overrides then
    m.id = (m.id or "model") .. "{" .. label_overrides .. "}"
    m.what_if = true
  end

  -- per-layer layout, 0-based indices as in models.tsv
  local list, groups, gindex = {}, {}, {}
  local nth_cache = 0
  for i = 0, m.layers - 1 do
    local kind = m.attention
    if m.every and m.every > 1 and (i + 1) % m.every ~= 0 then kind = m.other end
    if kind == "swa" and not m.window then kind = "full" end
    local kv_k, kv_v = 0, 0
    if kind == "full" or kind == "swa" then
      kv_k, kv_v = m.kv_heads * m.head_dim, m.kv_heads * m.head_dim_v
    elseif kind == "latent" then
      kv_k = m.latent
    end
    local owns = false
    if kind ~= "none" then
      owns = nth_cache % m.cla == 0 -- CLA-k: the first of every k cache layers owns the cache
      nth_cache = nth_cache + 1
    end
    local window = kind == "swa" and m.window or nil
    list[#list + 1] = {index = i, kind = kind, owns_cache = owns, k_values = kv_k, v_values = kv_v, window = window}
    if owns then
      local key = kind .. ":" .. kv_k .. ":" .. kv_v .. ":" .. tostring(window)
      local g = gindex[key]
      if not g then
        g = {kind = kind, count = 0, k_values = kv_k, v_values = kv_v, window = window}
        gindex[key] = g
        groups[#groups + 1] = g
      end
      g.count = g.count + 1
    end
  end
  m.layer_list, m.groups = list, groups
  m.spec = S_copy(spec)
  return m
end

-- The spec to start from: a preset id, a model, or a spec table (with optional base).
local function S_spec_of(a)
  if type(a) == "string" then return models.get(a) end
  if type(a) ~= "table" then
    fail.raisef("kv.model: expects a preset id or a table, got %s", type(a))
  end
  if a.kind == "model" then return S_copy(a.spec) end
  if a.base ~= nil then
    local s = models.get(a.base)
    local keys = {}
    for k, v in pairs(a) do
      if k ~= "base" then
        if v == false and REMOVABLE[k] then s[k] = nil else s[k] = v end
        if k ~= "id" and k ~= "name" and k ~= "source" then keys[#keys + 1] = k end
      end
    end
    table.sort(keys)
    local parts = {}
    for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. tostring(a[k]) end
    return s, #parts > 0 and table.concat(parts, ",") or nil
  end
  return S_copy(a)
end

local function S_model(a, overrides)
  local spec, label = S_spec_of(a)
  if overrides ~= nil then
    if type(overrides) ~= "table" then
      fail.raisef("kv.model: overrides must be a table, got %s", type(overrides))
    end
    local keys = {}
    for k, v in pairs(overrides) do
      if not SPEC_KEYS[k] or k == "base" then
        fail.raisef("kv.model: unknown field %s; known: %s", fail.show(k), fail.keys(SPEC_KEYS))
      end
      if v == false then
        if not REMOVABLE[k] then fail.raisef("kv.model: %s cannot be false", k) end
        spec[k] = nil
      else
        spec[k] = v
      end
      keys[#keys + 1] = k
    end
    table.sort(keys)
    local parts = {label}
    for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. tostring(overrides[k]) end
    if #parts > 0 then label = table.concat(parts, ",") end
  end
  return S_build(spec, label)
end

-- kv.model "qwen2.5-7b"; kv.model("qwen2.5-7b", {kv_heads = 28}); kv.model(m, overrides);
-- kv.model{layers = 28, kv_heads = 4, head_dim = 128}; kv.model{base = "gemma-3-27b", window = 4096}.
M.model = fail.api(S_model)

local function S_as_model(m)
  if type(m) == "table" and m.kind == "model" then return m end
  if type(m) == "string" then return S_model(m) end
  fail.raisef("expected a model (kv.model ...) or a preset id, got %s", type(m))
end

local function S_tokens(what, n, hi)
  if type(n) ~= "number" or n ~= math.floor(n) or n < 0 or n > hi then
    fail.raisef("%s must be an integer in [0, %d], got %s", what, hi, fail.show(n))
  end
  return math.tointeger(n)
end

local function S_dtypes(opts)
  local base = opts.dtype or "f16"
  return dtypes.get(opts.dtype_k or base), dtypes.get(opts.dtype_v or base)
end

-- bytes per token of one group of layers (K row + V row)
local function S_row(g, dk, dv)
  return dtypes.row_bytes(dk, g.k_values) + dtypes.row_bytes(dv, g.v_values)
end

local BYTES_OPTS = {dtype = true, dtype_k = true, dtype_v = true, seqs = true, pad = true,
  block_size = true, engine = true, ubatch = true}
-- engine rounding (engine-formats.md): llama.cpp pads the cells to 256 since #17046,
-- per sequence for non-unified caches (GGML_PAD(n_ctx / n_seq_max, 256)); vLLM allocates
-- pages of block_size tokens, DEFAULT_BLOCK_SIZE 16.
-- llama.cpp's sliding-window layers (llama_kv_cache_iswa, commit 0ad4a86; checked by the
-- reproduced logs of make measure) keep GGML_PAD(min(cells, n_swa + n_ubatch), 256) cells
-- per sequence, not the window: room for one more micro-batch, padded like every cache.
-- n_ubatch defaults to 512 in llama.cpp's tools and context parameters.
local ENGINES = {["llama.cpp"] = {pad = 256, ubatch = 512}, vllm = {block_size = 16}}

local function S_round_to(opts)
  local r = 1
  if opts.engine ~= nil then
    local e = ENGINES[opts.engine]
    if not e then fail.raisef("unknown engine %s; known: %s", fail.show(opts.engine), fail.keys(ENGINES)) end
    r = e.pad or e.block_size
  end
  if opts.pad ~= nil and opts.block_size ~= nil then
    fail.raise("give pad (llama.cpp cells) or block_size (vLLM pages), not both")
  end
  local v = opts.pad or opts.block_size
  if v ~= nil then r = S_tokens(opts.pad and "pad" or "block_size", v, 1048576) end
  if r < 1 then fail.raise("pad and block_size must be at least 1") end
  return r
end

local function S_bytes(m, n, opts)
  m = S_as_model(m)
  n = S_tokens("tokens", n, MAX_TOKENS)
  opts = opts or {}
  if type(opts) ~= "table" then fail.raisef("kv.bytes: options must be a table, got %s", type(opts)) end
  fail.check_keys("kv.bytes", opts, BYTES_OPTS)
  local dk, dv = S_dtypes(opts)
  local seqs = opts.seqs == nil and 1 or S_tokens("seqs", opts.seqs, MAX_SEQS)
  if seqs < 1 then fail.raise("seqs must be at least 1") end
  local r = S_round_to(opts)
  local ubatch = nil -- set: sliding-window layers keep window + ubatch cells (llama.cpp)
  if opts.ubatch ~= nil then
    if opts.engine ~= "llama.cpp" then fail.raise("ubatch is llama.cpp's n_ubatch: give it with engine = \"llama.cpp\"") end
    ubatch = S_tokens("ubatch", opts.ubatch, 1048576)
    if ubatch < 1 then fail.raise("ubatch must be at least 1") end
  elseif opts.engine ~= nil and ENGINES[opts.engine] then
    ubatch = ENGINES[opts.engine].ubatch
  end
  local total = 0.0
  for _, g in ipairs(m.groups) do
    local t = n
    if g.window and ubatch then
      local base = ((n + r - 1) // r) * r
      t = math.min(base, g.window + ubatch)
    elseif g.window and g.window < t then
      t = g.window
    end
    t = ((t + r - 1) // r) * r
    total = total + S_row(g, dk, dv) * 1.0 * g.count * t -- float: no integer wrap
  end
  return S_num(total * seqs)
end

-- KV bytes for n tokens: kv.bytes(m, 4096), kv.bytes(m, 4096, {dtype = "q8_0", seqs = 100}).
-- Options: dtype (default f16), dtype_k, dtype_v, seqs (concurrent sequences of n tokens),
-- pad (round tokens up, llama.cpp cells), block_size (round up to pages, vLLM), engine
-- ("llama.cpp": pad 256, and sliding-window layers keep min(cells, window + ubatch) cells
-- padded to 256; "vllm": block_size 16), ubatch (llama.cpp's n_ubatch, default 512).
M.bytes = fail.api(S_bytes)

local PT_OPTS = {dtype = true, dtype_k = true, dtype_v = true, beyond_window = true}

-- Bytes per token over all layers that own a cache (sliding-window layers included: the
-- cost of a token while it is inside the window). {beyond_window = true}: only the layers
-- that keep every token (the cost of each token past the windows).
M.per_token = fail.api(function(m, opts)
  m = S_as_model(m)
  opts = opts or {}
  if type(opts) ~= "table" then fail.raisef("kv.per_token: options must be a table, got %s", type(opts)) end
  fail.check_keys("kv.per_token", opts, PT_OPTS)
  local dk, dv = S_dtypes(opts)
  local total = 0.0
  for _, g in ipairs(m.groups) do
    if not (opts.beyond_window and g.window) then
      total = total + S_row(g, dk, dv) * 1.0 * g.count
    end
  end
  return S_num(total)
end)

-- One table per layer (array order = layer index + 1): index (0-based), kind, owns_cache,
-- k_values, v_values, window, bytes_per_token (0 for layers that share or have no cache).
M.layers = fail.api(function(m, opts)
  m = S_as_model(m)
  opts = opts or {}
  fail.check_keys("kv.layers", opts, {dtype = true, dtype_k = true, dtype_v = true})
  local dk, dv = S_dtypes(opts)
  local out = {}
  for i, l in ipairs(m.layer_list) do
    local c = S_copy(l)
    c.bytes_per_token = l.owns_cache and S_num(S_row(l, dk, dv)) or 0
    out[i] = c
  end
  return out
end)

-- Number of layers that own a cache (12 for Qwen3-Next, 30 for a 60-layer model with CLA2).
M.cache_layers = fail.api(function(m)
  m = S_as_model(m)
  local n = 0
  for _, g in ipairs(m.groups) do n = n + g.count end
  return n
end)

-- Query heads per KV head: the GQA saving (28 / 4 = 7 for Qwen2.5-7B).
M.gqa_ratio = fail.api(function(m)
  m = S_as_model(m)
  if not m.q_heads or not m.kv_heads then
    fail.raisef("kv.gqa_ratio: model %s has no q_heads/kv_heads", fail.show(m.id or "?"))
  end
  return S_num(m.q_heads / m.kv_heads)
end)

-- Largest token count n with kv.bytes(m, n, opts) <= budget (bytes); math.huge when the
-- cache stops growing (every cache layer has a window, or no layer has a cache).
M.max_tokens = fail.api(function(m, budget, opts)
  m = S_as_model(m)
  if type(budget) ~= "number" or budget < 0 then
    fail.raisef("kv.max_tokens: budget must be a non-negative number of bytes, got %s", fail.show(budget))
  end
  if S_bytes(m, MAX_TOKENS, opts) <= budget then return math.huge end
  local lo, hi = 0, MAX_TOKENS -- bytes(lo) <= budget < bytes(hi), or lo == 0 too big
  if S_bytes(m, 0, opts) > budget then
    fail.raisef("kv.max_tokens: even 0 tokens take more than %s bytes", tostring(budget))
  end
  while hi - lo > 1 do
    local mid = (lo + hi) // 2
    if S_bytes(m, mid, opts) <= budget then lo = mid else hi = mid end
  end
  return lo
end)

-- How many sequences of n tokens fit in budget bytes: floor(budget / kv.bytes(m, n, opts)).
M.max_seqs = fail.api(function(m, budget, n, opts)
  if opts and opts.seqs then fail.raise("kv.max_seqs: seqs is the result, not an option") end
  local b = S_bytes(m, n, opts)
  if type(budget) ~= "number" or budget < 0 then
    fail.raisef("kv.max_seqs: budget must be a non-negative number of bytes, got %s", fail.show(budget))
  end
  if b == 0 then fail.raise("kv.max_seqs: a sequence takes 0 bytes") end
  return math.tointeger(budget // b) or budget // b
end)

-- Sorted preset ids.
M.presets = models.ids
M.add_model = models.add

-- dtypes, re-exported: kv.dtype "q8_0" (a table), kv.bytes_per_value, kv.ratio_f16,
-- kv.group_quant{bits=..., group=..., scale_bytes=..., zero_bytes=...}.
M.dtype = dtypes.get
M.dtypes = dtypes.names
M.bytes_per_value = dtypes.bytes_per_value
M.ratio_f16 = dtypes.ratio_f16
M.group_quant = dtypes.group_quant

M.units = units

return M
