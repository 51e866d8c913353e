-- Tests of checks/units.lua: unit factors and conversions (GB and GiB are different units).

local units = require "units"
local expect = require "expect"

local FACTORS = {
  {"B", 1}, {"KB", 1000}, {"kB", 1000}, {"MB", 1000000}, {"GB", 1000000000}, {"TB", 1000000000000},
  {"KiB", 1024}, {"MiB", 1048576}, {"GiB", 1073741824}, {"TiB", 1099511627776},
  {"bit", 0.125}, {"bits", 0.125}, {"%", 0.01}, {"x", 1}, {"×", 1}, {"倍", 1}, {"", 1},
}
for _, c in ipairs(FACTORS) do
  test("factor " .. c[1], function() expect.eq(units.factor(c[1]), c[2], c[1]) end)
end

test("constants are integers", function()
  for _, u in ipairs{"KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"} do
    expect.eq(math.type(units[u]), "integer", u)
  end
  expect.eq(units.factor "Gb", nil)
  expect.eq(units.factor "gib", nil)
end)

test("to and from", function()
  expect.eq(units.to(234881024, "MiB"), 224)
  expect.eq(units.to(0.53125, "%"), 53.125)
  expect.eq(units.to(1, "bit"), 8)
  expect.eq(units.to(40 * units.GiB, "GB"), 42.94967296)
  expect.eq(units.from(224, "MiB"), 234881024)
  expect.eq(math.type(units.from(224, "MiB")), "integer")
  expect.eq(units.from(53.1, "%"), 0.531)
  expect.error(function() units.to(1, "gigs") end, 'unknown unit "gigs"')
  expect.error(function() units.to(1, "gib") end,
    'unknown unit "gib" (units are case-sensitive; did you mean GiB?)')
  expect.error(function() units.to(1, nil) end, "units.to: unit must be a string, got nil")
  expect.error(function() units.from("1", "B") end, "units.from: value must be a number, got string")
  expect.error(function() units.to(nil, "B") end, "units.to: value must be a number, got nil")
end)

test("units defined by the page are units here too", function()
  expect.eq(units.factor "page", nil)
  kvsite.unit("page", 4096, "bytes")
  expect.eq(units.factor "page", 4096)
  expect.eq(units.to(8192, "page"), 2)
  expect.eq(units.from(3, "page"), 12288)
end)
