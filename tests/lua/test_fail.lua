-- Tests of checks/fail.lua: library errors surface at the caller's line with the library's
-- own message; foreign errors pass through untouched.

local fail = require "fail"
local expect = require "expect"

local inner = fail.api(function(x)
  if x == "ours" then fail.raise("inner failed") end
  if x == "foreign" then error({code = 7}) end
  return x, "second"
end)
local outer = fail.api(function(x) return inner(x) end)

test("results pass through, all of them", function()
  local a, b = outer("ok")
  expect.eq(a, "ok")
  expect.eq(b, "second")
end)

test("a library error is raised once, at the outermost caller", function()
  local ok, msg = pcall(function() outer("ours") end)
  expect.eq(ok, false)
  expect.eq(type(msg), "string")
  expect.eq(msg:match(":(%d+): inner failed$") ~= nil, true, msg)
  expect.eq(msg:find("checks/", 1, true), nil, msg)
  -- called straight from pcall (a C function) there is no Lua line to report
  ok, msg = pcall(outer, "ours")
  expect.eq(msg, "inner failed")
end)

test("foreign errors are not rewritten", function()
  local ok, e = pcall(outer, "foreign")
  expect.eq(ok, false)
  expect.eq(type(e), "table")
  expect.eq(e.code, 7)
end)

test("the nesting counter is back at zero after an error", function()
  pcall(outer, "ours")
  local ok, msg = pcall(function() inner("ours") end)
  expect.eq(type(msg), "string", "converted at depth 0")
  expect.eq(msg:match("inner failed$"), "inner failed")
end)

test("helpers", function()
  expect.eq(fail.show("abc"), '"abc"')
  expect.eq(fail.show(3), "3")
  expect.eq(fail.show(string.rep("x", 70)), '"' .. string.rep("x", 57) .. '..."')
  expect.eq(fail.keys{b = 1, a = 2, c = 3}, "a, b, c")
  expect.error(function() fail.api(function() fail.check_keys("f", {z = 1}, {a = true}) end)() end,
    'f: unknown option "z"; known: a')
  expect.error(function() fail.api(function() fail.raisef("%d + %d", 1, 2) end)() end, "1 + 2")
  expect.eq(fail.is_ours("x"), false)
  expect.eq(fail.message("plain"), "plain")
end)
