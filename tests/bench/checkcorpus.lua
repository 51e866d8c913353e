-- checkcorpus.lua: an independent sanity check of a gencorpus tree, so the
-- benchmark never times kvsite failing on a corpus bug.
--
--   find DIR/kvsite/content -name '*.md' | sort | lua5.4 checkcorpus.lua
--
-- Reads Markdown file names from stdin and checks that
--   * every relative link to a .md file names a file that exists;
--   * every quoted figure `QUOTE {= E1, E2}` / `{≈ E}` / `{~ E}` agrees with its
--     expressions, evaluated after the page's ```{lua} block, under the rules of
--     DESIGN.md (exact: rounded half away from zero to the quote's decimals;
--     approximate: within 5%).
-- It does not share code with gencorpus.c on purpose: two implementations
-- that agree are the point. Prints one line per problem (file:line: error:)
-- and a summary; exits 1 on any problem.

local units = {
  [""] = 1, B = 1, kB = 1e3, KB = 1e3, MB = 1e6, GB = 1e9, TB = 1e12,
  KiB = 2 ^ 10, MiB = 2 ^ 20, GiB = 2 ^ 30, TiB = 2 ^ 40,
  bit = 1 / 8, bits = 1 / 8, ["%"] = 0.01, ["×"] = 1, x = 1, ["倍"] = 1,
}

local errors, figures, links, pages = 0, 0, 0, 0
local sizes = { n = 0, sum = 0, min = math.huge, max = 0 }

local function fail(file, line, msg)
  errors = errors + 1
  io.write(string.format("%s:%d: error: %s\n", file, line, msg))
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() return true end
  return false
end

-- "a/b/../c/./d.md" -> "a/c/d.md"
local function normalize(path)
  local out = {}
  for part in path:gmatch("[^/]+") do
    if part == ".." then
      if #out > 0 and out[#out] ~= ".." then out[#out] = nil else out[#out + 1] = part end
    elseif part ~= "." then
      out[#out + 1] = part
    end
  end
  return (path:sub(1, 1) == "/" and "/" or "") .. table.concat(out, "/")
end

-- "224 MiB" -> number digits, decimals, unit, approximate mark
local function parse_quote(q)
  -- the marks are multi-byte: no character class for them
  local approx = false
  for _, mark in ipairs({ "~", "≈", "约" }) do
    if q:sub(1, #mark) == mark then q, approx = q:sub(#mark + 1), true break end
  end
  local num, unit = q:match("^([%d,]+%.?%d*)%s*(.-)$")
  if not num then return nil end
  local int, frac = num:match("^([%d,]+)%.?(%d*)$")
  local digits = int:gsub(",", "") .. frac
  return { scaled = tonumber(digits), decimals = #frac, unit = unit,
           value = tonumber(digits) / 10 ^ #frac, approx = approx }
end

local function round_half_away(x)
  if x >= 0 then return math.floor(x + 0.5) end
  return -math.floor(-x + 0.5)
end

local function check_figure(file, line, env, quote, op, exprs)
  figures = figures + 1
  local q = parse_quote(quote)
  if not q or not units[q.unit] then
    return fail(file, line, string.format("cannot read the quote %q", quote))
  end
  local fn, err = load("return " .. exprs, "=" .. file, "t", env)
  if not fn then return fail(file, line, "bad expression: " .. err) end
  local results = table.pack(pcall(fn))
  if not results[1] then return fail(file, line, "expression failed: " .. tostring(results[2])) end
  if results.n < 2 then return fail(file, line, "expression gave no value") end
  for i = 2, results.n do
    local v = results[i]
    if type(v) ~= "number" then
      return fail(file, line, string.format("%s is not a number", exprs))
    end
    local in_unit = v / units[q.unit]
    local ok
    if op == "=" and not q.approx then
      ok = round_half_away(in_unit * 10 ^ q.decimals) == q.scaled
    else
      ok = math.abs(q.value - in_unit) <= 0.05 * math.abs(in_unit)
    end
    if not ok then
      fail(file, line, string.format("quoted %s, but %s = %.17g %s", quote, exprs, in_unit, q.unit))
    end
  end
end

local function check_file(file)
  local f = io.open(file, "rb")
  if not f then return fail(file, 0, "cannot open") end
  local text = f:read("a")
  f:close()
  local dir = file:match("^(.*)/[^/]*$") or "."
  local base = file:match("([^/]*)$")
  if base:match("^p%d+%.md$") then
    pages = pages + 1
    sizes.n, sizes.sum = sizes.n + 1, sizes.sum + #text
    sizes.min, sizes.max = math.min(sizes.min, #text), math.max(sizes.max, #text)
  end

  -- the page's Lua runs in its own table over math only, as kvsite's does
  local env = setmetatable({}, { __index = { math = math } })
  local in_fence, fence_lua, lua_lines, lua_start = false, false, {}, 0
  local lineno = 0
  for line in (text .. "\n"):gmatch("(.-)\n") do
    lineno = lineno + 1
    if line:match("^```") then
      if not in_fence then
        in_fence, fence_lua, lua_lines, lua_start = true, line == "```{lua}", {}, lineno
      else
        if fence_lua then
          local chunk, err = load(table.concat(lua_lines, "\n"), "=" .. file, "t", env)
          local ok, perr = chunk ~= nil, err
          if chunk then ok, perr = pcall(chunk) end
          if not ok then fail(file, lua_start, "lua block: " .. tostring(perr)) end
        end
        in_fence = false
      end
    elseif in_fence then
      if fence_lua then lua_lines[#lua_lines + 1] = line end
    else
      for target in line:gmatch("%]%(([^)%s]+)%)") do
        if not target:find("://", 1, true) and target:match("%.md$") then
          links = links + 1
          if not exists(normalize(dir .. "/" .. target)) then
            fail(file, lineno, "link " .. target .. " does not resolve")
          end
        end
      end
      for span in line:gmatch("`([^`]+)`") do
        for _, op in ipairs({ "=", "≈", "~" }) do
          local quote, exprs = span:match("^(.-)%s*{" .. op .. "%s*(.-)}$")
          if quote then check_figure(file, lineno, env, quote, op, exprs) break end
        end
      end
    end
  end
end

for file in io.lines() do
  if file ~= "" then check_file(file) end
end

local mean = sizes.n > 0 and sizes.sum // sizes.n or 0
io.write(string.format(
  "checkcorpus: %d pages (bytes min %d, mean %d, max %d), %d links, %d figures, %d errors\n",
  pages, sizes.n > 0 and sizes.min or 0, mean, sizes.max, links, figures, errors))
os.exit(errors == 0 and 0 or 1)
