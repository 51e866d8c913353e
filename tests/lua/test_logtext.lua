-- Tests of checks/logtext.lua (line handling shared by the parsers) and checks/models.lua.

local logtext = require "logtext"
local models = require "models"
local expect = require "expect"

test("lines: \\n and \\r\\n, no phantom last line", function()
  local l = logtext.lines("a\r\nb\n\nc", "x")
  expect.eq(#l, 4)
  expect.eq(l[1], "a")
  expect.eq(l[3], "")
  expect.eq(l[4], "c")
  expect.eq(#logtext.lines("a\n", "x"), 1)
  expect.eq(#logtext.lines("", "x"), 0)
end)

test("header_end: the leading # block only", function()
  expect.eq(logtext.header_end(logtext.lines("# a\n# b\nx\n# c", "x")), 3)
  expect.eq(logtext.header_end(logtext.lines("x\n# c", "x")), 1)
end)

test("numbers", function()
  expect.eq(logtext.number "224", 224)
  expect.eq(logtext.number "0.57", 0.57)
  expect.eq(logtext.number "-3", -3)
  expect.eq(logtext.number "1.2.3", nil)
  expect.eq(logtext.number "1e3", nil)
  expect.eq(logtext.int "-1", -1)
  expect.eq(logtext.int "1.0", nil)
  expect.eq(logtext.int_sep "451,744", 451744)
  expect.eq(logtext.int_sep "1,234,567", 1234567)
  expect.eq(logtext.int_sep "4096", 4096)
  expect.eq(logtext.int_sep "16,38", nil)
  expect.eq(logtext.int_sep "1234,567", nil)
  expect.eq(logtext.int_sep ",123", nil)
  expect.eq(logtext.int_sep "", nil)
end)

test("cells: split on |, trimmed, empty cells kept", function()
  local c = logtext.cells("  | a | b ||  c |  ")
  expect.eq(#c, 4)
  expect.eq(table.concat(c, ","), "a,b,,c")
  expect.eq(logtext.cells("a | b"), nil)
  expect.eq(logtext.cells("|"), nil)
end)

test("models: ids and fresh copies", function()
  expect.eq(#models.ids() >= #models.library_ids(), true)
  expect.eq(#models.library_ids(), 16)
  local a = models.get "llama-3.1-8b"
  a.layers = 1
  expect.eq(models.get("llama-3.1-8b").layers, 32)
  expect.eq(a.id, "llama-3.1-8b")
  expect.eq(models.get("qwen2.5-7b").max_context, 32768)
  expect.error(function() models.get(7) end, "model id must be a string, got number")
end)
