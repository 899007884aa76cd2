-- sortfib.lua N: N rounds of table.sort with a Lua comparator, string.format, string.gsub with
-- a Lua function and a recursive fib, for the time-window test (test_time_window.py). No pcall
-- and no error: Lua makes no longjmp.
local n = tonumber(arg[1]) or 6
local function fib(k)
  if k < 2 then return k end
  return fib(k - 1) + fib(k - 2)
end
local acc = 0
for _ = 1, n do
  local t = {}
  for i = 1, 2000 do t[i] = (i * 7919) % 1000 end
  table.sort(t, function(a, b) return a > b end)
  local s = {}
  for i = 1, 200 do s[#s + 1] = string.format("%d", t[i]) end
  acc = acc + fib(18) + #table.concat(s, ",")
  acc = acc + #string.gsub("abc def ghi", "%a+", function(w) return w:upper() end)
end
print(acc)
