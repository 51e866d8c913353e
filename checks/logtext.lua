-- logtext: the line handling every log parser shares.
--
-- Parsers take the text of a log and a name for messages (the path under checks/, e.g.
-- "measurements/run1.log"); errors read "name:line: what is wrong". Lines keep their
-- numbers; a trailing "\r" is dropped. A block of leading lines that start with "#" is a
-- provenance header (kvsite's convention for committed logs and samples; no engine prints
-- one): header_end() says where it stops.

local fail = require "fail"

local M = {}

M.MAX_TEXT = 64 * 1024 * 1024 -- bytes of log text a parser accepts
M.MAX_LINE = 1024 * 1024      -- bytes per line

-- Check the arguments of a parser; returns text, name.
function M.args(parser, text, name)
  if type(text) ~= "string" then
    fail.raisef("%s: expects the text of a log (a string), got %s", parser, type(text))
  end
  if name ~= nil and type(name) ~= "string" then
    fail.raisef("%s: the name must be a string, got %s", parser, type(name))
  end
  name = name or "<text>"
  if #text > M.MAX_TEXT then
    fail.raisef("%s: %s is larger than %d bytes", parser, name, M.MAX_TEXT)
  end
  return text, name
end

-- Array of lines, "\r\n" or "\n" separated; line i is lines[i].
function M.lines(text, name)
  local out, pos, n = {}, 1, #text
  while pos <= n do
    local e = text:find("\n", pos, true)
    local line = text:sub(pos, (e or n + 1) - 1)
    if #line > M.MAX_LINE then fail.raisef("%s:%d: line longer than %d bytes", name, #out + 1, M.MAX_LINE) end
    if line:sub(-1) == "\r" then line = line:sub(1, -2) end
    out[#out + 1] = line
    if not e then break end
    pos = e + 1
  end
  return out
end

-- Index of the first line after the leading "#" header (1 when there is none).
function M.header_end(lines)
  local i = 1
  while lines[i] and lines[i]:sub(1, 1) == "#" do i = i + 1 end
  return i
end

-- Raise "name:n: msg".
function M.fail_at(name, n, fmt, ...)
  fail.raise(string.format("%s:%d: ", name, n) .. string.format(fmt, ...))
end

function M.trim(s)
  return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

-- A plain decimal ("224", "0.57", "-3"), or nil.
function M.number(s)
  if s and (s:match("^%-?%d+%.?%d*$") or s:match("^%-?%.%d+$")) then return tonumber(s) end
  return nil
end

-- An integer ("4096", "-1"), or nil.
function M.int(s)
  if s and s:match("^%-?%d+$") then return math.tointeger(tonumber(s)) end
  return nil
end

-- An integer with optional thousands separators ("451,744", "4096"), or nil.
function M.int_sep(s)
  if not s or not s:match("^[%d,]+$") then return nil end
  if s:find(",", 1, true) then
    local first = true
    for group in (s .. ","):gmatch("([^,]*),") do
      if first then
        if #group < 1 or #group > 3 then return nil end
        first = false
      elseif #group ~= 3 then
        return nil
      end
    end
  end
  return math.tointeger(tonumber((s:gsub(",", ""))))
end

-- Split a "| a | b |" table line on "|" into trimmed cells; nil when it is not one.
function M.cells(line)
  local s = M.trim(line)
  if s:sub(1, 1) ~= "|" or s:sub(-1) ~= "|" or #s < 2 then return nil end
  local out, pos, inner = {}, 1, s:sub(2, -2)
  while true do
    local e = inner:find("|", pos, true)
    out[#out + 1] = M.trim(inner:sub(pos, (e or #inner + 1) - 1))
    if not e then break end
    pos = e + 1
  end
  return out
end

return M
