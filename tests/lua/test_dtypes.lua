-- Tests of checks/dtypes.lua: bytes per value of every cache type (engine-formats.md
-- section 4), the ratio to f16, group quantization and exact row sizes.

local dtypes = require "dtypes"
local expect = require "expect"

-- name, values per block, bytes per block, bytes per value, bits per value, ratio to f16
local TYPES = {
  {"f32", 1, 4, 4, 32, 2},
  {"f16", 1, 2, 2, 16, 1},
  {"bf16", 1, 2, 2, 16, 1},
  {"fp8", 1, 1, 1, 8, 0.5},
  {"fp8_e4m3", 1, 1, 1, 8, 0.5},
  {"fp8_e5m2", 1, 1, 1, 8, 0.5},
  {"int8", 1, 1, 1, 8, 0.5},
  {"q8_0", 32, 34, 1.0625, 8.5, 0.53125},
  {"q4_0", 32, 18, 0.5625, 4.5, 0.28125},
  {"q4_1", 32, 20, 0.625, 5, 0.3125},
  {"q5_0", 32, 22, 0.6875, 5.5, 0.34375},
  {"q5_1", 32, 24, 0.75, 6, 0.375},
  {"iq4_nl", 32, 18, 0.5625, 4.5, 0.28125},
}
for _, t in ipairs(TYPES) do
  test("dtype " .. t[1], function()
    local d = dtypes.get(t[1])
    expect.eq(d.name, t[1])
    expect.eq(d.block, t[2], t[1] .. " block")
    expect.eq(d.block_bytes, t[3], t[1] .. " block_bytes")
    expect.eq(d.bytes_per_value, t[4], t[1] .. " bytes_per_value")
    expect.eq(d.bits_per_value, t[5], t[1] .. " bits_per_value")
    expect.eq(d.ratio_f16, t[6], t[1] .. " ratio_f16")
    expect.eq(dtypes.bytes_per_value(t[1]), t[4])
    expect.eq(dtypes.ratio_f16(t[1]), t[6])
    expect.eq(d.row_blocks, t[2] > 1, t[1] .. " row_blocks")
    expect.eq(type(d.source), "string")
  end)
end

test("names: every type, sorted", function()
  expect.eq(table.concat(dtypes.names(), " "),
    "bf16 f16 f32 fp8 fp8_e4m3 fp8_e5m2 int8 iq4_nl q4_0 q4_1 q5_0 q5_1 q8_0")
  expect.eq(#dtypes.names(), #TYPES)
end)

test("the figures quoted in kv-facts.md", function()
  expect.quote(dtypes.ratio_f16 "q8_0", "53.1%")
  expect.quote(dtypes.ratio_f16 "q4_0", "28.1%")
  expect.quote(dtypes.get("q8_0").bits_per_value, "8.5")
  expect.quote(dtypes.get("q4_0").bits_per_value, "4.5")
end)

test("row_bytes: exact bytes of a row, whole blocks only", function()
  expect.eq(dtypes.row_bytes("q8_0", 512), 544) -- 16 blocks x 34
  expect.eq(dtypes.row_bytes("q4_0", 512), 288)
  expect.eq(dtypes.row_bytes("f16", 3), 6)
  expect.eq(dtypes.row_bytes("q8_0", 0), 0)
  expect.eq(math.type(dtypes.row_bytes("q8_0", 512)), "integer")
  expect.error(function() dtypes.row_bytes("q4_1", 33) end,
    "q4_1 stores blocks of 32 values, but a row has 33 values (not a multiple)")
  expect.error(function() dtypes.row_bytes("f16", -1) end,
    "dtypes.row_bytes: values must be a non-negative integer, got -1")
end)

test("group_quant: KIVI-style bits + scale and zero-point bytes per group", function()
  local d = dtypes.group_quant{bits = 2, group = 32, scale_bytes = 2, zero_bytes = 2, name = "kivi-2"}
  expect.eq(d.name, "kivi-2")
  expect.eq(d.block_bytes, 12) -- 2 x 32 / 8 + 2 + 2
  expect.eq(d.bytes_per_value, 0.375)
  expect.eq(d.ratio_f16, 0.1875)
  expect.eq(d.row_blocks, false)
  local plain = dtypes.group_quant{bits = 4, group = 128}
  expect.eq(plain.name, "g128_b4")
  expect.eq(plain.bytes_per_value, 0.5)
  -- average bytes per value: a per-channel K group need not divide the row
  expect.eq(dtypes.row_bytes(d, 10), 3.75)
  -- a dtype table is accepted wherever a name is, and copied
  local c = dtypes.get(d)
  c.block_bytes = 0
  expect.eq(d.block_bytes, 12)
end)

local ERRORS = {
  {function() dtypes.get "fp4" end,
    'unknown dtype "fp4"; known: bf16, f16, f32, fp8, fp8_e4m3, fp8_e5m2, int8, iq4_nl, q4_0, q4_1, '
    .. "q5_0, q5_1, q8_0 (or a dtype made by group_quant{...})"},
  {function() dtypes.get "F16" end,
    'unknown dtype "F16"; known: bf16, f16, f32, fp8, fp8_e4m3, fp8_e5m2, int8, iq4_nl, q4_0, q4_1, '
    .. "q5_0, q5_1, q8_0 (or a dtype made by group_quant{...})"},
  {function() dtypes.get(2) end, "dtype must be a name or a dtype table, got number"},
  {function() dtypes.group_quant{bits = 0, group = 32} end, "dtypes.group_quant: bits must be in [1, 32], got 0"},
  {function() dtypes.group_quant{bits = 2.5, group = 32} end, "dtypes.group_quant: bits must be an integer, got 2.5"},
  {function() dtypes.group_quant{bits = 2} end, "dtypes.group_quant: group must be an integer, got nil"},
  {function() dtypes.group_quant{bits = 2, group = 32, scale_bytes = -1} end,
    "dtypes.group_quant: scale_bytes must be a number of bytes in [0, 64], got -1"},
  {function() dtypes.group_quant{bits = 2, group = 32, scale = 2} end,
    'dtypes.group_quant: unknown option "scale"; known: bits, group, name, scale_bytes, source, zero_bytes'},
  {function() dtypes.group_quant(2) end, "dtypes.group_quant: expects a table {bits = ..., group = ...}"},
}
for i, c in ipairs(ERRORS) do
  test("dtypes error " .. i, function() expect.error(c[1], c[2]) end)
end
