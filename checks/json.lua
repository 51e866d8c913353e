-- json: a small JSON decoder in pure Lua (RFC 8259), for engine output such as llama-bench
-- -o json / jsonl.
--
-- Iterative: nesting is an explicit stack capped at MAX_DEPTH, so deep input cannot
-- exhaust the C stack. Objects -> tables; arrays -> sequences with field n (their length,
-- holes where the JSON had null); null -> absent (as in data()); integers without fraction
-- or exponent -> Lua integers when they fit, other numbers -> floats. Errors read
-- "name:line: malformed JSON: ...". decode returns fresh tables; the caller owns them.

local fail = require "fail"

local M = {}

M.MAX_DEPTH = 200
M.MAX_TEXT = 64 * 1024 * 1024

local ESC = {['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t"}

local function S_decode(text, name, opts)
  if type(text) ~= "string" then fail.raisef("json.decode: expects a string, got %s", type(text)) end
  name = name or "<json>"
  if #text > M.MAX_TEXT then fail.raisef("%s: JSON text larger than %d bytes", name, M.MAX_TEXT) end
  opts = opts or {}
  fail.check_keys("json.decode", opts, {lines = true, first_line = true})
  -- lines: record the line each object/array starts on; first_line: number of line 1
  local linemap = opts.lines and {} or nil
  local i, n = 1, #text
  local line = math.tointeger(opts.first_line) or 1

  local function bad(msg)
    fail.raise(string.format("%s:%d: malformed JSON: %s", name, line, msg))
  end

  local function skip()
    while true do
      local s, e = text:find("^[ \t\r\n]+", i)
      if not s then return end
      for _ in text:sub(s, e):gmatch("\n") do line = line + 1 end
      i = e + 1
    end
  end

  local function string_at()
    -- text:sub(i, i) == '"'
    local parts = {}
    local j = i + 1
    while true do
      local s = text:find('[\0-\31"\\]', j)
      if not s then bad("unterminated string") end
      parts[#parts + 1] = text:sub(j, s - 1)
      local c = text:sub(s, s)
      if c == '"' then i = s + 1; break end
      if c ~= "\\" then bad("control character in string") end
      local e = text:sub(s + 1, s + 1)
      if ESC[e] then
        parts[#parts + 1] = ESC[e]
        j = s + 2
      elseif e == "u" then
        local hex = text:match("^%x%x%x%x", s + 2)
        if not hex then bad("bad \\u escape") end
        local cp = tonumber(hex, 16)
        j = s + 6
        if cp >= 0xD800 and cp <= 0xDBFF then
          local lo = text:match("^\\u(%x%x%x%x)", j)
          local lv = lo and tonumber(lo, 16)
          if not lv or lv < 0xDC00 or lv > 0xDFFF then bad("unpaired surrogate in \\u escape") end
          cp = 0x10000 + (cp - 0xD800) * 0x400 + (lv - 0xDC00)
          j = j + 6
        elseif cp >= 0xDC00 and cp <= 0xDFFF then
          bad("unpaired surrogate in \\u escape")
        end
        parts[#parts + 1] = utf8.char(cp)
      else
        bad("bad escape \\" .. e)
      end
    end
    return table.concat(parts)
  end

  local function number_at()
    local s = text:match("^-?%d+", i)
    if not s then bad("expected a value") end
    if s:match("^-?0%d") then bad("leading zero in number") end
    local j = i + #s
    local frac = text:match("^%.%d+", j)
    if text:sub(j, j) == "." and not frac then bad("digits expected after '.'") end
    if frac then j = j + #frac end
    local exp = text:match("^[eE][+-]?%d+", j)
    if (text:sub(j, j) == "e" or text:sub(j, j) == "E") and not exp then bad("digits expected in exponent") end
    if exp then j = j + #exp end
    local lit = text:sub(i, j - 1)
    i = j
    if not frac and not exp then
      local v = math.tointeger(tonumber(lit))
      if v then return v end
    end
    return tonumber(lit) + 0.0
  end

  -- stack frames: {t = table, arr = bool, key = pending key}
  local stack = {}
  local root, have_root = nil, false
  -- states: "value" (a value is expected), "after" (a value just ended in the top frame)
  local state = "value"

  local function deliver(v)
    local top = stack[#stack]
    if not top then
      root, have_root = v, true
    elseif top.arr then
      top.t.n = top.t.n + 1
      if v ~= nil then top.t[top.t.n] = v end
    else
      if v ~= nil then top.t[top.key] = v end
      top.key = nil
    end
    state = "after"
  end

  local function open(t, arr)
    if #stack >= M.MAX_DEPTH then bad(string.format("nesting deeper than %d", M.MAX_DEPTH)) end
    if linemap then linemap[t] = line end
    stack[#stack + 1] = {t = t, arr = arr}
  end

  local function expect_key()
    skip()
    if text:sub(i, i) ~= '"' then bad("expected a string key") end
    local k = string_at()
    skip()
    if text:sub(i, i) ~= ":" then bad("expected ':' after key") end
    i = i + 1
    stack[#stack].key = k
    state = "value"
  end

  while true do
    skip()
    if state == "value" then
      if i > n then bad("unexpected end of text") end
      local c = text:sub(i, i)
      if c == "{" then
        i = i + 1
        open({}, false)
        skip()
        if text:sub(i, i) == "}" then
          i = i + 1
          local t = table.remove(stack).t
          deliver(t)
        else
          expect_key()
        end
      elseif c == "[" then
        i = i + 1
        open({n = 0}, true)
        skip()
        if text:sub(i, i) == "]" then
          i = i + 1
          deliver(table.remove(stack).t)
        end
      elseif c == '"' then
        deliver(string_at())
      elseif c == "t" and text:sub(i, i + 3) == "true" then
        i = i + 4; deliver(true)
      elseif c == "f" and text:sub(i, i + 4) == "false" then
        i = i + 5; deliver(false)
      elseif c == "n" and text:sub(i, i + 3) == "null" then
        i = i + 4; deliver(nil)
      else
        deliver(number_at())
      end
    else -- after a value
      local top = stack[#stack]
      if not top then
        if i <= n then bad("trailing characters after the JSON value") end
        break
      end
      local c = text:sub(i, i)
      if c == "," then
        i = i + 1
        if top.arr then state = "value" else expect_key() end
      elseif (c == "]" and top.arr) or (c == "}" and not top.arr) then
        i = i + 1
        table.remove(stack)
        deliver(top.t)
      elseif i > n then
        bad("unexpected end of text")
      else
        bad(top.arr and "expected ',' or ']'" or "expected ',' or '}'")
      end
    end
  end
  if not have_root then bad("no value") end
  return root, linemap
end

-- json.decode(text, name[, opts]) -> value[, linemap]. opts.lines = true: also return a map
-- from each object/array to the line it starts on; opts.first_line: the line number of the
-- text's first line (for a line cut out of a larger file).
M.decode = fail.api(S_decode)

return M
