-- Tests of the reproduced llama.cpp logs (checks/measurements/llamacpp-*.log, written by
-- make measure): llamacpp.contexts reads them, the manifest names them, and the library's
-- formula with engine = "llama.cpp" gives every KV cache size line to the printed 0.01 MiB.

local llamacpp = require "llamacpp"
local meas = require "meas"
local kv = require "kv"
local expect = require "expect"

local MANIFEST = "measurements/llamacpp-reproduced.yaml"
local PRESETS = {"qwen2.5-7b", "llama-3.1-8b", "gemma-3-27b", "deepseek-v2", "qwen3-next-80b-a3b"}
local CTXS = {4096, 16384, 32768}
local TYPES = {"f16", "q8_0", "q4_0"}
local MiB = kv.units.MiB

local function open(marks)
  return meas.open(MANIFEST, {mark = function(p) marks[#marks + 1] = p end})
end

test("manifest: reproduced evidence, pinned packages, one log per preset", function()
  local marks = {}
  local r = open(marks)
  expect.eq(r.provenance.evidence, "reproduced")
  expect.eq(r.provenance.engine, "llama.cpp")
  expect.eq(r.provenance.build:sub(1, 7), "0ad4a86")
  expect.eq(not not (r.provenance.packages:find("@node-llama-cpp/linux-x64@3.22.1 sha512-", 1, true)), true)
  expect.eq(not not (r.provenance.packages:find("node-llama-cpp@3.22.1 sha512-", 1, true)), true)
  expect.eq(#marks, 0)
  local names = r:names().logs
  expect.eq(#names, #PRESETS)
  for _, p in ipairs(PRESETS) do
    local log = r:log(p)
    expect.eq(log.build.commit, "0ad4a86")
    expect.eq(#log.contexts, #CTXS * #TYPES)
  end
  expect.eq(#marks, #PRESETS)
  expect.eq(marks[1].evidence, "reproduced")
  expect.eq(marks[1].file, MANIFEST)
end)

test("contexts: qwen2.5-7b as llama.cpp printed it", function()
  local log = open({}):log("qwen2.5-7b")
  local c = llamacpp.context(log, {n_ctx = 4096, type = "f16"})
  expect.eq(c.n_ctx_seq, 4096)
  expect.eq(c.n_seq_max, 1)
  expect.eq(c.n_ubatch, 512)
  expect.eq(#c.caches, 1)
  expect.eq(c.caches[1].cells, 4096)
  expect.eq(c.caches[1].layers, 28)
  expect.eq(c.kv_mib, 224)
  expect.eq(c.caches[1].k_mib, 112)
  expect.eq(c.breakdown.by_name.Host.context_mib, 224)
  expect.eq(llamacpp.context(log, {n_ctx = 4096, type = "q8_0"}).kv_mib, 119)
  expect.eq(llamacpp.context(log, {n_ctx = 4096, type = "q4_0"}).kv_mib, 63)
  expect.eq(llamacpp.context(log, {n_ctx = 32768, type = "f16"}).kv_mib, 1792)
  -- a quantized V cache runs with flash attention, and the log says so
  expect.eq(llamacpp.context(log, {n_ctx = 4096, type = "q4_0"}).flash_attn, "enabled")
end)

test("contexts: gemma-3-27b has a non-SWA and a SWA cache of window + ubatch cells", function()
  local log = open({}):log("gemma-3-27b")
  for _, n in ipairs(CTXS) do
    local c = llamacpp.context(log, {n_ctx = n, type = "f16"})
    expect.eq(#c.caches, 2)
    expect.eq(c.caches[1].cache, "non-SWA")
    expect.eq(c.caches[1].cells, n)
    expect.eq(c.caches[1].layers, 10)
    expect.eq(c.caches[2].cache, "SWA")
    expect.eq(c.caches[2].cells, 1536) -- GGML_PAD(min(n, 1024 + 512), 256)
    expect.eq(c.caches[2].layers, 52)
  end
end)

test("contexts: deepseek-v2 (MLA) caches K only", function()
  local c = llamacpp.context(open({}):log("deepseek-v2"), {n_ctx = 4096, type = "f16"})
  expect.eq(c.caches[1].v_mib, 0)
  expect.eq(c.caches[1].v_less, true)
  expect.eq(c.kv_mib, 270)
end)

test("contexts: qwen3-next keeps a recurrent state beside its 12-layer KV cache", function()
  local c = llamacpp.context(open({}):log("qwen3-next-80b-a3b"), {n_ctx = 4096, type = "f16"})
  expect.eq(c.caches[1].layers, 12)
  expect.eq(c.caches[2].kind, "recurrent")
  expect.eq(c.kv_mib, 96)
  expect.eq(not not (c.rs_mib > 0), true)
end)

-- every size line of every log, against kv.bytes with the engine's rounding
test("kv.bytes{engine = llama.cpp} matches all 45 reproduced contexts", function()
  local r = open({})
  local checked = 0
  for _, p in ipairs(PRESETS) do
    local log = r:log(p)
    for _, n in ipairs(CTXS) do
      for _, t in ipairs(TYPES) do
        local c = llamacpp.context(log, {n_ctx = n, type = t})
        local want = kv.bytes(p, n, {dtype = t, engine = "llama.cpp"})
        local got = c.kv_mib * MiB
        if math.abs(got - want) > 0.01 * MiB then
          error(string.format("%s n_ctx %d %s: engine %.2f MiB, kv.bytes %.4f MiB", p, n, t, c.kv_mib, want / MiB))
        end
        checked = checked + 1
      end
    end
  end
  expect.eq(checked, 45)
end)

test("kv.bytes: the SWA rule of llama.cpp, and what it was before", function()
  -- window 1024 + ubatch 512 = 1536 cells per sliding-window layer (52 of them), not 1024
  expect.eq(kv.bytes("gemma-3-27b", 4096, {engine = "llama.cpp"}), 10 * 8192 * 4096 + 52 * 8192 * 1536)
  expect.eq(kv.bytes("gemma-3-27b", 4096, {pad = 256}), 10 * 8192 * 4096 + 52 * 8192 * 1024)
  -- a context shorter than window + ubatch: the SWA cache is the whole (padded) context
  expect.eq(kv.bytes("gemma-3-27b", 1000, {engine = "llama.cpp"}), 62 * 8192 * 1024)
  expect.eq(kv.bytes("gemma-3-27b", 4096, {engine = "llama.cpp", ubatch = 2048}), 10 * 8192 * 4096 + 52 * 8192 * 3072)
  expect.error(function() kv.bytes("gemma-3-27b", 4096, {ubatch = 512}) end, "ubatch is llama.cpp's n_ubatch: give it with engine = \"llama.cpp\"")
end)

test("contexts: errors name the line", function()
  expect.error(function() llamacpp.contexts("nothing here\n", "x.log") end, "x.log: no llama_context found (no \"llama_context: constructing llama_context\" line)")
  expect.error(function()
    llamacpp.contexts("llama_context: constructing llama_context\nllama_context: n_ctx = 4096\n", "x.log")
  end, "x.log:1: llama_context without a KV cache size line")
  expect.error(function()
    llamacpp.contexts("llama_context: constructing llama_context\nllama_context: n_ctx = 4k\n", "x.log")
  end, "x.log:2: malformed llama_context n_ctx line")
  local log = llamacpp.contexts("llama_context: constructing llama_context\nllama_context: n_ctx = 4096\n"
    .. "llama_kv_cache: size =  224.00 MiB (  4096 cells,  28 layers,  1/1 seqs), K (f16):  112.00 MiB, V (f16):  112.00 MiB\n", "x.log")
  expect.error(function() llamacpp.context(log, {n_ctx = 8192, type = "f16"}) end,
    "llamacpp.context: no contexts with n_ctx = 8192, type_k = f16, type_v = f16; the log has: n_ctx 4096 f16/f16")
end)

-- llama-bench at the same commit prints load_mode and then lazy_mode (CSV/JSON always; the
-- markdown table only when they differ from the defaults, as "lm" and "lazy_mode"). Lines
-- constructed from tools/llama-bench/llama-bench.cpp get_fields() at 0ad4a86; made-up values.
test("llama-bench of 0ad4a86: load_mode and lazy_mode columns read as strings", function()
  local header = '"build_commit","build_number","cpu_info","gpu_info","backends","model_filename",'
    .. '"model_type","model_size","model_n_params","n_batch","n_ubatch","n_threads","cpu_mask",'
    .. '"cpu_strict","poll","type_k","type_v","n_gpu_layers","n_cpu_moe","split_mode","main_gpu",'
    .. '"no_kv_offload","flash_attn","devices","tensor_split","tensor_buft_overrides","load_mode",'
    .. '"lazy_mode","embeddings","no_op_offload","no_host","fit_target","fit_min_ctx","n_prompt",'
    .. '"n_gen","n_depth","test_time","avg_ns","stddev_ns","avg_ts","stddev_ts"'
  local row = '"0ad4a86","1","AMD EPYC","","CPU","m.gguf","qwen2 7B F16","1","2","2048","512","2",'
    .. '"0x0","0","50","q8_0","q8_0","99","0","layer","0","0","-1","auto","0.00","none","mmap",'
    .. '"auto","0","0","0","1024","4096","0","16","0","2026-12-01T12:00:00Z","1000","10","16.0","0.1"'
  local r = llamacpp.bench_csv(header .. "\n" .. row .. "\n", "b.csv").rows[1]
  expect.eq(r.load_mode, "mmap")
  expect.eq(r.lazy_mode, "auto")
  expect.eq(r.type_v, "q8_0")
  expect.eq(r.test, "tg16")
  local md = "| model | size | params | backend | threads | type_k | type_v | lm | lazy_mode | test | t/s |\n"
    .. "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
    .. "| qwen2 7B F16 | 1.00 GiB | 1.00 B | CPU | 2 | q8_0 | q8_0 | direct | on | tg16 | 16.00 ± 0.10 |\n"
  local m = llamacpp.bench_md(md, "b.md").rows[1]
  expect.eq(m.cells.lm, "direct")
  expect.eq(m.cells.lazy_mode, "on")
  expect.eq(m.type_k, "q8_0")
  expect.eq(m.ts_mean, 16.0)
end)
