-- Tests of checks/json.lua: the iterative JSON decoder.

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
  expect.eq(v.g.n, 0)
  expect.eq(next(v.h), nil)
  expect.eq(json.decode("0"), 0)
  expect.eq(json.decode("-0.5"), -0.5)
  expect.eq(json.decode("1E3"), 1000.0)
  expect.eq(json.decode(" 7100.002165 "), 7100.002165)
  expect.eq(json.decode("12345678901234567890"), 1.2345678901234567e19)
end)

test("arrays keep their length and holes", function()
  local a = json.decode("[1, null, 3]")
  expect.eq(a.n, 3)
  expect.eq(a[1], 1)
  expect.eq(a[2], nil)
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
  local _, at2 = json.decode('{"a": 1}', "x.json", {lines = true, first_line = 9})
  expect.eq(next(at2) ~= nil, true)
end)

test("deep nesting is refused, not recursed into", function()
  expect.eq(json.decode(string.rep("[", 200) .. string.rep("]", 200)).n, 1)
  expect.error(function() json.decode(string.rep("[", 201) .. string.rep("]", 201), "deep.json") end,
    "deep.json:1: malformed JSON: nesting deeper than 200")
  expect.error(function() json.decode(string.rep("[", 100000), "deep.json") end,
    "deep.json:1: malformed JSON: nesting deeper than 200")
end)

local BAD = {
  {"[1,]", "expected a value"},
  {"[1 2]", "expected ',' or ']'"},
  {'{"a" 1}', "expected ':' after key"},
  {'{"a": 1,}', "expected a string key"},
  {'{"a": 1 "b": 2}', "expected ',' or '}'"},
  {'{1: 2}', "expected a string key"},
  {'"abc', "unterminated string"},
  {'"a\tb"', "control character in string"},
  {'"\\x"', "bad escape \\x"},
  {'"\\u12"', "bad \\u escape"},
  {'"\\ud83d"', "unpaired surrogate in \\u escape"},
  {'"\\ude00"', "unpaired surrogate in \\u escape"},
  {"01", "leading zero in number"},
  {"1.", "digits expected after '.'"},
  {"1e", "digits expected in exponent"},
  {"-", "expected a value"},
  {"tru", "expected a value"},
  {"[", "unexpected end of text"},
  {"[1", "unexpected end of text"},
  {"", "unexpected end of text"},
  {"1 2", "trailing characters after the JSON value"},
  {"NaN", "expected a value"},
}
for i, c in ipairs(BAD) do
  test("malformed " .. i .. ": " .. c[1], function()
    expect.error(function() json.decode(c[1], "bad.json") end, "bad.json:1: malformed JSON: " .. c[2])
  end)
end

test("errors name the line", function()
  expect.error(function() json.decode('[\n1,\n\n2 3]', "m.json") end, "m.json:4: malformed JSON: expected ',' or ']'")
  expect.error(function() json.decode('{"a": x}', "l.json", {first_line = 12}) end,
    "l.json:12: malformed JSON: expected a value")
  expect.error(function() json.decode(7) end, "json.decode: expects a string, got number")
  expect.error(function() json.decode("1", "x", {line = 1}) end,
    'json.decode: unknown option "line"; known: first_line, lines')
end)
