-- vllm: parser for vLLM's KV-cache capacity log lines (engine-formats.md 5.1).
--
-- Pure: text in, a fresh table out; nothing is marked measured here (see meas.lua).
-- Lines may carry any prefix ("(EngineCore_DP0 pid=3021) INFO 09-23 18:12:33
-- [kv_cache_utils.py:864] "): markers are found with a plain search and the message after
-- the marker must match its format to the end of the line.

local fail = require "fail"
local logtext = require "logtext"

local M = {}

local fail_at = logtext.fail_at

local function S_conc(s, name, ln, what)
  -- "4,096 tokens per request: 110.29x" (V1 has thousands separators, V0 none)
  local len, x = s:match("^%s+([%d,]+)%s+tokens per request:%s*([%d.]+)x%s*$")
  local l, v = logtext.int_sep(len), logtext.number(x)
  if not l or not v then fail_at(name, ln, "malformed vLLM %s line", what) end
  return l, v
end

local GPU = "GPU KV cache size:"
local CONC = "Maximum concurrency for"
local AVAIL = "Available KV cache memory:"
local V0 = "# GPU blocks:"
local OVR = "Overriding num_gpu_blocks="
local CP = "Multiplying the GPU KV cache size by the cp_world_size"

local function S_line(line, name, ln)
  local p = line:find(GPU, 1, true)
  if p then
    local rest = line:sub(p + #GPU)
    local tok, tail = rest:match("^%s*([%d,]+)%s+tokens(.*)$")
    local n = logtext.int_sep(tok)
    if not n then fail_at(name, ln, "malformed vLLM GPU KV cache size line") end
    local e = {kind = "kv_tokens", tokens = n, prefix = line:sub(1, p - 1)}
    if tail:match("^%s*$") then return e end
    -- one-line form (~v0.28): "..., Maximum concurrency for %s tokens per request: %.2fx"
    local c = tail:match("^,%s*Maximum concurrency for(.*)$")
    if not c then fail_at(name, ln, "malformed vLLM GPU KV cache size line") end
    e.max_model_len, e.max_concurrency = S_conc(c, name, ln, "GPU KV cache size")
    return e
  end
  p = line:find(CONC, 1, true)
  if p then
    local l, x = S_conc(line:sub(p + #CONC), name, ln, "Maximum concurrency")
    return {kind = "concurrency", max_model_len = l, max_concurrency = x, prefix = line:sub(1, p - 1)}
  end
  p = line:find(AVAIL, 1, true)
  if p then
    local gib, tail = line:sub(p + #AVAIL):match("^%s*([%d.]+)%s*GiB(.-)%s*$")
    local v = logtext.number(gib)
    if not v or (tail ~= "" and tail ~= " (process-scoped)") then
      fail_at(name, ln, "malformed vLLM Available KV cache memory line")
    end
    return {kind = "available", gib = v, process_scoped = tail ~= "", prefix = line:sub(1, p - 1)}
  end
  p = line:find(V0, 1, true)
  if p then
    local g, c = line:sub(p + #V0):match("^%s*(%d+),%s*# CPU blocks:%s*(%d+)%s*$")
    if not g then fail_at(name, ln, "malformed vLLM # GPU blocks line") end
    return {kind = "blocks", gpu_blocks = math.tointeger(tonumber(g)), cpu_blocks = math.tointeger(tonumber(c)),
      prefix = line:sub(1, p - 1)}
  end
  p = line:find(OVR, 1, true)
  if p then
    local a, b = line:sub(p + #OVR):match("^(%d+) with num_gpu_blocks_override=(%d+)%s*$")
    if not a then fail_at(name, ln, "malformed vLLM num_gpu_blocks override line") end
    return {kind = "override", num_gpu_blocks = math.tointeger(tonumber(a)),
      num_gpu_blocks_override = math.tointeger(tonumber(b)), prefix = line:sub(1, p - 1)}
  end
  p = line:find(CP, 1, true)
  if p then
    local w, a, b = line:sub(p + #CP):match("^ (%d+) %(pcp_world_size (%d+) %* dcp_world_size (%d+)%)%.%s*$")
    if not w then fail_at(name, ln, "malformed vLLM cp_world_size line") end
    return {kind = "cp_multiply", cp_world_size = math.tointeger(tonumber(w)),
      pcp_world_size = math.tointeger(tonumber(a)), dcp_world_size = math.tointeger(tonumber(b)),
      prefix = line:sub(1, p - 1)}
  end
  return nil
end

-- summary field -> entry kinds and field it comes from
local SUMMARY = {
  tokens = {"kv_tokens", "tokens"},
  max_model_len = {"concurrency", "max_model_len"},
  max_concurrency = {"concurrency", "max_concurrency"},
  available_gib = {"available", "gib"},
  gpu_blocks = {"blocks", "gpu_blocks"},
  cpu_blocks = {"blocks", "cpu_blocks"},
}

-- vllm.kv_cache(text, name) -> {entries = {...}, tokens, max_model_len, max_concurrency,
-- available_gib, gpu_blocks, cpu_blocks}. Entries in log order, each with line, prefix and
-- kind: "kv_tokens" (tokens; the one-line form adds max_model_len, max_concurrency),
-- "concurrency", "available" (gib, process_scoped), "blocks" (V0: gpu_blocks, cpu_blocks),
-- "override", "cp_multiply". A summary field is set only when every line that gives it
-- agrees (several workers, several restarts); otherwise read the entries.
M.kv_cache = fail.api(function(text, name)
  text, name = logtext.args("vllm.kv_cache", text, name)
  local lines = logtext.lines(text, name)
  local out = {entries = {}}
  for ln = logtext.header_end(lines), #lines do
    local e = S_line(lines[ln], name, ln)
    if e then
      e.line = ln
      out.entries[#out.entries + 1] = e
    end
  end
  if #out.entries == 0 then fail.raisef("%s: no vLLM KV cache lines found", name) end
  for field, src in pairs(SUMMARY) do
    local v, clash = nil, false
    for _, e in ipairs(out.entries) do
      local x = (e.kind == src[1] or (field ~= "tokens" and e.kind == "kv_tokens")) and e[src[2]] or nil
      if x ~= nil then
        if v ~= nil and v ~= x then clash = true end
        v = v == nil and x or v
      end
    end
    if not clash then out[field] = v end
  end
  return out
end)

return M
