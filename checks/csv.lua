-- csv: CSV for engine output such as llama-bench -o csv, read by kvsite's own reader
-- (kvsite.csv): the one data() uses for .csv files. RFC 4180 with a header row; "#" lines
-- before the header (a provenance header) and blank lines are skipped; cells are typed like
-- YAML plain scalars (4096 -> integer, 0.5 -> float, true -> boolean, an empty cell -> absent),
-- the same typing as data(). Errors read "name:line:col: message". Returns fresh tables.

local fail = require "fail"
local logtext = require "logtext"

local M = {}

local function S_read(what, text, name)
  text, name = logtext.args(what, text, name)
  local ok, rows, header, lines = pcall(kvsite.csv, text, name)
  if not ok then fail.raise(fail.message(rows)) end
  return rows, header, lines
end

-- csv.records(text, name) -> rows keyed by the header names ({name = cell, line = n}), header
M.records = fail.api(function(text, name)
  local rows, header, lines = S_read("csv.records", text, name)
  for _, r in ipairs(rows) do r.line = lines[r] end
  return rows, header
end)

-- csv.parse(text, name) -> {header = {names...}, rows = {{cells..., line = n}, ...}}:
-- the cells of a row by column (an empty cell is a hole).
M.parse = fail.api(function(text, name)
  local rows, header, lines = S_read("csv.parse", text, name)
  local out = {}
  for i, r in ipairs(rows) do
    local cells = {line = lines[r]}
    for j, h in ipairs(header) do cells[j] = r[h] end
    out[i] = cells
  end
  return {header = header, rows = out}
end)

return M
