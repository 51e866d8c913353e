-- Tests of checks/meas.lua: the stored llama.cpp measurements of kv-facts.md, provenance
-- marking, the agreement and monotone checks, and record validation.

local meas = require "meas"
local kv = require "kv"
local units = require "units"
local expect = require "expect"

local MiB = units.MiB
local FILE = "measurements/llamacpp-m5pro-qwen2.5-7b.yaml"

-- open FILE with a spy in place of kvsite.measured
local function open_spied()
  local marks = {}
  local r = meas.open(FILE, {mark = function(p) marks[#marks + 1] = p end})
  return r, marks
end

test("open validates and marks nothing; provenance as recorded", function()
  local r, marks = open_spied()
  expect.eq(#marks, 0)
  expect.eq(r.path, FILE)
  expect.eq(r.provenance.machine, "Apple M5 Pro, 24 GB unified memory")
  expect.eq(r.provenance.engine, "llama.cpp")
  expect.eq(r.provenance.build, "b9630-8ed274ef4")
  expect.eq(r.provenance.model:sub(1, 26), "Qwen2.5-7B-Instruct-Q4_K_M")
  expect.eq(r.provenance.cite, "factcheck_blog")
  local n = r:names()
  expect.eq(table.concat(n.series, " "), "first_run_no_cooldown kv_by_context kv_by_type "
    .. "rerun_cooldown60_round1 rerun_cooldown60_round2 tg128_round1 tg128_round2")
  expect.eq(table.concat(n.logs, " "), "memory_breakdown")
  expect.eq(#marks, 0)
end)

test("every read marks the figure measured, with the series' command", function()
  local r, marks = open_spied()
  r:value("kv_by_context", 4096)
  expect.eq(#marks, 1)
  local p = marks[1]
  expect.eq(p.machine, "Apple M5 Pro, 24 GB unified memory")
  expect.eq(p.engine, "llama.cpp")
  expect.eq(p.build, "b9630-8ed274ef4")
  expect.eq(p.file, FILE)
  expect.eq(p.command, "llama.cpp at each context length, cache types f16 (exact command line not published)")
  expect.eq(p.date, "not recorded (kv-facts.md dates only the reviewed article, 2026-09-06)")
  expect.eq(p.source:sub(1, 35), "blog post fact-checking Avi Chawla,")
  expect.eq(p.cite, nil)
  r:spread("tg128_round1", "f16")
  r:row("tg128_round1", "f16")
  r:series("tg128_round2")
  r:log("memory_breakdown")
  expect.eq(#marks, 5)
  expect.eq(marks[2].command:sub(1, 18), "llama-bench tg128,")
  expect.eq(marks[5].command, "llama.cpp exit report (exact command line not published)")
end)

test("KV by context length: measured = computed (224, 896, 1792 MiB)", function()
  local r = open_spied()
  local q = kv.model "qwen2.5-7b"
  for _, c in ipairs{{4096, "224 MiB"}, {16384, "896 MiB"}, {32768, "1,792 MiB"}} do
    local v = r:value("kv_by_context", c[1])
    expect.quote(v, c[2])
    expect.eq(v, kv.bytes(q, c[1]), "n_ctx " .. c[1])
  end
  expect.eq(math.type(r:value("kv_by_context", 4096)), "integer")
end)

test("KV by cache type at 4096: measured = predicted (224, 119, 63 MiB)", function()
  local r = open_spied()
  local q = kv.model "qwen2.5-7b"
  for _, c in ipairs{{"f16", "224.0 MiB"}, {"q8_0", "119.0 MiB"}, {"q4_0", "63.0 MiB"}} do
    local v = r:value("kv_by_type", c[1])
    expect.quote(v, c[2])
    expect.quote(kv.bytes(q, 4096, {dtype = c[1]}), c[2])
    expect.eq(v, kv.bytes(q, 4096, {dtype = c[1]}), c[1])
  end
  -- "at 28% of the memory"
  expect.quote(r:value("kv_by_type", "q4_0") / r:value("kv_by_type", "f16"), "28%")
end)

test("the memory breakdown row: flagged trimmed, KV = 224 MiB", function()
  local r = open_spied()
  local t = r:log "memory_breakdown"
  expect.eq(#t, 1)
  expect.eq(t[1].trimmed, true)
  local row = t[1].by_name.MTL0
  expect.eq(row.desc, "Apple M5 Pro")
  expect.eq(row.total_mib, 18186)
  expect.eq(row.free_mib, 13481)
  expect.eq(row.self_mib, 4703)
  expect.eq(row.model_mib, 4168)
  expect.eq(row.compute_mib, 311)
  expect.eq(row.context_mib * MiB, r:value("kv_by_context", 4096))
  expect.eq(row.model_mib + row.context_mib + row.compute_mib, row.self_mib)
  expect.eq(row.implied_unaccounted_mib, 2)
end)

test("throughput values and spreads", function()
  local r = open_spied()
  expect.eq(r:value("tg128_round1", "f16"), 57.21)
  expect.eq(r:spread("tg128_round1", "f16"), 1.02)
  expect.eq(r:value("tg128_round2", "q4_0"), 54.91)
  expect.eq(r:value("first_run_no_cooldown", "f16 fa=1"), 9.39)
  expect.eq(r:value("first_run_no_cooldown", {type = "q4_0", fa = 1}), 51.91)
  expect.eq(r:value("rerun_cooldown60_round2", 1), 58.31)
  local row = r:row("tg128_round1", "q8_0")
  expect.eq(row.ts_mean, 55.11)
  expect.eq(row.ts_stddev, 0.85)
  -- copies: changing them changes nothing stored
  row.ts_mean = 0
  expect.eq(r:value("tg128_round1", "q8_0"), 55.11)
  local s = r:series "tg128_round1"
  s.rows[1].ts_mean = 0
  expect.eq(r:value("tg128_round1", "f16"), 57.21)
end)

test("\"about 5% slower\": 4.6% and 5.5% by round, 5.1% over both rounds", function()
  local r = open_spied()
  local function slower(round) return 1 - r:value(round, "q4_0") / r:value(round, "f16") end
  expect.quote(slower "tg128_round1", "4.6%")
  expect.quote(slower "tg128_round2", "5.5%")
  local f16 = r:value("tg128_round1", "f16") + r:value("tg128_round2", "f16")
  local q4 = r:value("tg128_round1", "q4_0") + r:value("tg128_round2", "q4_0")
  expect.quote(1 - q4 / f16, "5.1%")
  expect.quote(1 - q4 / f16, "≈5%")
end)

test("agreement: the two rounds agree within 2 standard deviations", function()
  local r = open_spied()
  expect.eq(meas.agree(r:series "tg128_round1", r:series "tg128_round2"), true)
  expect.eq(meas.agree(r:series "tg128_round1", r:series "tg128_round2", {k = 1}), true)
end)

test("agreement: the 60 s cool-down rounds disagree at fa = 1", function()
  local r = open_spied()
  expect.error(function()
    meas.agree(r:series "rerun_cooldown60_round1", r:series "rerun_cooldown60_round2")
  end, "rerun_cooldown60_round1 and rerun_cooldown60_round2 disagree at fa = 1: 55.59 ± 0.39 and "
    .. "58.31 ± 0.01 t/s do not overlap at k = 2 ([54.81, 56.37] vs [58.29, 58.33])")
  -- fa = 0 agrees at k = 2 (barely), not at k = 1
  expect.eq(meas.overlap(53.74, 0.51, 56.10, 0.70), true)
  expect.eq(meas.overlap(53.74, 0.51, 56.10, 0.70, 1), false)
end)

test("monotone: both rounds decrease with compression; the throttled run does not", function()
  local r = open_spied()
  expect.eq(meas.monotone(r:series "tg128_round1"), true)
  expect.eq(meas.monotone(r:series "tg128_round2"), true)
  expect.eq(meas.monotone(r:series "kv_by_context", {direction = "increasing"}), true)
  expect.eq(meas.monotone(r:series "kv_by_type", {direction = "decreasing"}), true)
  expect.error(function() meas.monotone(r:series "first_run_no_cooldown") end,
    'series "first_run_no_cooldown" is declared decreasing, but row 3 (q4_0 fa=1: 51.91 t/s) '
    .. "is above row 2 (f16 fa=1: 9.39 t/s)")
  expect.error(function() meas.monotone(r:series "kv_by_context", {direction = "decreasing"}) end,
    'series "kv_by_context" is declared decreasing, but row 2 (n_ctx = 16384: 896 MiB) '
    .. "is above row 1 (n_ctx = 4096: 224 MiB)")
  expect.error(function() meas.monotone(r:series "rerun_cooldown60_round1") end,
    'meas.monotone: "rerun_cooldown60_round1" declares no direction; pass {direction = "decreasing"} or "increasing"')
  -- a tolerance absorbs small inversions
  local s = {name = "s", unit = "t/s", value = "v", rows = {{v = 10}, {v = 10.2}, {v = 9}}}
  expect.eq(meas.monotone(s, {direction = "decreasing", tolerance = 0.5}), true)
end)

test("meas.value: open and read in one call", function()
  expect.eq(meas.value(FILE, "kv_by_type", "q8_0"), 119 * MiB)
end)

local R_ERRORS = {
  {function(r) r:value("kv_by_context", 4097) end,
    FILE .. ': series "kv_by_context" has no row with n_ctx = 4097; known: 4096, 16384, 32768'},
  {function(r) r:value("kv_cache", 4096) end,
    FILE .. ': no series "kv_cache"; known: first_run_no_cooldown, kv_by_context, kv_by_type, '
    .. "rerun_cooldown60_round1, rerun_cooldown60_round2, tg128_round1, tg128_round2"},
  {function(r) r:value("kv_by_context") end, FILE .. ': series "kv_by_context" has 3 rows; select one'},
  {function(r) r:value("first_run_no_cooldown", {type = "f16"}) end,
    FILE .. ': series "first_run_no_cooldown" has 2 rows with type = f16; select one'},
  {function(r) r:value("first_run_no_cooldown", {type = "int8"}) end,
    FILE .. ': series "first_run_no_cooldown" has no row with type = int8; known: f16 fa=0, f16 fa=1, q4_0 fa=1'},
  {function(r) r:spread("kv_by_type", "f16") end, FILE .. ': series "kv_by_type" has no spread field'},
  {function(r) r:log("bench") end, FILE .. ': no log "bench"; known: memory_breakdown'},
}
for i, c in ipairs(R_ERRORS) do
  test("record error " .. i, function()
    local r = open_spied()
    expect.error(function() c[1](r) end, c[2])
  end)
end

-- validation: records served by a stub loader
local PROV = {machine = "m", engine = "e", build = "b", model = "x", date = "d", source = "s"}
local function with(t)
  local doc = {provenance = PROV, series = {s = {unit = "MiB", key = "k", value = "v", rows = {{k = 1, v = 2}}}}}
  for k, v in pairs(t) do doc[k] = v end
  return doc
end
local function serve(doc)
  return function(path)
    if path == "x.yaml" then return doc end
    return data(path)
  end
end
local V_ERRORS = {
  {"not a table", "x.yaml: not a measurement record (expected a YAML mapping)"},
  {{series = {}}, "x.yaml: no provenance block"},
  {with{provenance = {machine = "m", engine = "e", model = "x", date = "d", source = "s"}}, "x.yaml: provenance has no build"},
  {with{provenance = {machine = "m", engine = "e", build = 9630, model = "x", date = "d", source = "s"}},
    "x.yaml: provenance field build must be a string"},
  {with{provenance = {machine = "m", engine = "e", build = "b", model = "x", date = "d", source = "s", url = "u"}},
    'x.yaml: unknown provenance field "url"; known: build, cite, command, date, engine, evidence, machine, model, packages, source'},
  {with{extra = 1}, 'x.yaml: unknown top-level key "extra"; known: logs, provenance, series'},
  {with{series = {s = {unit = "MiB", value = "v", rows = {}}}}, 'x.yaml: series "s" has no rows'},
  {with{series = {s = {unit = "furlongs", value = "v", rows = {{v = 1}}}}}, 'x.yaml: series "s": unknown unit "furlongs"'},
  {with{series = {s = {unit = "MiB", value = "v", rows = {{v = 1}, {v = "2"}}}}}, 'x.yaml: series "s" row 2: "v" is not a number'},
  {with{series = {s = {unit = "MiB", value = "v", spread = "sd", rows = {{v = 1}}}}}, 'x.yaml: series "s" row 1: "sd" is not a number'},
  {with{series = {s = {unit = "MiB", value = "v", key = "k", rows = {{k = 1, v = 1}, {k = 1, v = 2}}}}},
    'x.yaml: series "s": two rows with k = 1'},
  {with{series = {s = {unit = "MiB", value = "v", key = "k", rows = {{v = 1}}}}}, 'x.yaml: series "s" row 1 has no "k"'},
  {with{series = {s = {unit = "MiB", value = "v", monotone = "up", rows = {{v = 1}}}}},
    'x.yaml: series "s": monotone must be increasing or decreasing, got "up"'},
  {with{series = {s = {unit = "MiB", value = "v", rows = {{v = 1}}, note = "n"}}},
    'x.yaml: series "s": unknown field "note"; known: command, discarded, key, monotone, rows, spread, unit, value, what'},
  {with{logs = {l = {format = "llamacpp.kv_cache"}}}, 'x.yaml: log "l": give exactly one of file and text'},
  {with{logs = {l = {format = "llamacpp.kv_cache", file = "a.log", text = "t"}}}, 'x.yaml: log "l": give exactly one of file and text'},
  {with{logs = {l = {format = "sglang", text = "t"}}},
    'x.yaml: log "l": unknown format "sglang"; known: llamacpp.bench_csv, llamacpp.bench_json, '
    .. "llamacpp.bench_md, llamacpp.breakdown, llamacpp.contexts, llamacpp.kv_cache, vllm.kv_cache"},
  {with{logs = {l = {format = "llamacpp.kv_cache", text = "t", trimmed = true}}},
    'x.yaml: log "l": trimmed is a boolean of llamacpp.breakdown logs'},
}
for i, c in ipairs(V_ERRORS) do
  test("validation error " .. i, function()
    expect.error(function() meas.open("x.yaml", {data = serve(c[1])}) end, c[2])
  end)
end

test("logs by file: parsed by their format, errors name the log file", function()
  local doc = with{logs = {
    kv = {format = "llamacpp.kv_cache", file = "samples/llamacpp-kv-observed.log"},
    bad = {format = "llamacpp.kv_cache", file = "samples/llamacpp-kv-broken.log"},
    inline = {format = "vllm.kv_cache", text = "GPU KV cache size: 1,024 tokens\nbroken: GPU KV cache size: x"},
    md = {format = "llamacpp.bench_md", file = "samples/README.md"},
  }}
  local marks = {}
  local r = meas.open("x.yaml", {data = serve(doc), mark = function(p) marks[#marks + 1] = p end})
  local e = r:log "kv"
  expect.eq(#e, 7)
  expect.eq(e[7].v_less, true)
  expect.eq(#marks, 1)
  expect.eq(marks[1].file, "x.yaml")
  expect.error(function() r:log "bad" end, "samples/llamacpp-kv-broken.log:5: malformed llama_kv_cache size line")
  expect.error(function() r:log "inline" end, "x.yaml#inline:2: malformed vLLM GPU KV cache size line")
  expect.error(function() r:log "md" end, "samples/README.md: no llama-bench table found")
  expect.eq(#marks, 1, "failed reads mark nothing")
end)

test("checks refuse what is not a series", function()
  expect.error(function() meas.agree({}, {}) end, 'meas.agree: expects a series (r:series "name")')
  expect.error(function() meas.monotone(nil) end, 'meas.monotone: expects a series (r:series "name")')
  local r = open_spied()
  expect.error(function() meas.agree(r:series "kv_by_context", r:series "kv_by_type") end,
    "meas.agree: kv_by_context and kv_by_type need a spread field")
  expect.error(function() meas.agree(r:series "tg128_round1", r:series "rerun_cooldown60_round1") end,
    "meas.agree: tg128_round1 and rerun_cooldown60_round1 have different keys")
  local a, b = r:series "tg128_round1", r:series "tg128_round2"
  b.rows[3] = nil
  expect.error(function() meas.agree(a, b) end,
    "tg128_round1 and tg128_round2 cover different rows: type = q4_0 is only in tg128_round1")
  expect.error(function() meas.open(7) end, "meas.open: path must be a string, got number")
  expect.error(function() meas.open(FILE, {marker = print}) end, 'meas.open: unknown option "marker"; known: data, mark')
  expect.error(function() meas.overlap(1, 2, 3) end, "meas.overlap: expects numbers (mean, spread, mean, spread[, k])")
end)

test("errors from nested calls still point at the caller", function()
  local ok, msg = pcall(function() meas.value(FILE, "nope") end)
  expect.eq(ok, false)
  expect.eq(msg:find("checks/", 1, true), nil, msg)
  expect.eq(msg:match("^[^\n]+:%d+: " .. FILE:gsub("%p", "%%%0") .. ': no series "nope"') ~= nil, true, msg)
end)
