-- Tests of checks/vllm.lua on the format samples of checks/samples/ and on broken input.

local vllm = require "vllm"
local expect = require "expect"

local function sample(name)
  local path = "samples/" .. name
  return data(path), path
end

test("observed V1 lines with worker prefixes", function()
  local r = vllm.kv_cache(sample "vllm-observed.log")
  expect.eq(#r.entries, 3)
  expect.eq(r.available_gib, 55.15)
  expect.eq(r.tokens, 451744)
  expect.eq(r.max_model_len, 4096)
  expect.eq(r.max_concurrency, 110.29)
  local e = r.entries
  expect.eq(e[1].kind, "available")
  expect.eq(e[1].line, 4)
  expect.eq(e[1].process_scoped, false)
  expect.eq(e[1].prefix, "(EngineCore_DP0 pid=3021) INFO 09-23 18:12:33 [gpu_worker.py:298] ")
  expect.eq(e[2].kind, "kv_tokens")
  expect.eq(e[2].tokens, 451744)
  expect.eq(e[3].kind, "concurrency")
  expect.eq(e[3].line, 6)
  -- uniform model: concurrency = tokens / max_model_len (blocks of 16 divide both)
  expect.quote(r.tokens / r.max_model_len, "110.29x")
end)

test("constructed lines: one-line form, V0, override, cp, process-scoped", function()
  local r = vllm.kv_cache(sample "vllm-constructed.log")
  local kinds = {}
  for i, x in ipairs(r.entries) do kinds[i] = x.kind end
  expect.eq(table.concat(kinds, " "), "available override cp_multiply kv_tokens blocks concurrency")
  local e = r.entries
  expect.eq(e[1].gib, 20)
  expect.eq(e[1].process_scoped, true)
  expect.eq(e[2].num_gpu_blocks, 8192)
  expect.eq(e[2].num_gpu_blocks_override, 1024)
  expect.eq(e[3].cp_world_size, 4)
  expect.eq(e[3].pcp_world_size, 2)
  expect.eq(e[3].dcp_world_size, 2)
  expect.eq(e[4].tokens, 16384)
  expect.eq(e[4].max_model_len, 8192)
  expect.eq(e[4].max_concurrency, 2)
  expect.eq(e[5].gpu_blocks, 2048)
  expect.eq(e[5].cpu_blocks, 512)
  expect.eq(e[5].prefix, "[myprefix] INFO 01-01 00:00:03 [llm_engine.py:400] ")
  expect.eq(e[6].max_model_len, 4096)
  expect.eq(e[6].max_concurrency, 8)
  -- summaries only where every line agrees: two max_model_len values (8192, 4096) clash
  expect.eq(r.tokens, 16384)
  expect.eq(r.available_gib, 20)
  expect.eq(r.gpu_blocks, 2048)
  expect.eq(r.cpu_blocks, 512)
  expect.eq(r.max_model_len, nil)
  expect.eq(r.max_concurrency, nil)
end)

test("a bad thousands separator names the file and line", function()
  expect.error(function() vllm.kv_cache(sample "vllm-broken.log") end,
    "samples/vllm-broken.log:4: malformed vLLM GPU KV cache size line")
end)

local BAD = {
  {"INFO Available KV cache memory: lots GiB", "malformed vLLM Available KV cache memory line"},
  {"INFO Available KV cache memory: 9.25 GiB (per GPU)", "malformed vLLM Available KV cache memory line"},
  {"INFO GPU KV cache size: 1,234 blocks", "malformed vLLM GPU KV cache size line"},
  {"INFO GPU KV cache size: 1,234 tokens, and more", "malformed vLLM GPU KV cache size line"},
  {"INFO GPU KV cache size: 1,234 tokens, Maximum concurrency for 4,096 tokens per request: 1.0",
    "malformed vLLM GPU KV cache size line"},
  {"INFO Maximum concurrency for 4,096 tokens per request: 110.29", "malformed vLLM Maximum concurrency line"},
  {"INFO Maximum concurrency for 40,96 tokens per request: 1.00x", "malformed vLLM Maximum concurrency line"},
  {"INFO # GPU blocks: 1", "malformed vLLM # GPU blocks line"},
  {"INFO Overriding num_gpu_blocks=1 with something", "malformed vLLM num_gpu_blocks override line"},
  {"INFO Multiplying the GPU KV cache size by the cp_world_size two", "malformed vLLM cp_world_size line"},
}
for i, c in ipairs(BAD) do
  test("broken line " .. i, function()
    expect.error(function() vllm.kv_cache("INFO starting\n" .. c[1] .. "\n", "v.log") end, "v.log:2: " .. c[2])
  end)
end

test("several workers that agree, and that do not", function()
  local r = vllm.kv_cache("(w0) Available KV cache memory: 9.25 GiB\n(w1) Available KV cache memory: 9.25 GiB\n", "v.log")
  expect.eq(r.available_gib, 9.25)
  r = vllm.kv_cache("(w0) Available KV cache memory: 9.25 GiB\n(w1) Available KV cache memory: 9.00 GiB\n", "v.log")
  expect.eq(r.available_gib, nil)
  expect.eq(r.entries[2].gib, 9)
end)

test("no vLLM line at all is an error", function()
  expect.error(function() vllm.kv_cache("INFO hello\n", "v.log") end, "v.log: no vLLM KV cache lines found")
  expect.error(function() vllm.kv_cache({}) end, "vllm.kv_cache: expects the text of a log (a string), got table")
end)
