-- fail: how the checks library raises errors.
--
-- Library code raises with fail.raise(msg): a tagged error value. Every public function is
-- wrapped with fail.api(f); the outermost wrapped call on the stack turns a tagged error into
-- a string raised with error(msg, 2), so the position Lua prepends is the caller's: the
-- page (or test) line that called the library, not a line inside checks/. Errors that are not
-- ours (runtime errors, the sandbox's instruction budget or memory cap) pass through unchanged.
--
-- The nesting counter lives in this module instance; modules are fresh per page, and the
-- counter is back at zero after every call, so no state outlives a call.

local M = {}

local TAG = {}
local depth = 0

-- Raise a library error with message msg (a string, used verbatim).
function M.raise(msg)
  error({[TAG] = true, msg = msg}, 0)
end

-- Raise with string.format(fmt, ...).
function M.raisef(fmt, ...)
  M.raise(string.format(fmt, ...))
end

-- True when e is an error value made by raise.
function M.is_ours(e)
  return type(e) == "table" and e[TAG] == true
end

-- Message of an error value, ours or not.
function M.message(e)
  if M.is_ours(e) then return e.msg end
  return tostring(e)
end

-- Wrap f as a public entry point (see the header comment).
function M.api(f)
  return function(...)
    depth = depth + 1
    local r = table.pack(pcall(f, ...))
    depth = depth - 1
    if r[1] then return table.unpack(r, 2, r.n) end
    local e = r[2]
    if M.is_ours(e) and depth == 0 then error(e.msg, 2) end
    error(e, 0)
  end
end

-- A quoted, length-capped rendering of v for messages.
function M.show(v)
  if type(v) == "string" then
    if #v > 60 then v = v:sub(1, 57) .. "..." end
    return string.format("%q", v)
  end
  return tostring(v)
end

-- Sorted keys of t joined by ", " (for "known: ..." lists).
function M.keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = tostring(k) end
  table.sort(ks)
  return table.concat(ks, ", ")
end

-- Reject keys of opts that are not in allowed (a set); what names the caller.
function M.check_keys(what, opts, allowed)
  for k in pairs(opts) do
    if not allowed[k] then
      M.raisef("%s: unknown option %s; known: %s", what, M.show(k), M.keys(allowed))
    end
  end
end

return M
