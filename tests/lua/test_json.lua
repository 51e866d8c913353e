-- Tests of checks/json.lua: a thin wrapper over kvsite.json, the reader data() uses.

local json = require "json"
local expect = require "expect"

test("values", function()
  local v = json.decode('{"a": 1, "b": -2.5e1, "c": "x", "d": true, "e": false, "f": null, "g": [], "h": {}}')
  expect.eq(v.a, 1)
  expect.eq(math.type(v.a), "integer")
  expect.eq(v.b, -25.0)
  expect.eq(math.type(v.b), "float")
  expect.eq(v.c, "x")
  expect.eq(v.d, true)
  expect.eq(v.e, false)
  expect.eq(v.f, nil)
  expect.eq(#v.g, 0)
  expect.eq(next(v.h), nil)
  expect.eq(json.decode("0"), 0)
  expect.eq(json.decode("-0.5"), -0.5)
  expect.eq(json.decode("1E3"), 1000.0)
  expect.eq(json.decode(" 7100.002165 "), 7100.002165)
  expect.eq(json.decode("12345678901234567890"), 1.2345678901234567e19)
end)

test("a null in an array is the null sentinel: no holes", function()
  local a = json.decode("[1, null, 3]")
  expect.eq(#a, 3)
  expect.eq(a[1], 1)
  expect.eq(type(a[2]), "userdata")
  expect.eq(a[3], 3)
  local nested = json.decode("[[1], [[2]], {\"k\": [3]}]")
  expect.eq(nested[2][1][1], 2)
  expect.eq(nested[3].k[1], 3)
end)

test("strings and escapes", function()
  expect.eq(json.decode([["a\"b\\c\/d\b\f\n\r\t"]]), 'a"b\\c/d\b\f\n\r\t')
  expect.eq(json.decode([["\u00e9\u4e2d"]]), "é中")
  expect.eq(json.decode([["\ud83d\ude00"]]), "😀")
  expect.eq(json.decode('"±"'), "±")
end)

test("line map of objects", function()
  local v, at = json.decode('[\n  {"a": 1},\n\n  {"b": 2}\n]', "x.json", {lines = true})
  expect.eq(at[v], 1)
  expect.eq(at[v[1]], 2)
  expect.eq(at[v[2]], 4)
  local v2, at2 = json.decode('{"a": 1}', "x.json", {lines = true, first_line = 9})
  expect.eq(at2[v2], 9)
end)

test("deep nesting is refused, not recursed into", function()
  expect.eq(#json.decode(string.rep("[", 32) .. string.rep("]", 32)), 1)
  expect.error(function() json.decode(string.rep("[", 33) .. string.rep("]", 33), "deep.json") end,
    "deep.json:1:33: nesting deeper than 32 levels")
  expect.error(function() json.decode(string.rep("[", 100000), "deep.json") end,
    "deep.json:1:33: nesting deeper than 32 levels")
end)

local BAD = {
  {"[1,]", "1:4: invalid JSON: expected a value"},
  {"[1 2]", "1:4: invalid JSON: expected ',' or ']'"},
  {'{"a" 1}', "1:6: invalid JSON: expected ':'"},
  {'{"a": 1,}', "1:9: invalid JSON: expected a string key"},
  {'{"a": 1 "b": 2}', "1:9: invalid JSON: expected ',' or '}'"},
  {'{1: 2}', "1:2: invalid JSON: expected a string key"},
  {'"abc', "1:1: invalid JSON: unterminated string"},
  {'"a\tb"', "1:3: invalid JSON: control character in string"},
  {'"\\x"', "1:2: invalid JSON: invalid escape"},
  {'"\\u12"', "1:2: invalid JSON: invalid \\u escape"},
  {'"\\ud83d"', "1:2: invalid JSON: unpaired surrogate in \\u escape"},
  {"01", "1:1: invalid JSON: invalid number"},
  {"1.", "1:1: invalid JSON: invalid number"},
  {"-", "1:1: invalid JSON: invalid number"},
  {"tru", "1:1: invalid JSON: expected a value"},
  {"[", "1:2: invalid JSON: unexpected end of input"},
  {"", "1:1: invalid JSON: unexpected end of input"},
  {"1 2", "1:3: invalid JSON: unexpected content after the value"},
  {"NaN", "1:1: invalid JSON: expected a value"},
  {'{"a": 1, "a": 2}', nil},
}
for i, c in ipairs(BAD) do
  test("malformed " .. i .. ": " .. c[1], function()
    if c[2] then
      expect.error(function() json.decode(c[1], "bad.json") end, "bad.json:" .. c[2])
    else
      expect.eq(pcall(json.decode, c[1], "bad.json"), false) -- duplicate keys, as in data()
    end
  end)
end

test("errors name the line", function()
  expect.error(function() json.decode('[\n1,\n\n2 3]', "m.json") end, "m.json:4:3: invalid JSON: expected ',' or ']'")
  expect.error(function() json.decode('{"a": x}', "l.json", {first_line = 12}) end,
    "l.json:12:7: invalid JSON: expected a value")
  expect.error(function() json.decode(7) end, "json.decode: expects a string, got number")
  expect.error(function() json.decode("1", "x", {line = 1}) end,
    'json.decode: unknown option "line"; known: first_line, lines')
end)
