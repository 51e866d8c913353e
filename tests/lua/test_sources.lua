-- Tests of checks/sources.yaml: every source of kv-facts.md has an entry, every key the
-- library cites exists, and entries have the documented fields only.

local techniques = require "techniques"
local meas = require "meas"
local expect = require "expect"

local SOURCES = data "sources.yaml"

-- kv-facts.md "Sources", the paper-reported figures, the measurements, models.tsv configs
local REQUIRED = {
  "attention2017", "shazeer2019mqa", "ainslie2023gqa", "brandon2024cla", "deepseek2024v2",
  "mistral2023", "xiao2023streamingllm", "zhang2023h2o", "li2024snapkv", "cai2024pyramidkv",
  "liu2024kivi", "quest2024", "kwon2023pagedattention", "vllm_apc", "zheng2023sglang",
  "jamba2024", "hf_cache_strategies", "chawla2026kvcache", "factcheck_blog",
  "datawhale_kvcache_notes", "cfg_qwen2_5_7b", "cfg_llama3_1_8b", "cfg_llama3_1_70b",
  "cfg_llama2_7b", "cfg_mistral_7b_v0_1", "cfg_qwen3_next_80b_a3b", "cfg_gemma3_27b",
  "cfg_deepseek_v2", "cfg_deepseek_v3",
}
for _, key in ipairs(REQUIRED) do
  test("source " .. key, function()
    local e = SOURCES[key]
    expect.eq(type(e), "table", key)
    expect.eq(type(e.title), "string", key .. " title")
  end)
end

test("entries: known fields, key syntax, years as numbers", function()
  local fields = {title = true, authors = true, year = true, url = true, note = true, figures = true}
  for key, e in pairs(SOURCES) do
    expect.eq(key:match("^[a-z][a-z0-9_]*$") ~= nil, true, "key " .. key)
    for f in pairs(e) do expect.eq(fields[f], true, key .. " field " .. tostring(f)) end
    if e.year ~= nil then expect.eq(math.type(e.year), "integer", key .. " year") end
    if e.url ~= nil then expect.eq(e.url:sub(1, 8), "https://", key .. " url") end
  end
end)

test("the paper-reported figures sit with their sources", function()
  expect.eq(SOURCES.quest2024.figures[1], "up to 7.03x self-attention speed-up")
  expect.eq(SOURCES.liu2024kivi.figures[1], "2.6x lower peak memory")
  expect.eq(SOURCES.li2024snapkv.figures[1], "8.2x memory efficiency and 3.6x decode speed at 16K")
  expect.eq(SOURCES.cai2024pyramidkv.figures[1], "matches full-cache quality keeping 12% of the cache")
  expect.eq(SOURCES.kwon2023pagedattention.figures[1], "PagedAttention (vLLM): 2-4x throughput at the same latency")
  expect.eq(SOURCES.brandon2024cla.figures[1], "CLA: a further 2x on top of MQA/GQA")
end)

test("every key the library cites exists", function()
  for _, t in ipairs(techniques.catalogue()) do
    if t.cite then expect.eq(type(SOURCES[t.cite]), "table", t.id .. " cites " .. t.cite) end
  end
  local r = meas.open("measurements/llamacpp-m5pro-qwen2.5-7b.yaml", {mark = function() end})
  expect.eq(type(SOURCES[r.provenance.cite]), "table", "measurements cite " .. r.provenance.cite)
end)
