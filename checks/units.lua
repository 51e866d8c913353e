-- units: byte and ratio units, as the quote checker reads them (DESIGN.md "Quotes, units").
-- Lua figures are plain numbers in base units (bytes, fractions, counts); a unit's factor is
-- how many base units one of it is: 224 * units.MiB is 224 MiB in bytes.

local fail = require "fail"

local M = {}

M.B = 1
M.KB, M.kB, M.MB, M.GB, M.TB = 1000, 1000, 1000000, 1000000000, 1000000000000
M.KiB, M.MiB, M.GiB, M.TiB = 1024, 1048576, 1073741824, 1099511627776

-- factor per unit name; "" is a plain number
local FACTOR = {
  [""] = 1, B = 1,
  KB = M.KB, kB = M.kB, MB = M.MB, GB = M.GB, TB = M.TB,
  KiB = M.KiB, MiB = M.MiB, GiB = M.GiB, TiB = M.TiB,
  bit = 1 / 8, bits = 1 / 8,
  ["%"] = 1 / 100,
  ["×"] = 1, x = 1, ["倍"] = 1,
}

-- Base units per one `unit`, or nil when the unit is unknown.
function M.factor(unit)
  return FACTOR[unit]
end

local function S_factor(unit)
  local f = FACTOR[unit]
  if not f then fail.raisef("unknown unit %s; known: %s", fail.show(unit), fail.keys(FACTOR)) end
  return f
end

-- value (base units) expressed in unit: units.to(234881024, "MiB") == 224
M.to = fail.api(function(value, unit)
  if type(value) ~= "number" then fail.raisef("units.to: value must be a number, got %s", type(value)) end
  local f = S_factor(unit)
  -- multiply by 100 or 8 rather than divide by 0.01 or 0.125: 0.53125 -> 53.125 exactly
  if f < 1 then return value * (1 / f) end
  return value / f
end)

-- x in unit, converted to base units: units.from(224, "MiB") == 234881024
M.from = fail.api(function(x, unit)
  if type(x) ~= "number" then fail.raisef("units.from: value must be a number, got %s", type(x)) end
  local v = x * S_factor(unit)
  return math.tointeger(v) or v
end)

return M
