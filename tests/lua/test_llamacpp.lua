-- Tests of checks/llamacpp.lua on the format samples of checks/samples/ (format samples,
-- not measurements) and on broken input.

local llamacpp = require "llamacpp"
local kv = require "kv"
local units = require "units"
local expect = require "expect"

local function sample(name)
  local path = "samples/" .. name
  return data(path), path
end

---------------------------------------------------------------------------------------------
-- memory breakdown

test("breakdown: three observed tables", function()
  local t = llamacpp.breakdown(sample "llamacpp-breakdown-observed.log")
  expect.eq(#t, 3)
  local a = t[1]
  expect.eq(a.line, 5)
  expect.eq(a.func, "llama_memory_breakdown_print")
  expect.eq(a.header, true)
  expect.eq(a.trimmed, false)
  expect.eq(#a.rows, 2)
  local cuda = a.by_name.CUDA0
  expect.eq(cuda.kind, "device")
  expect.eq(cuda.label, "CUDA0 (RTX 4090)")
  expect.eq(cuda.desc, "RTX 4090")
  expect.eq(cuda.total_mib, 24077)
  expect.eq(cuda.free_mib, 945)
  expect.eq(cuda.self_mib, 19187)
  expect.eq(cuda.model_mib, 17904)
  expect.eq(cuda.context_mib, 384)
  expect.eq(cuda.compute_mib, 898)
  expect.eq(cuda.unaccounted_mib, 3945)
  expect.eq(cuda.implied_unaccounted_mib, 3945)
  local host = a.by_name.Host
  expect.eq(host.kind, "host")
  expect.eq(host.total_mib, nil)
  expect.eq(host.self_mib, 58271)
  expect.eq(host.model_mib, 58259)
  expect.eq(host.context_mib, 0)
  expect.eq(host.compute_mib, 12)
  -- M5: printed self floors bytes, so total - free - self is 1 where unaccounted prints 0
  local m5 = t[2].by_name.MTL0
  expect.eq(m5.desc, "Apple M5")
  expect.eq(m5.unaccounted_mib, 0)
  expect.eq(m5.implied_unaccounted_mib, 1)
  expect.eq(m5.self_mib - (m5.model_mib + m5.context_mib + m5.compute_mib), 1)
  -- post-refactor name, and the unsigned wrap of unaccounted
  local c = t[3]
  expect.eq(c.func, "common_memory_breakdown_print")
  expect.eq(c.by_name.CUDA0.desc, "RTX 5060 Ti")
  expect.eq(c.by_name.CUDA0.unaccounted_mib, -15092)
  expect.eq(c.by_name.CUDA0.unaccounted_wrapped, true)
  expect.eq(c.by_name.CUDA0.context_mib, 72)
  expect.eq(c.by_name.Host.self_mib, 6371)
end)

test("breakdown: log prefixes, and the post's row as llama.cpp prints it", function()
  local t = llamacpp.breakdown(sample "llamacpp-breakdown-constructed.log")
  expect.eq(#t, 1)
  expect.eq(t[1].trimmed, false)
  local r = t[1].by_name.MTL0
  expect.eq(r.desc, "Apple M5 Pro")
  expect.eq(r.context_mib, 224)
  expect.eq(r.unaccounted_mib, 2)
  expect.eq(r.implied_unaccounted_mib, 2)
  expect.eq(r.context_mib * units.MiB, kv.bytes("qwen2.5-7b", 4096))
end)

local FRAGMENT_ERR = "samples/llamacpp-breakdown-fragment.log:5: memory breakdown is not verbatim llama.cpp "
  .. "output (no header line); pass {allow_trimmed = true} to read it anyway"
test("breakdown: a fragment without header is flagged, and readable on request", function()
  expect.error(function() llamacpp.breakdown(sample "llamacpp-breakdown-fragment.log") end, FRAGMENT_ERR)
  local text, name = sample "llamacpp-breakdown-fragment.log"
  local t = llamacpp.breakdown(text, name, {allow_trimmed = true})
  expect.eq(t[1].trimmed, true)
  expect.eq(table.concat(t[1].trim_reasons, "; "), "no header line")
  expect.eq(#t[1].rows, 3)
  local rp = t[1].by_name["HTP0-REPACK"]
  expect.eq(rp.kind, "other")
  expect.eq(rp.self_mib, 504)
  expect.eq(rp.model_mib, 504)
  expect.eq(t[1].by_name.HTP0.desc, "Hexagon")
  expect.eq(t[1].by_name.HTP0.total_mib, 2048)
  expect.eq(t[1].by_name.HTP0.self_mib, 0)
end)

local POST_ROW = "|  - MTL0 (Apple M5 Pro) | 18186 = 13481 + (4703 =  4168 +     224 +     311) |"
test("breakdown: the blog post's hand-trimmed row is not trusted silently", function()
  expect.error(function() llamacpp.breakdown(POST_ROW, "post") end,
    "post:1: memory breakdown is not verbatim llama.cpp output (no header line; no unaccounted column; "
    .. "no llama_memory_breakdown_print/common_memory_breakdown_print prefix; row label indented by 2 "
    .. "spaces (llama.cpp prints 3)); pass {allow_trimmed = true} to read it anyway")
  local t = llamacpp.breakdown(POST_ROW, "post", {allow_trimmed = true})
  local r = t[1].rows[1]
  expect.eq(t[1].trimmed, true)
  expect.eq(r.total_mib, 18186)
  expect.eq(r.free_mib, 13481)
  expect.eq(r.self_mib, 4703)
  expect.eq(r.model_mib + r.context_mib + r.compute_mib, 4703)
  expect.eq(r.context_mib, 224)
  expect.eq(r.unaccounted_mib, nil)
  -- "total 18186 = free 13481 + self 4703" is off by the trimmed unaccounted 2 MiB
  expect.eq(r.implied_unaccounted_mib, 2)
end)

local HDR = "llama_memory_breakdown_print: | memory breakdown [MiB] | total free self model context compute unaccounted |\n"
local BD_BAD = {
  {HDR .. "llama_memory_breakdown_print: |   - CUDA0 (X) | 1 = 2 + (3 = 4 + 5) + 6 |",
    "x.log:2: malformed memory breakdown row"},
  {HDR .. "llama_memory_breakdown_print: |   - CUDA0 (X) | 10 = 2 + (3 = 1 + 1 + 1) + 5 | 7 |",
    "x.log:2: malformed memory breakdown row"},
  {HDR .. "llama_memory_breakdown_print: |   CUDA0 | 10 = 2 + (3 = 1 + 1 + 1) + 5 |",
    "x.log:2: malformed memory breakdown row"},
  {HDR .. "llama_memory_breakdown_print: |   - CUDA0 (X) | 10 = 2 + (3 = 1 + 1 + 1) + 5",
    "x.log:2: malformed memory breakdown row"},
  {"llama_memory_breakdown_print: | memory breakdown [MiB] | total free self |\n",
    "x.log:1: malformed memory breakdown header"},
  {HDR, "x.log:1: memory breakdown header without rows"},
  {"nothing to see\n", "x.log: no memory breakdown table found"},
}
for i, c in ipairs(BD_BAD) do
  test("breakdown: broken input " .. i, function()
    expect.error(function() llamacpp.breakdown(c[1], "x.log") end, c[2])
  end)
end

test("breakdown: options and arguments", function()
  expect.error(function() llamacpp.breakdown(POST_ROW, "p", {trimmed = true}) end,
    'llamacpp.breakdown: unknown option "trimmed"; known: allow_trimmed')
  expect.error(function() llamacpp.breakdown(nil) end,
    "llamacpp.breakdown: expects the text of a log (a string), got nil")
  expect.error(function() llamacpp.breakdown("x") end, "<text>: no memory breakdown table found")
end)

---------------------------------------------------------------------------------------------
-- KV cache lines

test("kv_cache: the observed lines of every era", function()
  local e = llamacpp.kv_cache(sample "llamacpp-kv-observed.log")
  expect.eq(#e, 7)
  local kinds = {}
  for i, x in ipairs(e) do kinds[i] = x.kind end
  expect.eq(table.concat(kinds, " "), "buffer self buffer size size size size")
  expect.eq(e[1].func, "llama_kv_cache_init")
  expect.eq(e[1].buffer, "CUDA0")
  expect.eq(e[1].mib, 896)
  expect.eq(e[1].line, 4)
  expect.eq(e[2].func, "llama_new_context_with_model")
  expect.eq(e[2].total_mib, 896)
  expect.eq(e[2].type_k, "f16")
  expect.eq(e[2].k_mib, 448)
  expect.eq(e[2].v_mib, 448)
  expect.eq(e[3].func, "llama_kv_cache_unified")
  expect.eq(e[3].mib, 1536)
  expect.eq(e[4].cells, 4096)
  expect.eq(e[4].layers, 32)
  expect.eq(e[4].seqs, 1)
  expect.eq(e[4].streams, nil)
  expect.eq(e[5].total_mib, 18432)
  expect.eq(e[5].cells, 131072)
  expect.eq(e[5].layers, 36)
  expect.eq(e[5].seqs, 1)
  expect.eq(e[5].streams, 1)
  expect.eq(e[6].func, "llama_kv_cache")
  expect.eq(e[6].type_k, "q8_0")
  expect.eq(e[6].type_v, "q8_0")
  expect.eq(e[6].k_mib, 272)
  expect.eq(e[6].v_less, false)
  expect.eq(e[7].v_mib, 0)
  expect.eq(e[7].v_less, true)
  expect.eq(e[7].seqs, 2)
  expect.eq(e[7].streams, 2)
end)

test("kv_cache: constructed lines of the other eras and memory modules", function()
  local e = llamacpp.kv_cache(sample "llamacpp-kv-constructed.log")
  local kinds = {}
  for i, x in ipairs(e) do kinds[i] = x.kind end
  expect.eq(table.concat(kinds, " "), "self_mb size self buffer iswa buffer size iswa buffer size "
    .. "rs_buffer recurrent_self recurrent recurrent init size buffer size")
  expect.eq(e[1].total_mib, 256)
  expect.eq(e[2].seqs, nil)
  expect.eq(e[2].layers, 16)
  expect.eq(e[3].func, "llama_context_kv_self")
  expect.eq(e[3].type_v, "q8_0")
  expect.eq(e[4].func, "init")
  expect.eq(e[4].buffer, "CPU")
  expect.eq(e[5].swa, false)
  expect.eq(e[5].cells, 4096)
  expect.eq(e[5].func, "llama_kv_cache_iswa")
  expect.eq(e[7].cache, "non-SWA")
  expect.eq(e[7].layers, 10)
  expect.eq(e[8].swa, true)
  expect.eq(e[10].cache, "SWA")
  expect.eq(e[10].cells, 1536)
  expect.eq(e[11].buffer, "CUDA0")
  expect.eq(e[11].mib, 75.38)
  expect.eq(e[12].type_r, "f32")
  expect.eq(e[12].s_mib, 72)
  expect.eq(e[13].func, "llama_memory_recurrent")
  expect.eq(e[13].r_mib, 3.38)
  expect.eq(e[14].rs_seqs, 1)
  expect.eq(e[15].cells, 4096)
  expect.eq(e[15].layers, 28)
  expect.eq(e[15].offload, true)
  expect.eq(e[15].type_k, "f16")
  -- prefixed lines: timestamps, "llama[2]: ", a journal line with collapsed spaces
  expect.eq(e[16].total_mib, 224)
  expect.eq(e[17].buffer, "Metal")
  expect.eq(e[18].total_mib, 224)
  expect.eq(e[18].line, 22)
end)

test("kv_cache: the formula against the observed worked check (Llama-3.2-3B, 4096 cells)", function()
  -- engine-formats.md 2.1: 28 layers x 8 KV heads x 128: K alone f16 224.00, q8_0 119.00 MiB
  local m = kv.model{layers = 28, kv_heads = 8, head_dim = 128}
  expect.eq(kv.bytes(m, 4096) / 2, 224 * units.MiB)
  expect.eq(kv.bytes(m, 4096, {dtype = "q8_0"}) / 2, 119 * units.MiB)
end)

test("kv_cache: a truncated line names the file and line", function()
  expect.error(function() llamacpp.kv_cache(sample "llamacpp-kv-broken.log") end,
    "samples/llamacpp-kv-broken.log:5: malformed llama_kv_cache size line")
end)

local KV_BAD = {
  {"llama_kv_cache_unified: size = abc MiB (4096 cells, 32 layers), K (f16): 1 MiB, V (f16): 1 MiB",
    "malformed llama_kv_cache_unified size line"},
  {"llama_kv_cache: size = 1.2.3 MiB (4096 cells, 28 layers, 1/1 seqs), K (f16): 1 MiB, V (f16): 1 MiB",
    "malformed llama_kv_cache size line"},
  {"llama_kv_cache: size = 224.00 MiB (4096 cells, 28 layers, 1/1/1 seqs), K (f16): 112.00 MiB, V (f16): 112.00 MiB",
    "malformed llama_kv_cache size line"},
  {"llama_kv_cache: size = 224.00 MiB (4096 cells), K (f16): 112.00 MiB, V (f16): 112.00 MiB",
    "malformed llama_kv_cache size line"},
  {"llama_memory_recurrent: size = 75.38 MiB (1 cells, 48 layers, 1 seqs), R (f32): 3.38 MiB",
    "malformed llama_memory_recurrent size line"},
  {"llama_new_context_with_model: KV self size  =  896.00 MiB, K (f16):  448.00 MiB",
    "malformed KV self size line"},
  {"llama_kv_cache_init:      CUDA0 KV buffer size = lots MiB", "malformed KV buffer size line"},
  {"KV buffer size = 1.00 MiB", "malformed KV buffer size line"},
  {"llama_memory_recurrent:      CUDA0 RS buffer size = 1.00 GiB", "malformed RS buffer size line"},
  {"llama_new_context_with_model: kv self size  =  256.00 MiB", "malformed kv self size line"},
  {"llama_kv_cache_iswa: creating half-SWA KV cache, size = 4096 cells", "malformed creating KV cache line"},
  {"llama_kv_cache_init: kv_size = 4096, offload = 1, type_k = 'f16'", "malformed kv_size line"},
}
for i, c in ipairs(KV_BAD) do
  test("kv_cache: broken line " .. i, function()
    expect.error(function() llamacpp.kv_cache("# header line\nok line\n" .. c[1] .. "\n", "x.log") end,
      "x.log:3: " .. c[2])
  end)
end

test("kv_cache: unrelated lines are skipped; no cache line at all is an error", function()
  local e = llamacpp.kv_cache("print_info: file size   = 4.36 GiB (4.91 BPW)\n"
    .. "llama_context:        CPU compute buffer size =    10.00 MiB\n"
    .. "load_tensors:   CPU_Mapped model buffer size =   292.36 MiB\n"
    .. "llama_kv_cache: size =  224.00 MiB (  4096 cells,  28 layers,  1/1 seqs), K (f16):  112.00 MiB, V (f16):  112.00 MiB\n",
    "x.log")
  expect.eq(#e, 1)
  expect.eq(e[1].line, 4)
  expect.error(function() llamacpp.kv_cache("print_info: file size   = 4.36 GiB\n", "x.log") end,
    "x.log: no llama.cpp KV cache lines found")
end)

test("kv_cache: a long line does not make the patterns backtrack for ever", function()
  local long = string.rep("a", 200000) .. " KV buffer size = 1.00 MiB"
  expect.error(function() llamacpp.kv_cache(long, "long.log") end, "long.log:1: malformed KV buffer size line")
  local e = llamacpp.kv_cache(string.rep("x:", 50000) .. " llama_kv_cache: size = 1.00 MiB (1 cells, 1 layers), "
    .. "K (f16): 0.50 MiB, V (f16): 0.50 MiB", "long.log")
  expect.eq(e[1].total_mib, 1)
end)

---------------------------------------------------------------------------------------------
-- llama-bench

test("bench_md: the current table (fa width 3) and its footer", function()
  local b = llamacpp.bench_md(sample "llama-bench-md-new.txt")
  expect.eq(#b.rows, 2)
  expect.eq(#b.tables, 1)
  expect.eq(b.tables[1].build.commit, "0000000")
  expect.eq(b.tables[1].build.number, 1)
  local r = b.rows[1]
  expect.eq(r.model, "qwen2 7B Q4_K - Medium")
  expect.eq(r.size, "4.36 GiB")
  expect.eq(r.backend, "CUDA")
  expect.eq(r.ngl, -1)
  expect.eq(r.fa, 1)
  expect.eq(r.type_k, "q8_0")
  expect.eq(r.type_v, "q8_0")
  expect.eq(r.test, "pp512")
  expect.eq(r.n_prompt, 512)
  expect.eq(r.n_gen, 0)
  expect.eq(r.ts_mean, 7340.20)
  expect.eq(r.ts_stddev, 23.45)
  expect.eq(r.line, 6)
  local d = b.rows[2]
  expect.eq(d.test, "tg128 @ d4096")
  expect.eq(d.n_gen, 128)
  expect.eq(d.n_depth, 4096)
  expect.eq(d.ts_mean, 120.6)
  expect.eq(d.ts_stddev, 0.59)
  expect.eq(d.cells.test, "tg128 @ d4096")
end)

test("bench_md: the old shapes (fa width 2, 'tg 128', no type columns)", function()
  local b = llamacpp.bench_md(sample "llama-bench-md-old.txt")
  expect.eq(#b.tables, 2)
  expect.eq(#b.rows, 3)
  local r = b.rows[1]
  expect.eq(r.fa, 1)
  expect.eq(r.ngl, 99)
  expect.eq(r.fitt, 500)
  expect.eq(r.fitc, 100000)
  expect.eq(r.ts_mean, 827.4)
  expect.eq(r.table, 1)
  expect.eq(b.tables[1].build, nil)
  local o = b.rows[3]
  expect.eq(o.table, 2)
  expect.eq(o.test, "tg128")
  expect.eq(o.n_gen, 128)
  expect.eq(b.rows[2].test, "pp512")
  expect.eq(o.type_k, "f16")
  expect.eq(o.fa, nil)
  expect.eq(o.ts_stddev, 0.5)
end)

test("bench_md: a row with a missing cell", function()
  expect.error(function() llamacpp.bench_md(sample "llama-bench-md-broken.txt") end,
    "samples/llama-bench-md-broken.txt:5: malformed llama-bench row: 6 cells, the header has 7")
end)

local MD_HEAD = "| model | size | params | backend | ngl | test | t/s |\n| --- | ---: | ---: | --- | --: | ---: | ---: |\n"
local MD_BAD = {
  {MD_HEAD .. "| m | 1 GiB | 1 B | CPU | 99 | tg128 | fast |", 'x.md:3: malformed llama-bench t/s cell "fast"'},
  {MD_HEAD .. "| m | 1 GiB | 1 B | CPU | 99 | tg128 | 1.0 ± |", 'x.md:3: malformed llama-bench t/s cell "1.0 ±"'},
  {MD_HEAD .. "| m | 1 GiB | 1 B | CPU | 99 | bench | 1.00 ± 0.10 |", 'x.md:3: malformed llama-bench test cell "bench"'},
  {MD_HEAD .. "| m | 1 GiB | 1 B | CPU | all | tg128 | 1.00 ± 0.10 |", 'x.md:3: malformed llama-bench ngl cell "all"'},
  {"| model | size | params | backend | ngl | test | t/s |\n| m | 1 GiB | 1 B | CPU | 99 | tg128 | 1.00 ± 0.10 |",
    "x.md:2: llama-bench table header not followed by a separator row"},
  {MD_HEAD, "x.md:1: llama-bench table without rows"},
  {"no table here", "x.md: no llama-bench table found"},
}
for i, c in ipairs(MD_BAD) do
  test("bench_md: broken input " .. i, function()
    expect.error(function() llamacpp.bench_md(c[1], "x.md") end, c[2])
  end)
end

test("bench_csv: typed fields and the shared row shape", function()
  local b = llamacpp.bench_csv(sample "llama-bench-csv.txt")
  expect.eq(#b.rows, 2)
  local r = b.rows[1]
  expect.eq(r.line, 6)
  expect.eq(b.rows[2].line, 7)
  expect.eq(r.build_number, 1)
  expect.eq(math.type(r.model_size), "integer")
  expect.eq(r.model_size, 4683073536)
  expect.eq(r.cpu_info, "Example CPU, 8 cores")
  expect.eq(r.cpu_strict, false)
  expect.eq(r.no_kv_offload, false)
  expect.eq(r.flash_attn, 1)
  expect.eq(r.fa, 1)
  expect.eq(r.n_gpu_layers, -1)
  expect.eq(r.type_k, "q8_0")
  expect.eq(r.test, "tg128")
  expect.eq(r.ts_mean, 128.0)
  expect.eq(r.ts_stddev, 0.64)
  -- cells are typed as data() types them: "0.00" reads as a number
  expect.eq(r.tensor_split, 0.0)
  local s = b.rows[2]
  expect.eq(s.model_filename, 'models/"quoted".gguf')
  expect.eq(s.test, "pp512 @ d4096")
  expect.eq(s.fa, 0)
  expect.eq(s.avg_ts, 7314.285714)
end)

local CSV_BAD = {
  {'"n_prompt","n_gen","avg_ts","stddev_ts"\n"0","12x","1.0","0.1"\n',
    'x.csv:2: llama-bench field n_gen is not an integer: "12x"'},
  {'"n_prompt","n_gen","avg_ts","stddev_ts"\n"0","128","fast","0.1"\n',
    'x.csv:2: llama-bench field avg_ts is not a number: "fast"'},
  {'"n_prompt","n_gen","avg_ts","stddev_ts","no_host"\n"0","128","1","0.1","maybe"\n',
    'x.csv:2: llama-bench field no_host is not a boolean: "maybe"'},
  {'"n_prompt","n_gen","avg_ts"\n"0","128","1"\n', "x.csv:2: llama-bench record has no stddev_ts"},
  {'"a","b"\n"1","2"\n', "x.csv: not a llama-bench CSV header (no avg_ts or n_gen column)"},
  {'"n_prompt","n_gen","avg_ts","stddev_ts"\n"0","128","1"\n', "x.csv:2:1: CSV row has 3 cells, the header has 4"},
}
for i, c in ipairs(CSV_BAD) do
  test("bench_csv: broken input " .. i, function()
    expect.error(function() llamacpp.bench_csv(c[1], "x.csv") end, c[2])
  end)
end

test("bench_json: -o json, both flash_attn eras", function()
  local b = llamacpp.bench_json(sample "llama-bench-json.txt")
  expect.eq(#b.rows, 2)
  local r = b.rows[1]
  expect.eq(r.line, 6)
  expect.eq(r.avg_ts, 7100.002165)
  expect.eq(r.stddev_ts, 140.34152)
  expect.eq(r.fa, -1)
  expect.eq(r.n_gpu_layers, -1)
  expect.eq(r.test, "pp512")
  expect.eq(r.no_kv_offload, false)
  expect.eq(#r.samples_ts, 2)
  expect.eq(r.samples_ns[2], 72300000)
  local s = b.rows[2]
  expect.eq(s.line, 25)
  expect.eq(s.flash_attn, 1)
  expect.eq(s.test, "tg128")
  expect.eq(s.ts_mean, 50.5)
end)

test("bench_json: -o jsonl", function()
  local b = llamacpp.bench_json(sample "llama-bench-jsonl.txt")
  expect.eq(#b.rows, 2)
  expect.eq(b.rows[1].line, 3)
  expect.eq(b.rows[2].line, 4)
  expect.eq(b.rows[2].test, "tg128 @ d4096")
  expect.eq(b.rows[2].ts_mean, 120.5)
  expect.eq(#b.rows[1].samples_ns, 2)
end)

local JSON_BAD = {
  {'[\n  {"n_prompt": 0, "n_gen": 128, "avg_ts": 1.0, "stddev_ts": 0.1\n  ,]', "x.json:3:4: invalid JSON: expected a string key"},
  {'{"n_prompt": 0, "n_gen": 128, "avg_ts": 1.0, "stddev_ts": 0.1}\n{"n_prompt": 0 "n_gen": 1}\n',
    "x.json:2:16: invalid JSON: expected ',' or '}'"},
  {'[{"n_prompt": 0, "n_gen": true, "avg_ts": 1.0, "stddev_ts": 0.1}]', "x.json:1: llama-bench field n_gen is not an integer: true"},
  {'[{"n_prompt": 0, "n_gen": 1, "avg_ts": "x", "stddev_ts": 0.1}]', 'x.json:1: llama-bench field avg_ts is not a number: "x"'},
  {'[{"n_prompt": 0, "n_gen": 1, "stddev_ts": 0.1}]', "x.json:1: llama-bench record has no avg_ts"},
  {'[1]', "x.json: llama-bench JSON element 1 is not an object"},
  {'{"n_prompt": 0, "n_gen": 1, "avg_ts": 1, "stddev_ts": 0.1}\n[1]\n', "x.json:2: llama-bench JSONL line is not an object"},
  {'| model |', "x.json: not llama-bench JSON (expected '[' or '{')"},
}
for i, c in ipairs(JSON_BAD) do
  test("bench_json: broken input " .. i, function()
    expect.error(function() llamacpp.bench_json(c[1], "x.json") end, c[2])
  end)
end
