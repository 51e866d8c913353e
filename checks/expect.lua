-- expect: assertions for Lua tests and for pages that assert in ```{lua} blocks.
-- Each function returns true or raises a precise error at the caller's line.

local fail = require "fail"
local units = require "units"

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

-- Parse a quote: optional approximate mark, number (',' or thin-space separators), unit.
-- Returns approx, digits (integer of the number times 10^decimals), decimals, unit.
local function S_parse_quote(q)
  if type(q) ~= "string" then fail.raisef("expect.quote: quote must be a string, got %s", type(q)) end
  local s = q:gsub("^%s+", ""):gsub("%s+$", "")
  local approx = false
  for _, mark in ipairs{"~", "≈", "约"} do
    if s:sub(1, #mark) == mark then approx = true; s = s:sub(#mark + 1):gsub("^%s+", ""); break end
  end
  s = s:gsub("\u{2009}", ""):gsub("\u{202F}", "")
  local sign, int, frac, unit = s:match("^([%-+]?)([%d,]+)%.?(%d*)%s*(.-)$")
  if not int or int:sub(1, 1) == "," or int:sub(-1) == "," or int:find(",,", 1, true) then
    fail.raisef("expect.quote: cannot read the number in %s", fail.show(q))
  end
  if not units.factor(unit) then
    fail.raisef("expect.quote: unknown unit %s in %s", fail.show(unit), fail.show(q))
  end
  local digits = math.tointeger(tonumber((int:gsub(",", "")) .. frac))
  if not digits then fail.raisef("expect.quote: number too long in %s", fail.show(q)) end
  if sign == "-" then digits = -digits end
  return approx, digits, #frac, unit
end

-- The quote check of DESIGN.md: value (base units) converted to the quote's unit and rounded
-- half away from zero to the quote's decimals equals the quoted number. Approximate quotes
-- (~, ≈, 约) pass within tol (relative, default 0.05).
M.quote = fail.api(function(value, quote, tol)
  if type(value) ~= "number" then fail.raisef("expect.quote: value must be a number, got %s", type(value)) end
  local approx, digits, dec, unit = S_parse_quote(quote)
  local x = units.to(value, unit)
  if approx then
    local q = digits / 10 ^ dec
    tol = tol or 0.05
    if math.abs(x - q) > tol * math.abs(q) then
      fail.raisef("quoted %s, but the value is %s %s (%.1f%% off, tolerance %.1f%%)", quote,
        string.format("%.6g", x), unit, 100 * math.abs(x - q) / math.abs(q), 100 * tol)
    end
    return true
  end
  local scaled = x * 10 ^ dec
  local r = math.floor(math.abs(scaled) + 0.5)
  if scaled < 0 then r = -r end
  if r ~= digits then
    local sep = (unit == "" or unit == "%" or unit == "×" or unit == "倍") and "" or " "
    fail.raisef("quoted %s, but the value is %s%s%s", quote, string.format("%." .. (dec + 2) .. "f", x), sep, unit)
  end
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
