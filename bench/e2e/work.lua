-- End-to-end Lua workload for bench/e2e/run.sh: recursive fib and binary trees
-- (the benchmarks game's shape), so the interpreter's C functions are called very often.
-- usage: lua work.lua [FIB_N] [TREE_DEPTH]
local fib_n = tonumber(arg[1]) or 27
local depth = tonumber(arg[2]) or 14

local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end

local function bottom_up(d)
  if d == 0 then return {} end
  d = d - 1
  return { bottom_up(d), bottom_up(d) }
end

local function check(t)
  if t[1] then return 1 + check(t[1]) + check(t[2]) end
  return 1
end

local total = 0
for d = 4, depth, 2 do
  local iters = 1 << (depth - d + 4)
  for _ = 1, iters do total = total + check(bottom_up(d)) end
end
print(string.format("fib(%d) = %d, tree nodes checked = %d", fib_n, fib(fib_n), total))
