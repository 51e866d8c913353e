-- dtypes: how many bytes a cached value takes, per cache data type.
--
-- A dtype is a block of `block` values stored in `block_bytes` bytes; bytes per value is
-- block_bytes / block. Plain types are blocks of 1. ggml block types (q8_0 ...) quantize
-- along a row, so a row must be a whole number of blocks (`row_blocks`). Group quantization
-- (KIVI-style) is parameterised: bits per value plus scale and zero-point bytes per group;
-- it gives the average bytes per value and does not require whole groups per row, since a
-- per-channel grouping runs along the tokens, not the row.
--
-- Functions return fresh tables; callers own them.

local fail = require "fail"

local M = {}

-- Sources: engine-formats.md section 4 (ggml-common.h structs and ggml.c type_traits at
-- llama.cpp 82bb48500) for the ggml types; kv-facts.md study-group notes ("Bytes per value:
-- FP32 4, FP16/BF16 2, FP8/INT8 1") for fp8 and int8; engine-formats.md 5.2 for vLLM's fp8
-- names (torch.uint8, 1 byte; per-tensor scales _k_scale/_v_scale are layer attributes,
-- outside the cache pages).
local GGML = "engine-formats.md section 4 (ggml type_traits, llama.cpp 82bb48500)"
local TYPES = {
  f32    = {block = 1,  block_bytes = 4,  source = GGML .. ": 4 bytes"},
  f16    = {block = 1,  block_bytes = 2,  source = GGML .. ": 2 bytes"},
  bf16   = {block = 1,  block_bytes = 2,  source = GGML .. ": 2 bytes"},
  fp8    = {block = 1,  block_bytes = 1,  source = "kv-facts.md notes: FP8 1 byte; engine-formats.md 5.2: per-tensor scales live outside the cache"},
  fp8_e4m3 = {block = 1, block_bytes = 1, source = "engine-formats.md 5.2: vLLM fp8_e4m3 -> torch.uint8, 1 byte"},
  fp8_e5m2 = {block = 1, block_bytes = 1, source = "engine-formats.md 5.2: vLLM fp8_e5m2 -> torch.uint8, 1 byte"},
  int8   = {block = 1,  block_bytes = 1,  source = "kv-facts.md notes: INT8 1 byte"},
  q8_0   = {block = 32, block_bytes = 34, row_blocks = true, source = GGML .. ": {ggml_half d; int8_t qs[32]}"},
  q4_0   = {block = 32, block_bytes = 18, row_blocks = true, source = GGML .. ": {ggml_half d; uint8_t qs[16]}"},
  q4_1   = {block = 32, block_bytes = 20, row_blocks = true, source = GGML .. ": {ggml_half d, m; uint8_t qs[16]}"},
  q5_0   = {block = 32, block_bytes = 22, row_blocks = true, source = GGML .. ": {ggml_half d; uint8_t qh[4]; uint8_t qs[16]}"},
  q5_1   = {block = 32, block_bytes = 24, row_blocks = true, source = GGML .. ": {ggml_half d, m; uint8_t qh[4]; uint8_t qs[16]}"},
  iq4_nl = {block = 32, block_bytes = 18, row_blocks = true, source = GGML .. ": {ggml_half d; uint8_t qs[16]}"},
}

local F16_BYTES = 2

local function S_make(name, t)
  local bpv = t.block_bytes / t.block
  return {
    name = name,
    block = t.block,
    block_bytes = t.block_bytes,
    row_blocks = t.row_blocks or false,
    bytes_per_value = math.tointeger(bpv) or bpv,
    bits_per_value = math.tointeger(bpv * 8) or bpv * 8,
    ratio_f16 = bpv / F16_BYTES,
    source = t.source,
    kind = "dtype",
  }
end

-- Sorted names of the built-in dtypes.
M.names = fail.api(function()
  local ns = {}
  for k in pairs(TYPES) do ns[#ns + 1] = k end
  table.sort(ns)
  return ns
end)

local function S_known()
  return table.concat(M.names(), ", ") .. " (or a dtype made by group_quant{...})"
end

local function S_get(d)
  if type(d) == "table" and d.kind == "dtype" then
    -- a dtype made here (or by group_quant): return a copy
    local c = {}
    for k, v in pairs(d) do c[k] = v end
    return c
  end
  if type(d) ~= "string" then
    fail.raisef("dtype must be a name or a dtype table, got %s", type(d))
  end
  local t = TYPES[d]
  if not t then fail.raisef("unknown dtype %s; known: %s", fail.show(d), S_known()) end
  return S_make(d, t)
end

-- The dtype table for a name ("q8_0") or a dtype table (copied).
-- Fields: name, block, block_bytes, row_blocks, bytes_per_value, bits_per_value, ratio_f16, source.
M.get = fail.api(S_get)

-- Bytes per value of a dtype: dtypes.bytes_per_value("q8_0") == 1.0625.
M.bytes_per_value = fail.api(function(d) return S_get(d).bytes_per_value end)

-- Ratio to f16: dtypes.ratio_f16("q8_0") == 0.53125.
M.ratio_f16 = fail.api(function(d) return S_get(d).ratio_f16 end)

local function S_count(what, v, lo, hi)
  if math.type(v) ~= "integer" and not (type(v) == "number" and v == math.floor(v)) then
    fail.raisef("dtypes.group_quant: %s must be an integer, got %s", what, fail.show(v))
  end
  if v < lo or v > hi then
    fail.raisef("dtypes.group_quant: %s must be in [%d, %d], got %s", what, lo, hi, tostring(v))
  end
  return math.tointeger(v)
end

local function S_bytes(what, v)
  if v == nil then return 0 end
  if type(v) ~= "number" or v < 0 or v > 64 then
    fail.raisef("dtypes.group_quant: %s must be a number of bytes in [0, 64], got %s", what, fail.show(v))
  end
  return v
end

local GQ_KEYS = {bits = true, group = true, scale_bytes = true, zero_bytes = true, name = true, source = true}

-- Group quantization: {bits = 2, group = 32, scale_bytes = 2, zero_bytes = 2, name = "kivi-2"}.
-- Bytes per group = bits * group / 8 + scale_bytes + zero_bytes (both default 0).
M.group_quant = fail.api(function(p)
  if type(p) ~= "table" then fail.raise("dtypes.group_quant: expects a table {bits = ..., group = ...}") end
  fail.check_keys("dtypes.group_quant", p, GQ_KEYS)
  local bits = S_count("bits", p.bits, 1, 32)
  local group = S_count("group", p.group, 1, 65536)
  local sb, zb = S_bytes("scale_bytes", p.scale_bytes), S_bytes("zero_bytes", p.zero_bytes)
  local gb = bits * group / 8 + sb + zb
  local name = p.name or string.format("g%d_b%d", group, bits)
  if type(name) ~= "string" then fail.raise("dtypes.group_quant: name must be a string") end
  return S_make(name, {
    block = group, block_bytes = math.tointeger(gb) or gb,
    source = p.source or string.format("group quantization: %d bits x %d + %s scale + %s zero bytes per group",
      bits, group, tostring(sb), tostring(zb)),
  })
end)

-- Exact bytes of `values` values of dtype d (a row of a cache, one token). Block types
-- require whole blocks; the result is an integer when it is one.
M.row_bytes = fail.api(function(d, values)
  local t = S_get(d)
  if math.type(values) ~= "integer" or values < 0 then
    fail.raisef("dtypes.row_bytes: values must be a non-negative integer, got %s", fail.show(values))
  end
  if t.row_blocks and values % t.block ~= 0 then
    fail.raisef("%s stores blocks of %d values, but a row has %d values (not a multiple)", t.name, t.block, values)
  end
  local b = values * t.block_bytes / t.block
  return math.tointeger(b) or b
end)

return M
