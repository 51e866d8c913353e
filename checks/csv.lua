-- csv: RFC 4180-style CSV in pure Lua, for engine output such as llama-bench -o csv.
--
-- Fields may be double-quoted with "" for a quote; a quoted field does not span lines
-- (no engine here writes one). Cells stay strings: typing is the caller's business.
-- Leading "#" lines (a provenance header) and blank lines are skipped. Errors read
-- "name:line: ...". Returns fresh tables.

local fail = require "fail"
local logtext = require "logtext"

local M = {}

-- Cells of one CSV line; nil, message when malformed.
local function S_split(s)
  local out, i, n = {}, 1, #s
  while true do
    if s:sub(i, i) == '"' then
      local parts, j = {}, i + 1
      while true do
        local q = s:find('"', j, true)
        if not q then return nil, "unterminated quoted field" end
        parts[#parts + 1] = s:sub(j, q - 1)
        if s:sub(q + 1, q + 1) == '"' then
          parts[#parts + 1] = '"'
          j = q + 2
        else
          i = q + 1
          break
        end
      end
      out[#out + 1] = table.concat(parts)
      local c = s:sub(i, i)
      if c == "," then
        i = i + 1
      elseif i > n then
        return out
      else
        return nil, "text after a closing quote"
      end
    else
      local e = s:find(",", i, true)
      local cell = s:sub(i, (e or n + 1) - 1)
      if cell:find('"', 1, true) then return nil, "quote inside an unquoted field" end
      out[#out + 1] = cell
      if not e then return out end
      i = e + 1
    end
  end
end

-- csv.parse(text, name) -> {header = {names...}, rows = {{cells..., line = n}, ...}}
-- csv.records: rows keyed by the header names instead ({name = cell, line = n}).
local function S_parse(text, name)
  text, name = logtext.args("csv.parse", text, name)
  local lines = logtext.lines(text, name)
  local header, rows = nil, {}
  for ln = logtext.header_end(lines), #lines do
    local l = lines[ln]
    if l:match("%S") then
      local cells, err = S_split(l)
      if not cells then logtext.fail_at(name, ln, "malformed CSV: %s", err) end
      if not header then
        header = cells
        local seen = {}
        for _, h in ipairs(header) do
          if seen[h] then logtext.fail_at(name, ln, "malformed CSV: duplicate column %s", fail.show(h)) end
          seen[h] = true
        end
      else
        if #cells ~= #header then
          logtext.fail_at(name, ln, "malformed CSV: %d cells, the header has %d", #cells, #header)
        end
        cells.line = ln
        rows[#rows + 1] = cells
      end
    end
  end
  if not header then fail.raisef("%s: no CSV header", name) end
  return {header = header, rows = rows}
end

M.parse = fail.api(S_parse)

M.records = fail.api(function(text, name)
  local p = S_parse(text, name)
  local out = {}
  for i, r in ipairs(p.rows) do
    local rec = {line = r.line}
    for j, h in ipairs(p.header) do rec[h] = r[j] end
    out[i] = rec
  end
  return out, p.header
end)

return M
