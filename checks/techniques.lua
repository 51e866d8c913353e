-- techniques: the technique map and technique stacking.
--
-- Each technique of kv-facts.md "The technique map" declares the factor of the formula
--   bytes = 2 x n_layers x n_kv_heads x d_head x n_tokens x bytes_per_value
-- that it reduces ("layers", "kv_heads", "head_dim", "tokens", "bytes_per_value"), or none:
-- paging, prefix reuse and offloading remove waste or move bytes; Quest and compressed sparse
-- attention cut bytes read per step, not bytes stored. A step is a technique with the
-- fraction of its factor that it keeps; a stack multiplies steps on distinct factors and
-- refuses two steps on the same factor (GQA then MQA) unless the later one is declared
-- composable. All tables returned are fresh; callers own them.

local fail = require "fail"
local dtypes = require "dtypes"

local M = {}

-- The five factors of the formula, as pages name them.
M.factors = {
  layers = "n_layers that own a cache",
  kv_heads = "n_kv_heads",
  head_dim = "d_head (stored width)",
  tokens = "n_tokens",
  bytes_per_value = "bytes_per_value",
}

local MAP = "kv-facts.md technique map"
local TRAINED = "no: trained into the model"
-- Score-based eviction needs no training, but it reads attention weights that fused
-- FlashAttention and paged kernels never write out; serving engines do not ship it.
local NEEDS_SCORES = "no training, but needs attention weights: not in vLLM, SGLang or mainline llama.cpp"

-- Catalogue, in the order of the technique map. serving: the map's "can be switched on at
-- serving time?" column. group: the twelve techniques of the map count eviction and
-- quantization once each. stores: true for those that store less or more coarsely, false
-- for the operating-system ideas (os: the analogy the facts give). seed = false: added
-- after the seed's twelve. seed_stores: the seed's own classification where it was wrong.
local CATALOGUE = {
  {id = "gqa", name = "GQA", long = "grouped-query attention", factor = "kv_heads",
    serving = TRAINED, stores = true, cite = "ainslie2023gqa"},
  {id = "mqa", name = "MQA", long = "multi-query attention", factor = "kv_heads",
    serving = TRAINED, stores = true, cite = "shazeer2019mqa"},
  {id = "cla", name = "CLA", long = "cross-layer attention", factor = "layers",
    serving = "no: trained", stores = true, cite = "brandon2024cla"},
  {id = "swa", name = "SWA", long = "sliding-window attention", factor = "tokens",
    serving = "no: trained", stores = true, cite = "mistral2023"},
  {id = "streamingllm", name = "StreamingLLM", long = "attention sinks + recent window",
    factor = "tokens", serving = "yes", stores = true, group = "eviction", cite = "xiao2023streamingllm"},
  {id = "h2o", name = "H2O", long = "eviction (importance scores under a budget)", factor = "tokens",
    serving = NEEDS_SCORES, stores = true, group = "eviction", cite = "zhang2023h2o"},
  {id = "snapkv", name = "SnapKV", long = "eviction (importance scores under a budget)", factor = "tokens",
    serving = NEEDS_SCORES, stores = true, group = "eviction", cite = "li2024snapkv"},
  {id = "pyramidkv", name = "PyramidKV", long = "eviction (importance scores under a budget)", factor = "tokens",
    serving = NEEDS_SCORES, stores = true, group = "eviction", cite = "cai2024pyramidkv"},
  {id = "eviction", name = "token budget", long = "eviction under a token budget (any policy)",
    factor = "tokens", serving = "yes", stores = true, group = "eviction"},
  {id = "mla", name = "MLA", long = "multi-head latent attention", factor = "head_dim",
    serving = "no: trained", stores = true, cite = "deepseek2024v2"},
  {id = "fp8", name = "FP8", long = "8-bit floating-point KV cache", factor = "bytes_per_value",
    serving = "yes", stores = true, group = "quantization"},
  {id = "kivi", name = "KIVI", long = "2-bit KV quantization, per-channel K / per-token V",
    factor = "bytes_per_value", serving = "yes", stores = true, group = "quantization", cite = "liu2024kivi"},
  {id = "kv_quant", name = "KV quantization", long = "cache stored in another dtype (q8_0, int8 ...)",
    factor = "bytes_per_value", serving = "yes", stores = true, group = "quantization"},
  {id = "paged_attention", name = "PagedAttention", long = "fixed-size blocks, no fragmentation",
    serving = "yes", stores = false, os = "paging", cite = "kwon2023pagedattention",
    reduces = "allocation waste (physical allocation; the logical size is unchanged)"},
  {id = "prefix_caching", name = "prefix caching", long = "prefix reuse across requests (vLLM APC, SGLang RadixAttention)",
    serving = "yes", stores = false, os = "dedup", cite = "vllm_apc",
    reduces = "duplicate prefixes across requests (saves prefill; shared-prefix kernels also read a shared prefix once per batch)"},
  {id = "cpu_offload", name = "CPU offload", long = "offloading KV to CPU DRAM",
    serving = "yes", stores = false, os = "swap",
    reduces = "device memory by placing KV in host memory (costs transfer and latency)"},
  {id = "quest", name = "Quest", long = "query-aware sparse reads",
    serving = "yes", stores = false, os = "working set", cite = "quest2024",
    reduces = "bytes read per decode step, not bytes stored"},
  -- The seed put compressed sparse attention with Quest ("reads less, stores the same"). That
  -- fits NSA and DSA (below), not DeepSeek-V4's CSA/HCA: those keep one entry per 4 (CSA) or
  -- 128 (HCA) tokens plus a window of recent raw tokens, so they store fewer tokens.
  {id = "compressed_sparse_attention", name = "CSA/HCA", long = "compressed sparse attention (DeepSeek-V4): "
    .. "one entry per group of tokens plus a recent window", factor = "tokens",
    serving = "no: trained", stores = true, cite = "deepseek_v4_report", seed_stores = false},
  -- Added after the seed's map (seed = false): not counted in its twelve.
  {id = "nsa_dsa", name = "NSA / DSA", long = "natively trained sparse reads (NSA; DeepSeek-V3.2 DSA)",
    serving = "no: trained", stores = false, os = "working set", cite = "nsa2025", seed = false,
    reduces = "bytes read per decode step; stores a little more (compressed blocks or indexer keys)"},
  {id = "hybrid_linear", name = "hybrid linear attention", long = "linear or recurrent layers with a "
    .. "fixed per-sequence state next to a few attention layers", factor = "layers",
    serving = "no: trained", stores = true, cite = "gdn2024", seed = false},
  {id = "tiered_offload", name = "tiered offload", long = "host memory and storage as lower tiers of the "
    .. "KV cache; prefill/decode disaggregation", serving = "yes", stores = false, os = "memory hierarchy",
    cite = "lmcache", seed = false,
    reduces = "device memory held by idle sequences and prefixes (moves bytes between tiers)"},
}
local BY_ID = {}
for i, t in ipairs(CATALOGUE) do t.source = MAP; t.order = i; BY_ID[t.id] = t end

local function S_copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

local function S_get(id)
  if type(id) ~= "string" then fail.raisef("technique id must be a string, got %s", type(id)) end
  local t = BY_ID[id]
  if not t then fail.raisef("unknown technique %s; known: %s", fail.show(id), fail.keys(BY_ID)) end
  return t
end

-- The catalogue entry of a technique (a copy): id, name, long, factor (nil when it reduces no
-- factor), reduces (what it reduces instead), serving, stores, group, os, cite, source.
M.get = fail.api(function(id) return S_copy(S_get(id)) end)

-- All entries in map order (copies).
M.catalogue = fail.api(function()
  local out = {}
  for i, t in ipairs(CATALOGUE) do out[i] = S_copy(t) end
  return out
end)

-- The factor a technique reduces, or nil.
M.factor_of = fail.api(function(id) return S_get(id).factor end)

local function S_frac(what, v)
  if type(v) ~= "number" or v ~= v or v <= 0 or v > 1 then
    fail.raisef("%s must be a fraction in (0, 1], got %s", what, fail.show(v))
  end
  return v
end

local function S_pos(what, v)
  if type(v) ~= "number" or v ~= v or v <= 0 or v == math.huge then
    fail.raisef("%s must be a positive number, got %s", what, fail.show(v))
  end
  return v
end

local function S_fmt(x)
  return string.format("%.6g", x)
end

-- keep fraction and default label per technique, from its parameters
local KEEP = {}
function KEEP.gqa(p)
  return S_pos("gqa: to", p.to) / S_pos("gqa: from", p.from),
    string.format("GQA %s -> %s KV heads", S_fmt(p.from), S_fmt(p.to)), {from = true, to = true}
end
function KEEP.mqa(p)
  return 1 / S_pos("mqa: from", p.from), string.format("MQA %s -> 1 KV head", S_fmt(p.from)), {from = true}
end
function KEEP.cla(p)
  return 1 / S_pos("cla: k", p.k), "CLA" .. S_fmt(p.k), {k = true}
end
function KEEP.swa(p)
  local w, n = S_pos("swa: window", p.window), S_pos("swa: tokens", p.tokens)
  return math.min(w, n) / n, string.format("SWA window %s", S_fmt(w)), {window = true, tokens = true}
end
function KEEP.streamingllm(p)
  local s, w, n = S_pos("streamingllm: sinks", p.sinks), S_pos("streamingllm: window", p.window),
    S_pos("streamingllm: tokens", p.tokens)
  return math.min(s + w, n) / n, string.format("StreamingLLM %s sinks + %s recent", S_fmt(s), S_fmt(w)),
    {sinks = true, window = true, tokens = true}
end
local function S_budget(name)
  return function(p)
    local b = S_frac(name .. ": budget", p.budget)
    local label = string.format("%s%% token budget", S_fmt(b * 100))
    if name ~= "eviction" then label = BY_ID[name].name .. " " .. label end
    return b, label, {budget = true}
  end
end
KEEP.h2o, KEEP.snapkv, KEEP.pyramidkv, KEEP.eviction =
  S_budget("h2o"), S_budget("snapkv"), S_budget("pyramidkv"), S_budget("eviction")
function KEEP.mla(p)
  return S_pos("mla: to", p.to) / S_pos("mla: from", p.from),
    string.format("MLA %s -> %s values per token per layer", S_fmt(p.from), S_fmt(p.to)), {from = true, to = true}
end
function KEEP.compressed_sparse_attention(p)
  -- one cached entry per `ratio` tokens plus the `window` most recent raw tokens
  local r, w, n = S_pos("compressed_sparse_attention: ratio", p.ratio),
    S_pos("compressed_sparse_attention: window", p.window), S_pos("compressed_sparse_attention: tokens", p.tokens)
  return math.min(n, math.floor(n / r) + math.min(w, n)) / n,
    string.format("1 entry per %s tokens + %s recent", S_fmt(r), S_fmt(w)), {ratio = true, window = true, tokens = true}
end
function KEEP.hybrid_linear(p)
  local a, l = S_pos("hybrid_linear: attention", p.attention), S_pos("hybrid_linear: layers", p.layers)
  return a / l, string.format("%s of %s layers with attention", S_fmt(a), S_fmt(l)), {attention = true, layers = true}
end
local function S_dtype_keep(from, to)
  return dtypes.bytes_per_value(to) / dtypes.bytes_per_value(from or "f16")
end
function KEEP.fp8(p)
  return S_dtype_keep(p.from, "fp8"), "FP8", {from = true}
end
function KEEP.kv_quant(p)
  if p.to == nil then fail.raise("kv_quant: give to = a dtype (\"q8_0\", \"int8\", ...)") end
  local d = dtypes.get(p.to)
  return S_dtype_keep(p.from, d), d.name .. " cache", {from = true, to = true}
end
function KEEP.kivi(p)
  local d = dtypes.group_quant{bits = p.bits, group = p.group, scale_bytes = p.scale_bytes,
    zero_bytes = p.zero_bytes, name = "kivi"}
  return S_dtype_keep(p.from, d), string.format("KIVI %d-bit", p.bits),
    {from = true, bits = true, group = true, scale_bytes = true, zero_bytes = true}
end

local STEP_COMMON = {keep = true, label = true, composable = true, factor = true}

-- A stack step: techniques.step(id, params) or techniques.step{factor = ..., keep = ...}.
-- params: the technique's own (gqa {from, to}; mqa {from}; cla {k}; swa {window, tokens};
-- compressed_sparse_attention {ratio, window, tokens}; hybrid_linear {attention, layers};
-- streamingllm {sinks, window, tokens}; h2o/snapkv/pyramidkv/eviction {budget};
-- mla {from, to}; fp8 {from}; kv_quant {to, from}; kivi {bits, group, scale_bytes,
-- zero_bytes, from}) or keep = fraction kept; plus label, composable.
M.step = fail.api(function(id, params)
  if type(id) == "table" and params == nil then
    -- a custom step on a named factor
    local p = id
    fail.check_keys("techniques.step", p, STEP_COMMON)
    if not M.factors[p.factor] then
      fail.raisef("techniques.step: factor must be one of %s, got %s", fail.keys(M.factors), fail.show(p.factor))
    end
    local keep = S_frac("techniques.step: keep", p.keep)
    return {kind = "step", id = "custom", factor = p.factor, keep = keep,
      label = p.label or string.format("keep %s of %s", S_fmt(keep), p.factor), composable = p.composable == true}
  end
  local t = S_get(id)
  params = params or {}
  if type(params) ~= "table" then fail.raisef("techniques.step: params must be a table, got %s", type(params)) end
  if not t.factor then
    fail.raisef("%s reduces no factor of the KV formula: it reduces %s; it cannot be a step of a stack",
      t.name, t.reduces)
  end
  local keep, label
  if params.keep ~= nil then
    fail.check_keys("techniques.step " .. id, params, STEP_COMMON)
    keep = S_frac(id .. ": keep", params.keep)
    label = string.format("%s (keep %s)", t.name, S_fmt(keep))
  else
    local k, l, allowed = KEEP[id](params)
    for key in pairs(STEP_COMMON) do allowed[key] = true end
    fail.check_keys("techniques.step " .. id, params, allowed)
    keep, label = S_frac(id .. ": the fraction kept", k), l
  end
  if params.factor ~= nil and params.factor ~= t.factor then
    fail.raisef("%s reduces %s, not %s", t.name, t.factor, fail.show(params.factor))
  end
  return {kind = "step", id = id, factor = t.factor, keep = keep, label = params.label or label,
    composable = params.composable == true}
end)

-- Apply steps to base (bytes): techniques.stack(base, {step, step, ...}).
-- Returns {base, value, values = {base, after step 1, ...}, steps = {{id, label, factor,
-- keep, value}, ...}}. Two steps on the same factor are an error unless the later one is
-- declared composable = true.
M.stack = fail.api(function(base, steps)
  if type(base) ~= "number" or base < 0 then
    fail.raisef("techniques.stack: base must be a non-negative number of bytes, got %s", fail.show(base))
  end
  if type(steps) ~= "table" then fail.raise("techniques.stack: steps must be a list of techniques.step(...)") end
  local out = {base = base, values = {base}, steps = {}}
  local seen = {}
  local v = base
  for i, s in ipairs(steps) do
    if type(s) ~= "table" or s.kind ~= "step" then
      fail.raisef("techniques.stack: step %d is not a techniques.step(...)", i)
    end
    local prev = seen[s.factor]
    if prev and not s.composable then
      fail.raisef("%s and %s both reduce %s: they do not multiply (declare the second composable = true if it really stacks)",
        prev.label, s.label, M.factors[s.factor])
    end
    seen[s.factor] = seen[s.factor] or s
    v = v * s.keep
    out.values[#out.values + 1] = v
    out.steps[i] = {id = s.id, label = s.label, factor = s.factor, keep = s.keep, value = v}
  end
  out.value = v
  return out
end)

return M
