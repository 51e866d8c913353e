-- Tests of checks/techniques.lua: the technique map, the factor each technique reduces,
-- stacking (40 -> 20 -> 10 -> 5 GiB) and the same-factor rule (GQA then MQA is an error).

local t = require "techniques"
local kv = require "kv"
local units = require "units"
local expect = require "expect"

local GiB = units.GiB

-- kv-facts.md technique map: id, factor reduced (nil: none)
local MAP = {
  {"gqa", "kv_heads"}, {"mqa", "kv_heads"}, {"cla", "layers"}, {"swa", "tokens"},
  {"streamingllm", "tokens"}, {"h2o", "tokens"}, {"snapkv", "tokens"}, {"pyramidkv", "tokens"},
  {"mla", "head_dim"}, {"fp8", "bytes_per_value"}, {"kivi", "bytes_per_value"},
  {"paged_attention", nil}, {"prefix_caching", nil}, {"cpu_offload", nil}, {"quest", nil},
  -- the seed had it with Quest; DeepSeek-V4's CSA/HCA store one entry per group of tokens
  {"compressed_sparse_attention", "tokens"},
  -- added after the seed
  {"nsa_dsa", nil}, {"hybrid_linear", "layers"}, {"tiered_offload", nil},
}
for _, c in ipairs(MAP) do
  test("catalogue: " .. c[1] .. " reduces " .. tostring(c[2]), function()
    local e = t.get(c[1])
    expect.eq(e.id, c[1])
    expect.eq(e.factor, c[2], c[1])
    expect.eq(t.factor_of(c[1]), c[2], c[1])
    expect.eq(e.source, "kv-facts.md technique map")
    expect.eq(e.stores, c[2] ~= nil, c[1] .. " stores less")
    if c[2] == nil then
      expect.eq(type(e.reduces), "string", c[1] .. " says what it reduces instead")
    end
  end)
end

test("catalogue: map order, and the twelve of the map", function()
  local all = t.catalogue()
  expect.eq(all[1].id, "gqa")
  expect.eq(all[#all].id, "tiered_offload")
  -- eviction and quantization count once each: twelve techniques in the seed's map
  local twelve = {}
  for _, e in ipairs(all) do if e.seed ~= false then twelve[e.group or e.id] = true end end
  local n = 0
  for _ in pairs(twelve) do n = n + 1 end
  expect.eq(n, 12)
  -- the seed said seven store less and five are operating-system ideas; with CSA/HCA
  -- classified by what DeepSeek-V4 does, it is eight and four
  local function count(stores_of)
    local stores, os = {}, {}
    for _, e in ipairs(all) do
      if e.seed ~= false then
        if stores_of(e) then stores[e.group or e.id] = true else os[e.id] = true end
      end
    end
    local a, b = 0, 0
    for _ in pairs(stores) do a = a + 1 end
    for _ in pairs(os) do b = b + 1 end
    return a, b
  end
  local a, b = count(function(e) if e.seed_stores ~= nil then return e.seed_stores end return e.stores end)
  expect.eq(a, 7)
  expect.eq(b, 5)
  a, b = count(function(e) return e.stores end)
  expect.eq(a, 8)
  expect.eq(b, 4)
  expect.eq(t.get("quest").reduces, "bytes read per decode step, not bytes stored")
  expect.eq(t.get("gqa").serving, "no: trained into the model")
  expect.eq(t.get("streamingllm").serving, "yes")
  expect.eq(t.get("h2o").serving:match("^no training, but needs attention weights") ~= nil, true)
  expect.eq(t.get("compressed_sparse_attention").serving, "no: trained")
end)

test("CSA/HCA and hybrid steps: what they keep", function()
  -- CSA: 1 entry per 4 tokens + 128 recent, at 1,048,576 tokens
  local n = 1048576
  expect.eq(t.step("compressed_sparse_attention", {ratio = 4, window = 128, tokens = n}).keep,
    (n // 4 + 128) / n)
  -- HCA: 1 entry per 128 tokens + 128 recent
  expect.eq(t.step("compressed_sparse_attention", {ratio = 128, window = 128, tokens = n}).keep,
    (n // 128 + 128) / n)
  -- shorter than the window: everything is kept
  expect.eq(t.step("compressed_sparse_attention", {ratio = 4, window = 128, tokens = 100}).keep, 1)
  expect.eq(t.step("hybrid_linear", {attention = 12, layers = 48}).keep, 0.25)
  expect.eq(t.step("hybrid_linear", {attention = 12, layers = 48}).factor, "layers")
end)

test("stacking: 40 GiB -> CLA2 -> FP8 -> 50% token budget -> 5 GiB", function()
  local base = kv.bytes("llama-3.1-70b", 131072)
  local s = t.stack(base, {t.step("cla", {k = 2}), t.step("fp8"), t.step("eviction", {budget = 0.5})})
  expect.eq(#s.values, 4)
  expect.eq(s.values[1], 40 * GiB)
  expect.eq(s.values[2], 20 * GiB)
  expect.eq(s.values[3], 10 * GiB)
  expect.eq(s.values[4], 5 * GiB)
  expect.eq(s.value, 5 * GiB)
  expect.quote(s.values[1], "40 GiB")
  expect.quote(s.steps[1].value, "20 GiB")
  expect.quote(s.steps[2].value, "10 GiB")
  expect.quote(s.steps[3].value, "5 GiB")
  expect.eq(s.steps[1].label, "CLA2")
  expect.eq(s.steps[2].label, "FP8")
  expect.eq(s.steps[3].label, "50% token budget")
  expect.eq(s.steps[1].factor, "layers")
  expect.eq(s.steps[2].factor, "bytes_per_value")
  expect.eq(s.steps[3].factor, "tokens")
  -- the stack agrees with the formula on the changed model
  expect.eq(s.values[3], kv.bytes(kv.model("llama-3.1-70b", {cla = 2}), 131072, {dtype = "fp8"}))
end)

test("stacking: GQA then MQA on the same factor is an error", function()
  expect.error(function()
    t.stack(320 * GiB, {t.step("gqa", {from = 64, to = 8}), t.step("mqa", {from = 8})})
  end, "GQA 64 -> 8 KV heads and MQA 8 -> 1 KV head both reduce n_kv_heads: they do not multiply "
    .. "(declare the second composable = true if it really stacks)")
  -- declared composable, it multiplies
  local s = t.stack(320 * GiB, {t.step("gqa", {from = 64, to = 8}), t.step("mqa", {from = 8, composable = true})})
  expect.eq(s.value, 5 * GiB)
  -- CLA on top of MQA/GQA reduces another factor: fine
  local c = t.stack(320 * GiB, {t.step("gqa", {from = 64, to = 8}), t.step("cla", {k = 2})})
  expect.eq(c.value, 20 * GiB)
end)

test("stacking: MHA 320 GiB -> GQA 64 -> 8 is the 40 GiB of Llama 3.1 70B", function()
  local mha = kv.bytes(kv.model("llama-3.1-70b", {kv_heads = 64}), 131072)
  expect.eq(t.stack(mha, {t.step("gqa", {from = 64, to = 8})}).value, kv.bytes("llama-3.1-70b", 131072))
end)

-- fraction kept per technique, from its parameters
local KEEP = {
  {"gqa", {from = 32, to = 8}, 0.25},
  {"mqa", {from = 8}, 0.125},
  {"cla", {k = 2}, 0.5},
  {"swa", {window = 4096, tokens = 32768}, 0.125},
  {"swa", {window = 4096, tokens = 1024}, 1},
  {"streamingllm", {sinks = 4, window = 1020, tokens = 4096}, 0.25},
  {"h2o", {budget = 0.2}, 0.2},
  {"snapkv", {budget = 0.5}, 0.5},
  {"pyramidkv", {budget = 0.12}, 0.12},
  {"mla", {from = 32768, to = 576}, 576 / 32768},
  {"fp8", {}, 0.5},
  {"fp8", {from = "f32"}, 0.25},
  {"kv_quant", {to = "q8_0"}, 0.53125},
  {"kv_quant", {to = "q4_0"}, 0.28125},
  {"kivi", {bits = 2, group = 32, scale_bytes = 2, zero_bytes = 2}, 0.1875},
  {"h2o", {keep = 0.3}, 0.3},
}
for i, c in ipairs(KEEP) do
  test("step keep " .. i .. ": " .. c[1], function()
    expect.eq(t.step(c[1], c[2]).keep, c[3], c[1])
  end)
end

test("FP8 in a block format really keeps 53%, not 50%", function()
  expect.quote(t.step("kv_quant", {to = "q8_0"}).keep, "53%")
end)

test("custom steps on a named factor", function()
  local s = t.step{factor = "tokens", keep = 0.5, label = "half the context"}
  expect.eq(s.label, "half the context")
  expect.eq(t.stack(8, {s}).value, 4)
  expect.eq(t.step{factor = "layers", keep = 0.25}.label, "keep 0.25 of layers")
end)

local ERRORS = {
  {function() t.step("paged_attention") end,
    "PagedAttention reduces no factor of the KV formula: it reduces allocation waste (physical allocation; "
    .. "the logical size is unchanged); it cannot be a step of a stack"},
  {function() t.step("quest") end,
    "Quest reduces no factor of the KV formula: it reduces bytes read per decode step, not bytes stored; "
    .. "it cannot be a step of a stack"},
  {function() t.step("cpu_offload") end,
    "CPU offload reduces no factor of the KV formula: it reduces device memory by placing KV in host memory "
    .. "(costs transfer and latency); it cannot be a step of a stack"},
  {function() t.step("prefix_caching") end,
    "prefix caching reduces no factor of the KV formula: it reduces duplicate prefixes across requests "
    .. "(saves prefill; shared-prefix kernels also read a shared prefix once per batch); it cannot be a step of a stack"},
  {function() t.step("nsa_dsa") end,
    "NSA / DSA reduces no factor of the KV formula: it reduces bytes read per decode step; stores a little "
    .. "more (compressed blocks or indexer keys); it cannot be a step of a stack"},
  {function() t.step("flash_attention") end,
    'unknown technique "flash_attention"; known: cla, compressed_sparse_attention, cpu_offload, eviction, '
    .. "fp8, gqa, h2o, hybrid_linear, kivi, kv_quant, mla, mqa, nsa_dsa, paged_attention, prefix_caching, "
    .. "pyramidkv, quest, snapkv, streamingllm, swa, tiered_offload"},
  {function() t.step("h2o", {budget = 1.5}) end, "h2o: budget must be a fraction in (0, 1], got 1.5"},
  {function() t.step("cla", {k = 2, n = 3}) end,
    'techniques.step cla: unknown option "n"; known: composable, factor, k, keep, label'},
  {function() t.step("gqa", {from = 32}) end, "gqa: to must be a positive number, got nil"},
  {function() t.step("gqa", {from = 8, to = 32}) end, "gqa: the fraction kept must be a fraction in (0, 1], got 4.0"},
  {function() t.step{factor = "speed", keep = 0.5} end,
    'techniques.step: factor must be one of bytes_per_value, head_dim, kv_heads, layers, tokens, got "speed"'},
  {function() t.step("fp8", {factor = "tokens"}) end, 'FP8 reduces bytes_per_value, not "tokens"'},
  {function() t.stack(1, {{keep = 0.5}}) end, "techniques.stack: step 1 is not a techniques.step(...)"},
  {function() t.stack(-1, {}) end, "techniques.stack: base must be a non-negative number of bytes, got -1"},
  {function() t.step("kv_quant", {}) end, 'kv_quant: give to = a dtype ("q8_0", "int8", ...)'},
}
for i, c in ipairs(ERRORS) do
  test("techniques error " .. i, function() expect.error(c[1], c[2]) end)
end
