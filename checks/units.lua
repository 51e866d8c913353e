-- units: byte and ratio units, read from kvsite's one unit table (the one quotes are
-- checked with, plus the units the page defined with kvsite.unit). Lua figures are plain
-- numbers in base units (bytes, fractions, counts); a unit's factor is how many base units
-- one of it is: 224 * units.MiB is 224 MiB in bytes.

local fail = require "fail"

local M = {}

for _, name in ipairs{"B", "KB", "kB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"} do
  M[name] = kvsite.unit_scale(name)
end

-- Base units per one `unit`, or nil when the unit is unknown.
function M.factor(unit)
  if type(unit) ~= "string" then return nil end
  return (kvsite.unit_scale(unit))
end

local function S_convert(what, fn, value, unit)
  if type(value) ~= "number" then fail.raisef("%s: value must be a number, got %s", what, type(value)) end
  if type(unit) ~= "string" then fail.raisef("%s: unit must be a string, got %s", what, type(unit)) end
  local ok, v = pcall(fn, value, unit)
  if not ok then fail.raise(fail.message(v)) end
  return v
end

-- value (base units) expressed in unit: units.to(234881024, "MiB") == 224
M.to = fail.api(function(value, unit) return S_convert("units.to", kvsite.to_unit, value, unit) end)

-- x in unit, converted to base units: units.from(224, "MiB") == 234881024
M.from = fail.api(function(x, unit) return S_convert("units.from", kvsite.from_unit, x, unit) end)

return M
