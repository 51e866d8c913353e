-- Tests of checks/expect.lua, the assertions of the other tests: they must fail when they
-- should, with exact messages, and implement DESIGN.md's quote rule.

local expect = require "expect"
local units = require "units"

test("eq and near", function()
  expect.eq(1, 1)
  expect.eq(224, 224.0)
  expect.error(function() expect.eq(1, 2, "x") end, "x: expected 2, got 1")
  expect.error(function() expect.eq("a", "b") end, 'expected "b", got "a"')
  expect.error(function() expect.eq(0.1 + 0.2, 0.3) end, "expected 0.3, got 0.30000000000000004")
  expect.near(0.1 + 0.2, 0.3, 1e-12)
  expect.error(function() expect.near(1.5, 1, 0.1, "y") end, "y: expected 1 within 0.1, got 1.5")
end)

-- value, quote, passes?
local QUOTES = {
  {234881024, "224 MiB", true},
  {234881024, "224.0 MiB", true},
  {234881024, "234,881,024 B", true},
  {234881024, "235 MB", true},
  {234881024, "224 MB", false},
  {0.531, "53.1%", true},
  {0.53125, "53.1%", true},
  {0.0625 * units.GiB, "0.06 GiB", true},  -- 6.25 hundredths rounds down
  {0.125, "13%", true},                    -- 12.5 rounds half away from zero
  {0.125, "12%", false},
  {-0.125, "-13%", true},
  {7, "7×", true},
  {7, "7x", true},
  {7, "7", true},
  {40 * units.GiB, "40 GB", false},
  {40 * units.GiB, "~40 GB", false},       -- 7.4% off: beyond the 5% default
  {40 * units.GiB, "≈43 GB", true},
  {40 * units.GiB, "约 43 GB", true},
  {1, "8 bits", true},
  {12544 * units.MiB, "12\u{2009}544 MiB", true}, -- thin space separator
  {12544 * units.MiB, "12 544 MiB", false},         -- a plain space is not one
}
for i, c in ipairs(QUOTES) do
  test("quote " .. i .. ": " .. c[2], function()
    local ok = pcall(expect.quote, c[1], c[2])
    expect.eq(ok, c[3], c[2])
  end)
end

test("quote messages", function()
  expect.error(function() expect.quote(235405312, "224.0 MiB") end, "quoted 224.0 MiB, but value = 224.500 MiB")
  expect.error(function() expect.quote(0.125, "12%") end, "quoted 12%, but value = 12.50%; rounds to 13% (half away from zero)")
  expect.error(function() expect.quote(40 * units.GiB, "~40 GB") end,
    "quoted ~40 GB, but value = 42.95 GB (40.00 GiB), 7.4% off (tolerance 5%); did you mean GiB?")
  expect.quote(40 * units.GiB, "~40 GB", 0.08)
  expect.error(function() expect.quote(1, "1 furlong") end, 'expect.quote: unknown unit "furlong"')
  expect.error(function() expect.quote(1, "1 mib") end,
    'expect.quote: unknown unit "mib" (units are case-sensitive; did you mean MiB?)')
  expect.error(function() expect.quote(1, "about 1") end, 'expect.quote: expected a number, found "about 1"')
  expect.error(function() expect.quote(1, ",1") end, 'expect.quote: expected a number, found ",1"')
  expect.error(function() expect.quote("1", "1") end, "expect.quote: value must be a number, got string")
end)

-- The cases where the Lua copy of the rule once disagreed with the build's (issue 13): the
-- rule is now kvsite's own, so a {lua} block and a figure give the same verdict.
test("quote: the build's rule, not a copy", function()
  expect.quote(1.005, "1.01")          -- a decimal half stored just below it still rounds up
  expect.quote(0.0625 * units.GiB, "0.06 GiB")
  expect.error(function() expect.quote(123.4, "1,23.4") end,
    'expect.quote: malformed number "1,23.4": thousands groups must have 3 digits')
  expect.quote(-5, "\u{2212}5")        -- U+2212 MINUS SIGN
  kvsite.unit("tok", 1, "count")
  expect.quote(4096, "4,096 tok")      -- the page's own units too
  expect.eq(units.to(4096, "tok"), 4096)
end)

test("error: exact message, optionally after one location", function()
  expect.error(function() error("boom", 0) end, "boom")
  expect.error(function() error("boom") end, "boom") -- error adds "file:line: "
  local ok, msg = pcall(expect.error, function() error("boom", 0) end, "bang")
  expect.eq(ok, false)
  expect.eq(msg:find('expected the error "bang", got "boom"', 1, true) ~= nil, true, msg)
  ok, msg = pcall(expect.error, function() end, "bang")
  expect.eq(ok, false)
  expect.eq(msg:find('expected the error "bang", but the call returned', 1, true) ~= nil, true, msg)
  -- a message that merely ends with the expected text does not pass
  ok = pcall(expect.error, function() error("xboom", 0) end, "boom")
  expect.eq(ok, false)
end)
