-- llamacpp: parsers for llama.cpp and llama-bench output (engine-formats.md sections 1-3).
--
-- Pure functions: text in, fresh tables out; nothing is read and nothing is marked
-- measured here (meas.lua does that for records with provenance). Every parser takes
-- (text, name): name is used in errors, "name:line: what is wrong". Lines may carry any log
-- prefix (timestamps, "llama[2]: ", ...): markers are searched, never anchored at the start.
-- Sizes are returned as printed, in MiB (fields end in _mib); multiply by units.MiB for bytes.
--
-- Patterns never backtrack over a whole line: markers are found with plain find, and text
-- before a marker is read backwards over a bounded window.

local fail = require "fail"
local logtext = require "logtext"
local json = require "json"
local csv = require "csv"

local M = {}

local fail_at, trim = logtext.fail_at, logtext.trim

-- The identifier just before position p (a __func__ prefix), scanning back at most 128 bytes.
local function S_word_before(line, p)
  local j, stop = p - 1, math.max(1, p - 128)
  while j >= stop and line:sub(j, j):match("[%w_]") do j = j - 1 end
  local w = line:sub(j + 1, p - 1)
  return w ~= "" and w or nil
end

---------------------------------------------------------------------------------------------
-- 1. memory breakdown [MiB] (engine-formats.md 1.2-1.4)

local BD_MARK = "_memory_breakdown_print:"
local BD_COLS = "total free self model context compute unaccounted"
local BD_COLS_TRIMMED = "total free self model context compute"
local WRAP = 1 << 44 -- unsigned unaccounted: a value above 2^43 is value - 2^44 (before #22424)

-- func (or nil), body from the first "|" (or nil when the line is not a breakdown line)
local function S_bd_locate(line)
  local p = line:find(BD_MARK, 1, true)
  if p then
    local bar = line:find("|", p + #BD_MARK, true)
    local func = S_word_before(line, p)
    return func and (func .. BD_MARK:sub(1, -2)) or nil, bar and line:sub(bar) or ""
  end
  -- unprefixed lines, as in a hand-trimmed quote: a row "|  - NAME | ..." or the header
  if line:match("^%s*|%s+%- ") or line:match("^%s*|%s*memory breakdown %[MiB%]") then
    return nil, line:match("^%s*(|.*)$")
  end
  return nil, nil
end

-- raw (untrimmed) cells of "| a | b |"
local function S_raw_cells(body)
  local s = body:gsub("%s+$", "")
  if s:sub(1, 1) ~= "|" or s:sub(-1) ~= "|" or #s < 2 then return nil end
  local out, pos, inner = {}, 1, s:sub(2, -2)
  while true do
    local e = inner:find("|", pos, true)
    out[#out + 1] = inner:sub(pos, (e or #inner + 1) - 1)
    if not e then break end
    pos = e + 1
  end
  return out
end

local function S_words(s)
  local w = {}
  for x in s:gmatch("%S+") do w[#w + 1] = x end
  return table.concat(w, " ")
end

local function S_note(t, reason)
  for _, r in ipairs(t.trim_reasons) do if r == reason then return end end
  t.trim_reasons[#t.trim_reasons + 1] = reason
end

local DEV_FULL = "^(%d+)%s*=%s*(%d+)%s*%+%s*%(%s*(%d+)%s*=%s*(%d+)%s*%+%s*(%d+)%s*%+%s*(%d+)%s*%)%s*%+%s*(%-?%d+)$"
local DEV_TRIM = "^(%d+)%s*=%s*(%d+)%s*%+%s*%(%s*(%d+)%s*=%s*(%d+)%s*%+%s*(%d+)%s*%+%s*(%d+)%s*%)$"
local OTHER_ROW = "^(%d+)%s*=%s*(%d+)%s*%+%s*(%d+)%s*%+%s*(%d+)$"

local function S_bd_row(t, raw, func, name, ln)
  if #raw ~= 2 then fail_at(name, ln, "malformed memory breakdown row") end
  local indent = #raw[1]:match("^ *")
  local label = trim(raw[1])
  if label:sub(1, 2) ~= "- " then fail_at(name, ln, "malformed memory breakdown row") end
  label = trim(label:sub(3))
  local nums = trim(raw[2])
  local row = {line = ln, label = label}
  row.name = label:match("^%S+")
  row.desc = label:match("^%S+ %((.*)%)$")
  local tot, free, self, model, ctx, comp, un = nums:match(DEV_FULL)
  if not tot then
    tot, free, self, model, ctx, comp = nums:match(DEV_TRIM)
    if tot then S_note(t, "no unaccounted column") end
  end
  if tot then
    row.kind = "device"
    row.total_mib, row.free_mib = math.tointeger(tonumber(tot)), math.tointeger(tonumber(free))
  else
    self, model, ctx, comp = nums:match(OTHER_ROW)
    if not self then fail_at(name, ln, "malformed memory breakdown row") end
    row.kind = label == "Host" and "host" or "other"
  end
  row.self_mib, row.model_mib = math.tointeger(tonumber(self)), math.tointeger(tonumber(model))
  row.context_mib, row.compute_mib = math.tointeger(tonumber(ctx)), math.tointeger(tonumber(comp))
  for _, k in ipairs{"total_mib", "free_mib", "self_mib", "model_mib", "context_mib", "compute_mib"} do
    if row[k] == nil and (row.kind == "device" or (k ~= "total_mib" and k ~= "free_mib")) then
      fail_at(name, ln, "malformed memory breakdown row: number too large")
    end
  end
  if un then
    local u = math.tointeger(tonumber(un))
    if not u then fail_at(name, ln, "malformed memory breakdown row: number too large") end
    if u > WRAP // 2 then u = u - WRAP; row.unaccounted_wrapped = true end
    row.unaccounted_mib = u
  end
  if row.kind == "device" then
    -- total = free + self + unaccounted holds to +-3 MiB only (each printed value is floored)
    row.implied_unaccounted_mib = row.total_mib - row.free_mib - row.self_mib
  end
  if not func then S_note(t, "no llama_memory_breakdown_print/common_memory_breakdown_print prefix") end
  if indent ~= 3 then
    S_note(t, string.format("row label indented by %d spaces (llama.cpp prints 3)", indent))
  end
  t.rows[#t.rows + 1] = row
  if row.name and not t.by_name[row.name] then t.by_name[row.name] = row end
end

local BD_OPTS = {allow_trimmed = true}

-- llamacpp.breakdown(text, name[, {allow_trimmed = true}]) -> array of tables, one per
-- printed table: {line, func, header, trimmed, trim_reasons, rows, by_name}; each row:
-- {line, label, name, desc, kind = "device"|"host"|"other", total_mib, free_mib, self_mib,
-- model_mib, context_mib, compute_mib, unaccounted_mib, unaccounted_wrapped,
-- implied_unaccounted_mib}. A table that is not verbatim llama.cpp output (no header, no
-- unaccounted column, no function prefix, wrong indentation) is an error unless
-- allow_trimmed is set; then it comes back with trimmed = true and the reasons.
M.breakdown = fail.api(function(text, name, opts)
  text, name = logtext.args("llamacpp.breakdown", text, name)
  opts = opts or {}
  fail.check_keys("llamacpp.breakdown", opts, BD_OPTS)
  local lines = logtext.lines(text, name)
  local tables, cur = {}, nil
  local function start(ln, func, header)
    cur = {line = ln, func = func, header = header, rows = {}, by_name = {}, trim_reasons = {}}
    tables[#tables + 1] = cur
    if not header then S_note(cur, "no header line") end
  end
  for ln = logtext.header_end(lines), #lines do
    local func, body = S_bd_locate(lines[ln])
    if body then
      local raw = S_raw_cells(body)
      if not raw then fail_at(name, ln, "malformed memory breakdown row") end
      if trim(raw[1]) == "memory breakdown [MiB]" then
        start(ln, func, true)
        local cols = #raw == 2 and S_words(raw[2]) or ""
        if cols == BD_COLS_TRIMMED then
          S_note(cur, "no unaccounted column")
        elseif cols ~= BD_COLS then
          fail_at(name, ln, "malformed memory breakdown header")
        end
        if not func then S_note(cur, "no llama_memory_breakdown_print/common_memory_breakdown_print prefix") end
      else
        if not cur then start(ln, func, false) end
        S_bd_row(cur, raw, func, name, ln)
      end
    else
      cur = nil -- a table ends at the first line that is not part of it
    end
  end
  if #tables == 0 then fail.raisef("%s: no memory breakdown table found", name) end
  for _, t in ipairs(tables) do
    t.trimmed = #t.trim_reasons > 0
    if #t.rows == 0 then fail_at(name, t.line, "memory breakdown header without rows") end
    if t.trimmed and not opts.allow_trimmed then
      fail_at(name, t.line, "memory breakdown is not verbatim llama.cpp output (%s); "
        .. "pass {allow_trimmed = true} to read it anyway", table.concat(t.trim_reasons, "; "))
    end
  end
  return tables
end)

---------------------------------------------------------------------------------------------
-- 2. KV cache size lines of every era (engine-formats.md section 2)

local NUM = "([%d.]+)"

local function S_mib(s, name, ln, what)
  local v = logtext.number(s)
  if not v then fail_at(name, ln, "malformed %s", what) end
  return v
end

-- "K (f16): 448.00 MiB, V (f16): 448.00 MiB" (or R/S for recurrent memory)
local function S_pair(s, a, b)
  local ta, va, tb, vb = s:match("^" .. a .. "%s*%(([%w_]+)%)%s*:%s*" .. NUM .. "%s*MiB%s*,%s*" .. b
    .. "%s*%(([%w_]+)%)%s*:%s*" .. NUM .. "%s*MiB%s*$")
  return ta, va, tb, vb
end

local function S_size_line(e, rest, name, ln)
  local what = e.func .. " size line"
  local total, inner, tail = rest:match("^%s*" .. NUM .. "%s*MiB%s*(%b())%s*,%s*(.*)$")
  if not total then fail_at(name, ln, "malformed %s", what) end
  e.total_mib = S_mib(total, name, ln, what)
  local cells, layers, seqs = inner:match("^%(%s*(%d+)%s*cells%s*,%s*(%d+)%s*layers%s*(.-)%s*%)$")
  if not cells then fail_at(name, ln, "malformed %s", what) end
  e.cells, e.layers = math.tointeger(tonumber(cells)), math.tointeger(tonumber(layers))
  if seqs ~= "" then
    local a, b = seqs:match("^,%s*(%d+)%s*/%s*(%d+)%s*seqs$")
    if a then
      e.seqs, e.streams = math.tointeger(tonumber(a)), math.tointeger(tonumber(b))
    else
      a, b = seqs:match("^,%s*(%d+)%s*seqs%s+(%d+)%s*rs_seq$")
      if a then
        e.seqs, e.rs_seqs = math.tointeger(tonumber(a)), math.tointeger(tonumber(b))
      else
        a = seqs:match("^,%s*(%d+)%s*seqs$")
        if not a then fail_at(name, ln, "malformed %s", what) end
        e.seqs = math.tointeger(tonumber(a))
      end
    end
  end
  local tk, k, tv, v = S_pair(tail, "K", "V")
  if tk then
    e.kind, e.type_k, e.k_mib, e.type_v, e.v_mib = "size", tk, S_mib(k, name, ln, what), tv, S_mib(v, name, ln, what)
    e.v_less = e.v_mib == 0 -- MLA since #19067: K only
    return
  end
  -- recurrent state: R and S, and since 2026 a third buffer P ("..., P (f32): 0.00 MiB")
  local rs, tp, pm = tail, nil, nil
  local head, ptype, pmib = tail:match("^(.-)%s*,%s*P%s*%(([%w_]+)%)%s*:%s*" .. NUM .. "%s*MiB%s*$")
  if head then rs, tp, pm = head, ptype, pmib end
  local tr, r, ts, s = S_pair(rs, "R", "S")
  if not tr then fail_at(name, ln, "malformed %s", what) end
  e.kind, e.type_r, e.r_mib, e.type_s, e.s_mib = "recurrent", tr, S_mib(r, name, ln, what), ts, S_mib(s, name, ln, what)
  if tp then e.type_p, e.p_mib = tp, S_mib(pm, name, ln, what) end
end

local function S_kv_line(line, name, ln)
  local p = line:find("KV buffer size", 1, true) or line:find("RS buffer size", 1, true)
  if p then
    local rs = line:sub(p, p + 1) == "RS"
    local what = rs and "RS buffer size line" or "KV buffer size line"
    local before = line:sub(math.max(1, p - 160), p - 1)
    local func, buf = before:match("([%w_]+):%s+(%S+)%s+$")
    local mib = line:sub(p + 14):match("^%s*=%s*" .. NUM .. "%s*MiB%s*$")
    if not func or not mib then fail_at(name, ln, "malformed %s", what) end
    return {kind = rs and "rs_buffer" or "buffer", func = func, buffer = buf, mib = S_mib(mib, name, ln, what)}
  end
  p = line:find("KV self size", 1, true)
  if p then
    local func = line:sub(math.max(1, p - 130), p - 1):match("([%w_]+):%s*$")
    local total, tail = line:sub(p + 12):match("^%s*=%s*" .. NUM .. "%s*MiB%s*,%s*(.*)$")
    if not func or not total then fail_at(name, ln, "malformed KV self size line") end
    local e = {kind = "self", func = func, total_mib = S_mib(total, name, ln, "KV self size line")}
    local tk, k, tv, v = S_pair(tail, "K", "V")
    if tk then
      e.type_k, e.k_mib, e.type_v, e.v_mib = tk, S_mib(k, name, ln, "KV self size line"), tv,
        S_mib(v, name, ln, "KV self size line")
      return e
    end
    local tr, r, ts, s = S_pair(tail, "R", "S")
    if not tr then fail_at(name, ln, "malformed KV self size line") end
    e.kind, e.type_r, e.r_mib, e.type_s, e.s_mib = "recurrent_self", tr, S_mib(r, name, ln, "KV self size line"),
      ts, S_mib(s, name, ln, "KV self size line")
    return e
  end
  p = line:find("kv self size", 1, true)
  if p then
    -- 2023 era: "%s: kv self size  = %7.2f MB"; the number is bytes/2^20 like every era
    local func = line:sub(math.max(1, p - 130), p - 1):match("([%w_]+):%s*$")
    local total = line:sub(p + 12):match("^%s*=%s*" .. NUM .. "%s*MB%s*$")
    if not func or not total then fail_at(name, ln, "malformed kv self size line") end
    return {kind = "self_mb", func = func, total_mib = S_mib(total, name, ln, "kv self size line")}
  end
  p = line:find("KV cache, size =", 1, true)
  if p then
    -- llama_kv_cache_iswa: "creating non-SWA KV cache, size = %u cells" / "creating     SWA ..."
    local func, which = line:sub(math.max(1, p - 200), p - 1):match("([%w_]+):%s*creating%s+(%S+)%s+$")
    local cells = line:sub(p + 16):match("^%s*(%d+)%s*cells%s*$")
    if not func or not cells or (which ~= "SWA" and which ~= "non-SWA") then
      fail_at(name, ln, "malformed creating KV cache line")
    end
    return {kind = "iswa", func = func, swa = which == "SWA", cells = math.tointeger(tonumber(cells))}
  end
  p = line:find("kv_size = ", 1, true)
  if p and line:find("type_k = '", p, true) then
    -- Feb 2025 llama_kv_cache_init
    local func = line:sub(math.max(1, p - 130), p - 1):match("([%w_]+):%s*$")
    local size, off, tk, tv, nl, shift = line:sub(p):match(
      "^kv_size = (%d+), offload = (%d+), type_k = '([%w_]+)', type_v = '([%w_]+)', n_layer = (%d+), can_shift = (%d+)%s*$")
    if not func or not size then fail_at(name, ln, "malformed kv_size line") end
    return {kind = "init", func = func, cells = math.tointeger(tonumber(size)), offload = off == "1",
      type_k = tk, type_v = tv, layers = math.tointeger(tonumber(nl)), can_shift = shift == "1"}
  end
  -- "llama_kv_cache: size = ..." (and _unified, and llama_memory_recurrent)
  local s, e = line:find(":%s*size%s*=")
  while s do
    local func = S_word_before(line, s)
    if func and (func:sub(1, 14) == "llama_kv_cache" or func == "llama_memory_recurrent") then
      local entry = {func = func}
      S_size_line(entry, line:sub(e + 1), name, ln)
      return entry
    end
    s, e = line:find(":%s*size%s*=", e + 1)
  end
  return nil
end

-- llamacpp.kv_cache(text, name) -> array of entries in log order, each with line, func, kind:
--   "size"      llama_kv_cache(_unified): size = ... : total_mib, cells, layers, seqs, streams,
--               type_k, k_mib, type_v, v_mib, v_less (MLA, V 0.00 MiB)
--   "recurrent" llama_memory_recurrent: size = ...: total_mib, cells, layers, seqs, rs_seqs,
--               type_r, r_mib, type_s, s_mib (and type_p, p_mib when printed)
--   "self"      KV self size (MiB, 2023-12 .. 2025-05): total_mib, type_k, k_mib, type_v, v_mib
--   "recurrent_self"  KV self size with R/S
--   "self_mb"   kv self size ... MB (2023): total_mib (printed "MB", computed as bytes/2^20)
--   "buffer" / "rs_buffer"  <buf> KV/RS buffer size: buffer, mib
--   "iswa"      creating (non-)SWA KV cache: swa, cells
--   "init"      kv_size = ... (Feb 2025): cells, offload, type_k, type_v, layers, can_shift
-- Entries after an "iswa" line carry cache = "SWA" or "non-SWA". A line that carries a
-- marker but not its format is an error: "name:line: malformed llama_kv_cache size line".
M.kv_cache = fail.api(function(text, name)
  text, name = logtext.args("llamacpp.kv_cache", text, name)
  local lines = logtext.lines(text, name)
  local out, cache = {}, nil
  for ln = logtext.header_end(lines), #lines do
    local e = S_kv_line(lines[ln], name, ln)
    if e then
      e.line = ln
      if e.kind == "iswa" then cache = e.swa and "SWA" or "non-SWA" else e.cache = cache end
      out[#out + 1] = e
    end
  end
  if #out == 0 then fail.raisef("%s: no llama.cpp KV cache lines found", name) end
  return out
end)

---------------------------------------------------------------------------------------------
-- 2b. one log, several contexts (make measure's logs: tests/measure/kvmeasure.cpp)
--
-- Every context llama.cpp creates starts with its own "llama_context: constructing
-- llama_context" line and prints its parameters as "llama_context: <name> = <value>"; the
-- cache lines and the memory breakdown that follow belong to it.

local CTX_MARK = "llama_context: constructing llama_context"
local CTX_INT = {n_seq_max = true, n_ctx = true, n_ctx_seq = true, n_batch = true, n_ubatch = true}
local CTX_STR = {flash_attn = true, kv_unified = true}

-- llamacpp.contexts(text, name) -> {build = {number, commit} or nil, contexts = {...}}; a
-- context: {line, n_ctx, n_ctx_seq, n_seq_max, n_batch, n_ubatch, flash_attn, kv_unified,
-- caches (the kv_cache entries of kinds "size" and "recurrent", in log order, each with
-- cache = "SWA"/"non-SWA" under an iSWA cache), type_k, type_v (of the first size line),
-- kv_mib (sum of the size lines), rs_mib (sum of the recurrent lines), breakdown (the
-- first memory breakdown table after it, or nil)}. A context without n_ctx or without a
-- cache line is an error at its first line.
M.contexts = fail.api(function(text, name)
  text, name = logtext.args("llamacpp.contexts", text, name)
  local lines = logtext.lines(text, name)
  local out, cur, cache = {contexts = {}}, nil, nil
  local bd_from = {}
  for ln = logtext.header_end(lines), #lines do
    local line = lines[ln]
    local num, commit = line:match("llama%.cpp build (%d+) %((%x+)%)")
    if num and not out.build then out.build = {number = math.tointeger(tonumber(num)), commit = commit} end
    if line:find(CTX_MARK, 1, true) then
      cur = {line = ln, caches = {}, kv_mib = 0, rs_mib = 0}
      out.contexts[#out.contexts + 1] = cur
      cache = nil
    elseif cur then
      local k, v = line:match("llama_context: ([%w_]+)%s*=%s*(%S+)%s*$")
      if k and CTX_INT[k] then
        cur[k] = logtext.int(v) or fail_at(name, ln, "malformed llama_context %s line", k)
      elseif k and CTX_STR[k] then
        cur[k] = v
      elseif line:find(BD_MARK, 1, true) and not bd_from[cur] then
        bd_from[cur] = ln
      else
        local e = S_kv_line(line, name, ln)
        if e then
          e.line = ln
          if e.kind == "iswa" then
            cache = e.swa and "SWA" or "non-SWA"
          elseif e.kind == "size" or e.kind == "recurrent" then
            e.cache = cache
            cur.caches[#cur.caches + 1] = e
            if e.kind == "size" then
              cur.kv_mib = cur.kv_mib + e.total_mib
              cur.type_k, cur.type_v = cur.type_k or e.type_k, cur.type_v or e.type_v
            else
              cur.rs_mib = cur.rs_mib + e.total_mib
            end
          end
        end
      end
    end
  end
  if #out.contexts == 0 then fail.raisef("%s: no llama_context found (no %q line)", name, CTX_MARK) end
  for _, c in ipairs(out.contexts) do
    if not c.n_ctx then fail_at(name, c.line, "llama_context without an n_ctx line") end
    if #c.caches == 0 then fail_at(name, c.line, "llama_context without a KV cache size line") end
    local from = bd_from[c]
    if from then
      -- the table's own lines only: parse from its header to the first line that is not one
      local stop = from
      while lines[stop + 1] and lines[stop + 1]:find(BD_MARK, 1, true) do stop = stop + 1 end
      local chunk = {}
      for i = 1, stop do chunk[i] = i >= from and lines[i] or "" end
      c.breakdown = M.breakdown(table.concat(chunk, "\n"), name)[1]
    end
  end
  return out
end)

local PICK_KEYS = {n_ctx = true, type = true, type_k = true, type_v = true, n_seq_max = true, n_ubatch = true}

-- llamacpp.context(parsed, {n_ctx = 4096, type = "q8_0"}) -> the one context of
-- llamacpp.contexts(...) with those parameters (type sets type_k and type_v alike); none or
-- several is an error that lists what the log has.
M.context = fail.api(function(parsed, sel)
  if type(parsed) ~= "table" or type(parsed.contexts) ~= "table" then
    fail.raise("llamacpp.context: expects the result of llamacpp.contexts")
  end
  if type(sel) ~= "table" then fail.raise("llamacpp.context: expects a selection table {n_ctx = ..., type = ...}") end
  fail.check_keys("llamacpp.context", sel, PICK_KEYS)
  local want = {n_ctx = sel.n_ctx, type_k = sel.type_k or sel.type, type_v = sel.type_v or sel.type,
    n_seq_max = sel.n_seq_max, n_ubatch = sel.n_ubatch}
  local found, n, have = nil, 0, {}
  for _, c in ipairs(parsed.contexts) do
    local ok = true
    for k, v in pairs(want) do if c[k] ~= v then ok = false end end
    if ok then found, n = c, n + 1 end
    have[#have + 1] = string.format("n_ctx %s %s/%s", tostring(c.n_ctx), tostring(c.type_k), tostring(c.type_v))
  end
  if n ~= 1 then
    fail.raisef("llamacpp.context: %s contexts with n_ctx = %s, type_k = %s, type_v = %s; the log has: %s",
      n == 0 and "no" or tostring(n), tostring(want.n_ctx), tostring(want.type_k), tostring(want.type_v),
      table.concat(have, ", "))
  end
  return found
end)

-- llamacpp.per_token(context) -> the bytes one token takes in the context's KV caches: each
-- size line's total over its cells, summed (the cost of a token inside every window, as
-- kv.per_token). Totals are printed to 0.01 MiB, so a short context can be off by a few
-- bytes per token; the 32,768-cell contexts of make measure divide exactly.
M.per_token = fail.api(function(c)
  if type(c) ~= "table" or type(c.caches) ~= "table" then
    fail.raise("llamacpp.per_token: expects a context (llamacpp.context)")
  end
  local total = 0
  for _, e in ipairs(c.caches) do
    if e.kind == "size" then total = total + e.total_mib * 1048576 / e.cells end
  end
  return math.tointeger(total) or total
end)

-- llamacpp.kv_bytes(context) -> the context's KV caches in bytes (the size lines' MiB).
M.kv_bytes = fail.api(function(c)
  if type(c) ~= "table" or type(c.kv_mib) ~= "number" then
    fail.raise("llamacpp.kv_bytes: expects a context (llamacpp.context)")
  end
  local b = c.kv_mib * 1048576
  return math.tointeger(b) or b
end)

---------------------------------------------------------------------------------------------
-- 3. llama-bench (engine-formats.md section 3)

local function S_set(list)
  local s = {}
  for _, k in ipairs(list) do s[k] = true end
  return s
end

-- field types of the CSV/JSON output (engine-formats.md 3.1)
local INT_F = S_set{"build_number", "n_batch", "n_ubatch", "n_threads", "poll", "model_size",
  "model_n_params", "n_gpu_layers", "main_gpu", "n_prompt", "n_gen", "n_depth", "avg_ns",
  "stddev_ns", "no_op_offload", "n_cpu_moe", "fit_target", "fit_min_ctx", "flash_attn"}
local BOOL_F = S_set{"no_kv_offload", "cpu_strict", "embeddings", "no_host",
  -- per-backend booleans until 2024-11 (#10256)
  "cuda", "vulkan", "kompute", "metal", "sycl", "rpc", "gpu_blas", "blas"}
local FLOAT_F = S_set{"avg_ts", "stddev_ts"}

local function S_test_name(np, ng, nd)
  local t
  if np > 0 and ng > 0 then t = string.format("pp%d+tg%d", np, ng)
  elseif ng > 0 then t = string.format("tg%d", ng)
  else t = string.format("pp%d", np) end
  if nd and nd > 0 then t = t .. string.format(" @ d%d", nd) end
  return t
end

-- test cell of the markdown table -> n_prompt, n_gen, n_depth
local function S_parse_test(s)
  local base, depth = s:match("^(.-)%s*@%s*d(%d+)$")
  if not base then base = s end
  local np, ng
  local a, b = base:match("^pp%s?(%d+)%+tg%s?(%d+)$")
  if a then np, ng = a, b
  else
    a = base:match("^pp%s?(%d+)$")
    if a then np, ng = a, "0"
    else
      a = base:match("^tg%s?(%d+)$")
      if not a then return nil end
      np, ng = "0", a
    end
  end
  return math.tointeger(tonumber(np)), math.tointeger(tonumber(ng)), math.tointeger(tonumber(depth or "0"))
end

local MD_INT = S_set{"ngl", "threads", "n_batch", "n_ubatch", "fa", "nkvo", "embd", "nopo", "noh",
  "fitt", "fitc", "mmap"}

local function S_md_row(header, cells, name, ln, tix)
  local row = {line = ln, table = tix, cells = {}}
  for i, h in ipairs(header) do row.cells[h] = cells[i] end
  local c = row.cells
  row.model, row.size, row.params, row.backend = c.model, c.size, c.params, c.backend
  for h, v in pairs(c) do
    if MD_INT[h] then
      local n = logtext.int(v)
      if n == nil then fail_at(name, ln, "malformed llama-bench %s cell %s", h, fail.show(v)) end
      row[h] = n
    end
  end
  -- type_k/type_v columns appear only when they differ from the default f16 (every era)
  row.type_k, row.type_v = c.type_k or "f16", c.type_v or "f16"
  local np, ng, nd = S_parse_test(c.test or "")
  if not np then fail_at(name, ln, "malformed llama-bench test cell %s", fail.show(c.test)) end
  row.n_prompt, row.n_gen, row.n_depth = np, ng, nd
  row.test = S_test_name(np, ng, nd)
  local m, sd = c["t/s"]:match("^([%d.]+)%s*±%s*([%d.]+)$")
  m, sd = logtext.number(m), logtext.number(sd)
  if not m or not sd then fail_at(name, ln, "malformed llama-bench t/s cell %s", fail.show(c["t/s"])) end
  row.ts_mean, row.ts_stddev = m, sd
  return row
end

local function S_is_sep(cells, n)
  if not cells or #cells ~= n then return false end
  for _, c in ipairs(cells) do
    if not c:match("^:?%-+:?$") then return false end
  end
  return true
end

-- llamacpp.bench_md(text, name) -> {rows = {...}, tables = {{line, columns, build}, ...}}.
-- Cells are split on "|" (long model names overflow the widths), so the old and new fa
-- widths and any column set parse alike. Row: model, size, params, backend, ngl, threads,
-- fa, type_k, type_v (f16 when the column is absent), test (normalised: "tg128",
-- "pp512+tg128", "tg128 @ d4096"), n_prompt, n_gen, n_depth, ts_mean, ts_stddev, cells
-- (every cell by column name), line, table. Footer "build: commit (number)" -> build.
M.bench_md = fail.api(function(text, name)
  text, name = logtext.args("llamacpp.bench_md", text, name)
  local lines = logtext.lines(text, name)
  local out = {rows = {}, tables = {}}
  local i = logtext.header_end(lines)
  while i <= #lines do
    local cells = logtext.cells(lines[i])
    if cells and cells[1] == "model" and cells[#cells] == "t/s" then
      local header = cells
      if not S_is_sep(logtext.cells(lines[i + 1] or ""), #header) then
        fail_at(name, i + 1, "llama-bench table header not followed by a separator row")
      end
      local t = {line = i, columns = header}
      out.tables[#out.tables + 1] = t
      local j = i + 2
      while lines[j] and trim(lines[j]):sub(1, 1) == "|" do
        local c = logtext.cells(lines[j])
        if not c or #c ~= #header then
          fail_at(name, j, "malformed llama-bench row: %d cells, the header has %d", c and #c or 0, #header)
        end
        out.rows[#out.rows + 1] = S_md_row(header, c, name, j, #out.tables)
        j = j + 1
      end
      if j == i + 2 then fail_at(name, i, "llama-bench table without rows") end
      local k = j
      while lines[k] and not lines[k]:match("%S") do k = k + 1 end
      local commit, number = (lines[k] or ""):match("^build: (%S+) %((%d+)%)%s*$")
      if commit then
        t.build = {commit = commit, number = math.tointeger(tonumber(number))}
        j = k + 1
      end
      i = j
    else
      i = i + 1
    end
  end
  if #out.rows == 0 then fail.raisef("%s: no llama-bench table found", name) end
  return out
end)

-- type a CSV/JSON record in place; ln is its line for errors
local function S_norm(rec, name, ln)
  for k, v in pairs(rec) do
    if INT_F[k] then
      if k == "flash_attn" and (v == true or v == "true") then v = 1
      elseif k == "flash_attn" and (v == false or v == "false") then v = 0 end
      local n = type(v) == "number" and math.tointeger(v) or (type(v) == "string" and logtext.int(v))
      if not n then fail_at(name, ln, "llama-bench field %s is not an integer: %s", k, fail.show(v)) end
      rec[k] = n
    elseif FLOAT_F[k] then
      local n = type(v) == "number" and v or (type(v) == "string" and logtext.number(v))
      if not n then fail_at(name, ln, "llama-bench field %s is not a number: %s", k, fail.show(v)) end
      rec[k] = n
    elseif BOOL_F[k] then
      if v == 1 or v == "1" or v == "true" or v == true then rec[k] = true
      elseif v == 0 or v == "0" or v == "false" or v == false then rec[k] = false
      else fail_at(name, ln, "llama-bench field %s is not a boolean: %s", k, fail.show(v)) end
    end
  end
  for _, k in ipairs{"n_prompt", "n_gen", "avg_ts", "stddev_ts"} do
    if rec[k] == nil then fail_at(name, ln, "llama-bench record has no %s", k) end
  end
  rec.ts_mean, rec.ts_stddev, rec.fa = rec.avg_ts, rec.stddev_ts, rec.flash_attn
  rec.test = S_test_name(rec.n_prompt, rec.n_gen, rec.n_depth)
  rec.line = ln
  return rec
end

-- llamacpp.bench_csv(text, name) -> {rows = {...}}: every field of the header (INT, FLOAT and
-- BOOL fields typed; flash_attn a number, 0/1 or -1/0/1 by era) plus ts_mean, ts_stddev, fa,
-- test and line, as in bench_md.
M.bench_csv = fail.api(function(text, name)
  text, name = logtext.args("llamacpp.bench_csv", text, name)
  local recs, header = csv.records(text, name)
  local has = S_set(header)
  if not has.avg_ts or not has.n_gen then
    fail.raisef("%s: not a llama-bench CSV header (no avg_ts or n_gen column)", name)
  end
  local rows = {}
  for i, r in ipairs(recs) do
    local ln = r.line
    r.line = nil
    rows[i] = S_norm(r, name, ln)
  end
  return {rows = rows}
end)

-- JSON objects and arrays are both tables (as data() reads them): an array has item 1, an
-- object only string keys. An empty one is taken for an object (it then lacks every field).
local function S_is_list(t) return rawget(t, 1) ~= nil or next(t) == nil end
local function S_is_object(t) return type(t) == "table" and rawget(t, 1) == nil end

-- llamacpp.bench_json(text, name) -> {rows = {...}} from -o json (an array of objects) or
-- -o jsonl (one object per line); rows as bench_csv, plus samples_ns / samples_ts arrays.
M.bench_json = fail.api(function(text, name)
  text, name = logtext.args("llamacpp.bench_json", text, name)
  local lines = logtext.lines(text, name)
  -- blank the header out rather than cut it, so line numbers stay right
  local h = logtext.header_end(lines)
  for i = 1, h - 1 do lines[i] = "" end
  local body = table.concat(lines, "\n")
  local first = body:match("^%s*(.)")
  local rows = {}
  if first == "[" then
    local arr, at = json.decode(body, name, {lines = true})
    if type(arr) ~= "table" or not S_is_list(arr) then fail.raisef("%s: llama-bench JSON is not an array", name) end
    for i = 1, #arr do
      local o = arr[i]
      if not S_is_object(o) then fail.raisef("%s: llama-bench JSON element %d is not an object", name, i) end
      rows[#rows + 1] = S_norm(o, name, at[o])
    end
  elseif first == "{" then
    for ln, l in ipairs(lines) do
      if l:match("%S") then
        local o = json.decode(l, name, {first_line = ln})
        if not S_is_object(o) then fail_at(name, ln, "llama-bench JSONL line is not an object") end
        rows[#rows + 1] = S_norm(o, name, ln)
      end
    end
  else
    fail.raisef("%s: not llama-bench JSON (expected '[' or '{')", name)
  end
  return {rows = rows}
end)

return M
