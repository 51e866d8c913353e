-- expect: assertions for Lua tests and for pages that assert in ```{lua} blocks.
-- Each function returns true or raises a precise error at the caller's line.

local fail = require "fail"

local M = {}

-- A value for messages: integers as integers, other floats with all their digits.
local function S_show(v)
  if math.type(v) == "float" then
    if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return string.format("%.1f", v) end
    -- the shortest form that reads back as the same float
    for _, f in ipairs{"%.15g", "%.16g"} do
      local s = string.format(f, v)
      if tonumber(s) == v then return s end
    end
    return string.format("%.17g", v)
  end
  return fail.show(v)
end
M.show = S_show

local function S_prefix(what)
  return what and (what .. ": ") or ""
end

-- actual == expected (numbers compare by value: 224 == 224.0).
M.eq = fail.api(function(actual, expected, what)
  if actual ~= expected then
    fail.raisef("%sexpected %s, got %s", S_prefix(what), S_show(expected), S_show(actual))
  end
  return true
end)

-- |actual - expected| <= tol.
M.near = fail.api(function(actual, expected, tol, what)
  if type(actual) ~= "number" or math.abs(actual - expected) > tol then
    fail.raisef("%sexpected %s within %s, got %s", S_prefix(what), S_show(expected), S_show(tol), S_show(actual))
  end
  return true
end)

-- The figure rule itself (DESIGN.md "Quotes, units and precision"), as kvsite checks
-- `quote {= value}`: the value (base units) converted to the quote's unit and rounded half
-- away from zero to the quote's decimals equals the quoted number. Approximate quotes (~, ≈,
-- 约) pass within tol (relative; default the site's figures.tolerance). Same parser, units
-- (the page's kvsite.unit ones too), tie rule and messages as the build's figures.
M.quote = fail.api(function(value, quote, tol)
  if type(value) ~= "number" then fail.raisef("expect.quote: value must be a number, got %s", type(value)) end
  if type(quote) ~= "string" then fail.raisef("expect.quote: quote must be a string, got %s", type(quote)) end
  if tol ~= nil and type(tol) ~= "number" then fail.raisef("expect.quote: tolerance must be a number, got %s", type(tol)) end
  local parsed, why = kvsite.parse_quote(quote)
  if not parsed then fail.raisef("expect.quote: %s", why) end
  local ok, msg = kvsite.quote_check(value, quote, tol)
  if not ok then fail.raise(msg) end
  return true
end)

-- fn(...) must raise an error whose message is msg, optionally preceded by one
-- "where:line: " location (what error(msg, 2) adds).
M.error = fail.api(function(fn, msg, ...)
  local ok, e = pcall(fn, ...)
  if ok then fail.raisef("expected the error %s, but the call returned", fail.show(msg)) end
  local got = fail.message(e)
  if got == msg then return true end
  if #got > #msg and got:sub(-#msg) == msg and got:sub(1, #got - #msg):match("^[^\n]*:%d+: $") then
    return true
  end
  fail.raisef("expected the error %q, got %q", msg, got)
end)

return M
