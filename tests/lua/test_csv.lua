-- Tests of checks/csv.lua: a thin wrapper over kvsite.csv, the reader data() uses.

local csv = require "csv"
local expect = require "expect"

test("parse: comment lines, header, quoted fields, doubled quotes, typing, line numbers", function()
  local p = csv.parse('# provenance header\n# more\na,b,c\n1,"x,y","say ""hi"""\n\n"",2,\n', "t.csv")
  expect.eq(table.concat(p.header, "|"), "a|b|c")
  expect.eq(#p.rows, 2)
  expect.eq(p.rows[1][1], 1)
  expect.eq(math.type(p.rows[1][1]), "integer")
  expect.eq(p.rows[1][2], "x,y")
  expect.eq(p.rows[1][3], 'say "hi"')
  expect.eq(p.rows[1].line, 4)
  expect.eq(p.rows[2][1], nil)   -- an empty cell is null: absent, as in data()
  expect.eq(p.rows[2][2], 2)
  expect.eq(p.rows[2][3], nil)
  expect.eq(p.rows[2].line, 6)
end)

test("records: keyed by the header, typed like YAML plain scalars", function()
  local r, header = csv.records('n_ctx,kv_mib,fa,kind\r\n4096,224,true,q8_0\r\n16384,896.5,False,"1e3"\r\n', "t.csv")
  expect.eq(#r, 2)
  expect.eq(#header, 4)
  expect.eq(r[2].n_ctx, 16384)
  expect.eq(r[2].kv_mib, 896.5)
  expect.eq(r[1].fa, true)
  expect.eq(r[2].fa, false)
  expect.eq(r[1].kind, "q8_0")
  expect.eq(r[2].kind, 1000.0) -- quoting is a transport detail in CSV
  expect.eq(r[2].line, 3)
end)

local BAD = {
  {'a,b\n1\n', "t.csv:2:1: CSV row has 1 cells, the header has 2"},
  {'a,b\n"1,2\n', "t.csv:2:1: invalid CSV: unterminated quoted field"},
  {'a,b\n"1"x,2\n', "t.csv:2:4: invalid CSV: unexpected character after a closing quote"},
  {'a,b\n1",2\n', "t.csv:2:2: invalid CSV: quote in an unquoted field"},
  {'a,a\n1,2\n', 't.csv:1:3: duplicate column name "a" in CSV header (first in column 1)'},
}
for i, c in ipairs(BAD) do
  test("malformed " .. i, function() expect.error(function() csv.parse(c[1], "t.csv") end, c[2]) end)
end

test("no rows", function()
  expect.eq(#csv.parse('# only comments\n', "t.csv").rows, 0)
  expect.eq(#csv.records('a,b\n', "t.csv"), 0)
end)

test("argument errors", function()
  expect.error(function() csv.parse(nil) end, "csv.parse: expects the text of a log (a string), got nil")
  expect.error(function() csv.parse("a", 3) end, "csv.parse: the name must be a string, got number")
end)
