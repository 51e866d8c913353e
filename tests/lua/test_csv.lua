-- Tests of checks/csv.lua.

local csv = require "csv"
local expect = require "expect"

test("parse: header, quoted fields, doubled quotes, line numbers", function()
  local p = csv.parse('# provenance header\n# more\na,b,c\n1,"x,y","say ""hi"""\n\n"",2,\n', "t.csv")
  expect.eq(table.concat(p.header, "|"), "a|b|c")
  expect.eq(#p.rows, 2)
  expect.eq(p.rows[1][2], "x,y")
  expect.eq(p.rows[1][3], 'say "hi"')
  expect.eq(p.rows[1].line, 4)
  expect.eq(p.rows[2][1], "")
  expect.eq(p.rows[2][3], "")
  expect.eq(p.rows[2].line, 6)
end)

test("records: keyed by the header", function()
  local r, header = csv.records('n_ctx,kv_mib\r\n4096,224\r\n16384,896\r\n', "t.csv")
  expect.eq(#r, 2)
  expect.eq(#header, 2)
  expect.eq(r[2].n_ctx, "16384")
  expect.eq(r[2].kv_mib, "896")
  expect.eq(r[2].line, 3)
end)

local BAD = {
  {'a,b\n1\n', "t.csv:2: malformed CSV: 1 cells, the header has 2"},
  {'a,b\n"1,2\n', "t.csv:2: malformed CSV: unterminated quoted field"},
  {'a,b\n"1"x,2\n', "t.csv:2: malformed CSV: text after a closing quote"},
  {'a,b\n1",2\n', "t.csv:2: malformed CSV: quote inside an unquoted field"},
  {'a,a\n1,2\n', 't.csv:1: malformed CSV: duplicate column "a"'},
  {'# only a header\n', "t.csv: no CSV header"},
}
for i, c in ipairs(BAD) do
  test("malformed " .. i, function() expect.error(function() csv.parse(c[1], "t.csv") end, c[2]) end)
end

test("argument errors", function()
  expect.error(function() csv.parse(nil) end, "csv.parse: expects the text of a log (a string), got nil")
  expect.error(function() csv.parse("a", 3) end, "csv.parse: the name must be a string, got number")
end)
