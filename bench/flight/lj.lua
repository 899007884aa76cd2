local n = tonumber(arg[1]) or 200000
local function fail(x) if x % 3 == 0 then error("boom") end return x end
local function work(i) local ok = pcall(fail, i); return ok and 1 or 0 end
local co = coroutine.wrap(function() while true do coroutine.yield(1) end end)
local s = 0
for i = 1, n do s = s + work(i) + co() end
local f = io.open("/proc/self/status"); for l in f:lines() do if l:match("^VmHWM") then print(l) end end
print(s)
