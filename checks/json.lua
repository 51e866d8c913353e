-- json: JSON for engine output such as llama-bench -o json / jsonl, read by kvsite's own
-- reader (kvsite.json): the one data() uses for .json files, with the same typing, nulls
-- and limits (see the README's "Data files"). Integers without fraction or exponent ->
-- Lua integers when they fit, other numbers -> floats; null -> absent in an object, the
-- null sentinel (data.null) in an array; nesting is capped like data files'. Errors read
-- "name:line:col: message". decode returns fresh tables; the caller owns them.

local fail = require "fail"

local M = {}

-- json.decode(text [, name [, opts]]) -> value [, lines]
-- opts.lines: also return a table mapping every object and array to its first line;
-- opts.first_line: the number of the text's first line (default 1).
M.decode = fail.api(function(text, name, opts)
  if type(text) ~= "string" then fail.raisef("json.decode: expects a string, got %s", type(text)) end
  opts = opts or {}
  fail.check_keys("json.decode", opts, {lines = true, first_line = true})
  local ok, v, at = pcall(kvsite.json, text, name or "<json>", math.tointeger(opts.first_line))
  if not ok then fail.raise(fail.message(v)) end
  if opts.lines then return v, at end
  return v
end)

return M
