-- meas: stored measurements with provenance, and the checks run over them.
--
-- A record file (checks/measurements/*.yaml, schema in README.md) holds a provenance block,
-- named series of rows and named logs (raw engine output, by file or inline text, with the
-- parser that reads it). meas.open validates a file and marks nothing; every read of a
-- measured value (value, spread, row, series, log) calls kvsite.measured(provenance), so
-- the figure being evaluated becomes *measured*, wherever the file was opened.
--
-- Tables returned are fresh copies; callers own them. The record object itself is owned by
-- the caller of meas.open and is not shared between pages (modules are fresh per page).

local fail = require "fail"
local units = require "units"
local llamacpp = require "llamacpp"
local vllm = require "vllm"

local M = {}

local MAX_ROWS = 10000

local function S_set(list)
  local s = {}
  for _, k in ipairs(list) do s[k] = true end
  return s
end

local PROV_REQUIRED = {"machine", "engine", "build", "model", "date", "source"}
local PROV_KEYS = S_set{"machine", "engine", "build", "model", "command", "date", "source", "cite",
  "evidence", "packages"}
-- evidence: how the numbers came to be stored. "reproduced": raw logs of runs anyone can
-- repeat (make measure writes them); "transcribed": numbers a source reported, copied.
local EVIDENCE = S_set{"reproduced", "transcribed"}
local SERIES_KEYS = S_set{"what", "command", "unit", "key", "value", "spread", "monotone", "discarded", "rows"}
local LOG_KEYS = S_set{"what", "command", "format", "file", "text", "trimmed"}
local DOC_KEYS = S_set{"provenance", "series", "logs"}
local DIRECTIONS = S_set{"increasing", "decreasing"}
-- units that are not byte/ratio units (units.lua) but plain counts or rates: factor 1
local COUNT_UNITS = S_set{"t/s", "tokens", "requests"}

local PARSERS = {
  ["llamacpp.breakdown"] = function(text, name, log)
    return llamacpp.breakdown(text, name, {allow_trimmed = log.trimmed == true})
  end,
  ["llamacpp.kv_cache"] = function(text, name) return llamacpp.kv_cache(text, name) end,
  ["llamacpp.contexts"] = function(text, name) return llamacpp.contexts(text, name) end,
  ["llamacpp.bench_md"] = function(text, name) return llamacpp.bench_md(text, name) end,
  ["llamacpp.bench_csv"] = function(text, name) return llamacpp.bench_csv(text, name) end,
  ["llamacpp.bench_json"] = function(text, name) return llamacpp.bench_json(text, name) end,
  ["vllm.kv_cache"] = function(text, name) return vllm.kv_cache(text, name) end,
}

local function S_copy(v)
  -- records are data(): plain trees, depth bounded by the YAML loader; copy two levels
  -- (rows of a series) without recursion
  if type(v) ~= "table" then return v end
  local c = {}
  for k, x in pairs(v) do
    if type(x) == "table" then
      local cx = {}
      for k2, x2 in pairs(x) do cx[k2] = x2 end
      c[k] = cx
    else
      c[k] = x
    end
  end
  return c
end

local function S_unit_factor(u)
  if COUNT_UNITS[u] then return 1 end
  return units.factor(u)
end

local function S_keys_of(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = tostring(k) end
  table.sort(ks)
  return table.concat(ks, ", ")
end

local function S_validate(path, doc)
  local function bad(fmt, ...) fail.raise(path .. ": " .. string.format(fmt, ...)) end
  if type(doc) ~= "table" then bad("not a measurement record (expected a YAML mapping)") end
  for k in pairs(doc) do
    if not DOC_KEYS[k] then bad("unknown top-level key %s; known: %s", fail.show(k), S_keys_of(DOC_KEYS)) end
  end
  local p = doc.provenance
  if type(p) ~= "table" then bad("no provenance block") end
  for k, v in pairs(p) do
    if not PROV_KEYS[k] then bad("unknown provenance field %s; known: %s", fail.show(k), S_keys_of(PROV_KEYS)) end
    if type(v) ~= "string" then bad("provenance field %s must be a string", k) end
  end
  if p.evidence ~= nil and not EVIDENCE[p.evidence] then
    bad("provenance field evidence must be one of %s, got %s", S_keys_of(EVIDENCE), fail.show(p.evidence))
  end
  for _, k in ipairs(PROV_REQUIRED) do
    if p[k] == nil then bad("provenance has no %s", k) end
  end
  if doc.series ~= nil and type(doc.series) ~= "table" then bad("series must be a mapping") end
  if doc.logs ~= nil and type(doc.logs) ~= "table" then bad("logs must be a mapping") end
  for name, s in pairs(doc.series or {}) do
    if type(s) ~= "table" then bad("series %s is not a mapping", fail.show(name)) end
    for k in pairs(s) do
      if not SERIES_KEYS[k] then
        bad("series %s: unknown field %s; known: %s", fail.show(name), fail.show(k), S_keys_of(SERIES_KEYS))
      end
    end
    if type(s.unit) ~= "string" or not S_unit_factor(s.unit) then
      bad("series %s: unknown unit %s", fail.show(name), fail.show(s.unit))
    end
    if type(s.value) ~= "string" then bad("series %s: no value field name", fail.show(name)) end
    if s.monotone ~= nil and not DIRECTIONS[s.monotone] then
      bad("series %s: monotone must be increasing or decreasing, got %s", fail.show(name), fail.show(s.monotone))
    end
    if type(s.rows) ~= "table" or #s.rows == 0 then bad("series %s has no rows", fail.show(name)) end
    if #s.rows > MAX_ROWS then bad("series %s has more than %d rows", fail.show(name), MAX_ROWS) end
    local seen = {}
    for i, r in ipairs(s.rows) do
      if type(r) ~= "table" then bad("series %s row %d is not a mapping", fail.show(name), i) end
      if type(r[s.value]) ~= "number" then
        bad("series %s row %d: %s is not a number", fail.show(name), i, fail.show(s.value))
      end
      if s.spread ~= nil and type(r[s.spread]) ~= "number" then
        bad("series %s row %d: %s is not a number", fail.show(name), i, fail.show(s.spread))
      end
      if s.key ~= nil then
        local kv = r[s.key]
        if kv == nil then bad("series %s row %d has no %s", fail.show(name), i, fail.show(s.key)) end
        if seen[kv] then bad("series %s: two rows with %s = %s", fail.show(name), s.key, tostring(kv)) end
        seen[kv] = true
      end
    end
  end
  for name, l in pairs(doc.logs or {}) do
    if type(l) ~= "table" then bad("log %s is not a mapping", fail.show(name)) end
    for k in pairs(l) do
      if not LOG_KEYS[k] then
        bad("log %s: unknown field %s; known: %s", fail.show(name), fail.show(k), S_keys_of(LOG_KEYS))
      end
    end
    if not PARSERS[l.format] then
      bad("log %s: unknown format %s; known: %s", fail.show(name), fail.show(l.format), S_keys_of(PARSERS))
    end
    if (l.file == nil) == (l.text == nil) then bad("log %s: give exactly one of file and text", fail.show(name)) end
    if l.file ~= nil and type(l.file) ~= "string" then bad("log %s: file must be a path", fail.show(name)) end
    if l.text ~= nil and type(l.text) ~= "string" then bad("log %s: text must be a string", fail.show(name)) end
    -- a loader that leaves YAML booleans untyped hands over "true"/"false"
    if l.trimmed == "true" then l.trimmed = true elseif l.trimmed == "false" then l.trimmed = false end
    if l.trimmed ~= nil and (l.format ~= "llamacpp.breakdown" or type(l.trimmed) ~= "boolean") then
      bad("log %s: trimmed is a boolean of llamacpp.breakdown logs", fail.show(name))
    end
  end
end

local Record = {}
Record.__index = Record

local function S_mark(self, command)
  local p = self._doc.provenance
  local prov = {machine = p.machine, engine = p.engine, build = p.build, model = p.model,
    command = command or p.command, date = p.date, source = p.source, file = self.path,
    evidence = p.evidence}
  local f = self._mark
  if f == nil then
    -- the host function, looked up at call time (absent outside kvsite, e.g. plain lua)
    local k = kvsite
    f = type(k) == "table" and k.measured or nil
  end
  if f then f(prov) end
end

local function S_series(self, name)
  local s = self._doc.series and self._doc.series[name]
  if type(name) ~= "string" or not s then
    fail.raisef("%s: no series %s; known: %s", self.path, fail.show(name), S_keys_of(self._doc.series or {}))
  end
  return s
end

local function S_show_sel(sel)
  if type(sel) ~= "table" then return tostring(sel) end
  local ks = {}
  for k, v in pairs(sel) do ks[#ks + 1] = tostring(k) .. " = " .. tostring(v) end
  table.sort(ks)
  return table.concat(ks, ", ")
end

local function S_pick(self, name, sel)
  local s = S_series(self, name)
  local found, count = nil, 0
  for _, r in ipairs(s.rows) do
    local ok
    if sel == nil then
      ok = true
    elseif type(sel) == "table" then
      ok = true
      for k, v in pairs(sel) do if r[k] ~= v then ok = false end end
    else
      if s.key == nil then
        fail.raisef("%s: series %s has no key field; select rows with a table {field = value}", self.path, fail.show(name))
      end
      ok = r[s.key] == sel
    end
    if ok then found, count = r, count + 1 end
  end
  if count == 1 then return s, found end
  if count == 0 then
    local known = {}
    if s.key then for _, r in ipairs(s.rows) do known[#known + 1] = tostring(r[s.key]) end end
    fail.raisef("%s: series %s has no row %s%s", self.path, fail.show(name),
      type(sel) == "table" and ("with " .. S_show_sel(sel)) or ("with " .. tostring(s.key) .. " = " .. tostring(sel)),
      #known > 0 and ("; known: " .. table.concat(known, ", ")) or "")
  end
  fail.raisef("%s: series %s has %d rows%s; select one", self.path, fail.show(name), count,
    sel == nil and "" or (" with " .. S_show_sel(sel)))
end

-- r:value(series, sel) -> the measured value in base units (MiB -> bytes; t/s as is).
-- sel: the row's key value (4096, "q8_0"), a table {field = value, ...}, or nil for a
-- one-row series.
Record.value = fail.api(function(self, name, sel)
  local s, r = S_pick(self, name, sel)
  S_mark(self, s.command)
  local v = r[s.value] * S_unit_factor(s.unit)
  return math.tointeger(v) or v
end)

-- r:spread(series, sel) -> the row's spread (standard deviation) in base units.
Record.spread = fail.api(function(self, name, sel)
  local s, r = S_pick(self, name, sel)
  if not s.spread then fail.raisef("%s: series %s has no spread field", self.path, fail.show(name)) end
  S_mark(self, s.command)
  return r[s.spread] * S_unit_factor(s.unit)
end)

-- r:row(series, sel) -> a copy of the row, as stored (in the series' unit).
Record.row = fail.api(function(self, name, sel)
  local s, r = S_pick(self, name, sel)
  S_mark(self, s.command)
  return S_copy(r)
end)

-- r:series(name) -> {name, what, unit, key, value, spread, monotone, discarded, command,
-- file, rows} (copies; values as stored, in unit). The input of meas.agree / meas.monotone.
Record.series = fail.api(function(self, name)
  local s = S_series(self, name)
  S_mark(self, s.command)
  local c = {name = name, file = self.path}
  for k, v in pairs(s) do if k ~= "rows" then c[k] = v end end
  c.rows = {}
  for i, r in ipairs(s.rows) do c.rows[i] = S_copy(r) end
  return c
end)

-- r:log(name) -> the log parsed by its format's parser (see llamacpp.lua / vllm.lua).
Record.log = fail.api(function(self, name)
  local l = self._doc.logs and self._doc.logs[name]
  if type(name) ~= "string" or not l then
    fail.raisef("%s: no log %s; known: %s", self.path, fail.show(name), S_keys_of(self._doc.logs or {}))
  end
  local text, where = l.text, self.path .. "#" .. name
  if l.file then
    text, where = self._data(l.file), l.file
    if type(text) ~= "string" then
      fail.raisef("%s: log %s: %s is not a text file (.log or .txt)", self.path, fail.show(name), l.file)
    end
  end
  local out = PARSERS[l.format](text, where, l)
  S_mark(self, l.command)
  return out
end)

-- r:names() -> {series = {sorted names}, logs = {sorted names}}; marks nothing.
Record.names = fail.api(function(self)
  local out = {series = {}, logs = {}}
  for k in pairs(self._doc.series or {}) do out.series[#out.series + 1] = k end
  for k in pairs(self._doc.logs or {}) do out.logs[#out.logs + 1] = k end
  table.sort(out.series)
  table.sort(out.logs)
  return out
end)

local OPEN_OPTS = S_set{"mark", "data"}

-- meas.open(path[, {mark = fn, data = fn}]) -> a record. path is relative to checks/
-- ("measurements/x.yaml"). mark replaces kvsite.measured and data replaces the global data
-- (tests use both). Marks nothing.
M.open = fail.api(function(path, opts)
  if type(path) ~= "string" then fail.raisef("meas.open: path must be a string, got %s", type(path)) end
  opts = opts or {}
  fail.check_keys("meas.open", opts, OPEN_OPTS)
  local load = opts.data or data
  if type(load) ~= "function" then fail.raise("meas.open: no data() loader in this environment") end
  local doc = load(path)
  S_validate(path, doc)
  local p = {}
  for k, v in pairs(doc.provenance) do p[k] = v end
  return setmetatable({path = path, provenance = p, _doc = doc, _mark = opts.mark, _data = load}, Record)
end)

-- meas.context(path, log, sel): the llama.cpp context sel ({n_ctx = 4096, type = "q8_0"}, see
-- llamacpp.context) of the llamacpp.contexts log `log` of record `path`, in one call (for a
-- figure expression; marks it measured like every read).
M.context = fail.api(function(path, log, sel)
  return llamacpp.context(M.open(path):log(log), sel)
end)

-- meas.value(path, series, sel): open and read in one call (for a figure expression).
M.value = fail.api(function(path, name, sel)
  return M.open(path):value(name, sel)
end)

---------------------------------------------------------------------------------------------
-- checks over series

local function S_fmt(x)
  return string.format("%.6g", x)
end

local function S_row_name(s, r, i)
  if s.key == "label" then return tostring(r.label) end
  if s.key then return string.format("%s = %s", s.key, tostring(r[s.key])) end
  return "row " .. i
end

local function S_check_series(what, s)
  if type(s) ~= "table" or type(s.rows) ~= "table" or type(s.value) ~= "string" then
    fail.raisef("%s: expects a series (r:series \"name\")", what)
  end
end

-- meas.overlap(m1, s1, m2, s2[, k]) -> true when [m1 - k*s1, m1 + k*s1] and
-- [m2 - k*s2, m2 + k*s2] overlap (k defaults to 2).
M.overlap = fail.api(function(m1, s1, m2, s2, k)
  k = k or 2
  if type(m1) ~= "number" or type(s1) ~= "number" or type(m2) ~= "number" or type(s2) ~= "number"
      or type(k) ~= "number" then
    fail.raise("meas.overlap: expects numbers (mean, spread, mean, spread[, k])")
  end
  return m1 - k * s1 <= m2 + k * s2 and m2 - k * s2 <= m1 + k * s1
end)

-- meas.agree(a, b[, {k = 2}]) -> true, or an error naming the first row where two rounds
-- disagree. Rule: rows with the same key agree when their intervals mean +- k*spread overlap;
-- both series must cover the same keys.
M.agree = fail.api(function(a, b, opts)
  S_check_series("meas.agree", a)
  S_check_series("meas.agree", b)
  opts = opts or {}
  fail.check_keys("meas.agree", opts, {k = true})
  local k = opts.k or 2
  if type(k) ~= "number" or k <= 0 then fail.raisef("meas.agree: k must be a positive number, got %s", fail.show(k)) end
  local an, bn = a.name or "first series", b.name or "second series"
  if not a.spread or not b.spread then fail.raisef("meas.agree: %s and %s need a spread field", an, bn) end
  if a.unit ~= b.unit then fail.raisef("meas.agree: %s is in %s, %s in %s", an, tostring(a.unit), bn, tostring(b.unit)) end
  if a.key ~= b.key then fail.raisef("meas.agree: %s and %s have different keys", an, bn) end
  local function index(s)
    local t = {}
    for i, r in ipairs(s.rows) do t[s.key and r[s.key] or i] = r end
    return t
  end
  local ai, bi = index(a), index(b)
  for i, r in ipairs(a.rows) do
    local key = a.key and r[a.key] or i
    if not bi[key] then fail.raisef("%s and %s cover different rows: %s is only in %s", an, bn, S_row_name(a, r, i), an) end
  end
  for i, r in ipairs(b.rows) do
    local key = b.key and r[b.key] or i
    if not ai[key] then fail.raisef("%s and %s cover different rows: %s is only in %s", an, bn, S_row_name(b, r, i), bn) end
  end
  for i, r in ipairs(a.rows) do
    local q = bi[a.key and r[a.key] or i]
    local m1, s1, m2, s2 = r[a.value], r[a.spread], q[b.value], q[b.spread]
    if not M.overlap(m1, s1, m2, s2, k) then
      fail.raisef("%s and %s disagree at %s: %s ± %s and %s ± %s %s do not overlap at k = %s ([%s, %s] vs [%s, %s])",
        an, bn, S_row_name(a, r, i), S_fmt(m1), S_fmt(s1), S_fmt(m2), S_fmt(s2), tostring(a.unit), S_fmt(k),
        S_fmt(m1 - k * s1), S_fmt(m1 + k * s1), S_fmt(m2 - k * s2), S_fmt(m2 + k * s2))
    end
  end
  return true
end)

-- meas.monotone(s[, {direction = "decreasing"|"increasing", tolerance = 0}]) -> true, or an
-- error naming the two rows where the series first breaks its declared order. Rule: in row
-- order, each value is <= (decreasing) or >= (increasing) the one before, within tolerance
-- (absolute, in the series' unit). The direction defaults to the series' own `monotone`.
M.monotone = fail.api(function(s, opts)
  S_check_series("meas.monotone", s)
  opts = opts or {}
  fail.check_keys("meas.monotone", opts, {direction = true, tolerance = true})
  local dir = opts.direction or s.monotone
  local name = s.name or "series"
  if not DIRECTIONS[dir] then
    fail.raisef("meas.monotone: %s declares no direction; pass {direction = \"decreasing\"} or \"increasing\"", fail.show(name))
  end
  local tol = opts.tolerance or 0
  if type(tol) ~= "number" or tol < 0 then fail.raise("meas.monotone: tolerance must be a non-negative number") end
  for i = 2, #s.rows do
    local prev, cur = s.rows[i - 1][s.value], s.rows[i][s.value]
    local broken = (dir == "decreasing" and cur > prev + tol) or (dir == "increasing" and cur < prev - tol)
    if broken then
      fail.raisef("series %s is declared %s, but row %d (%s: %s %s) is %s row %d (%s: %s %s)",
        fail.show(name), dir, i, S_row_name(s, s.rows[i], i), S_fmt(cur), tostring(s.unit),
        dir == "decreasing" and "above" or "below", i - 1, S_row_name(s, s.rows[i - 1], i - 1),
        S_fmt(prev), tostring(s.unit))
    end
  end
  return true
end)

return M
