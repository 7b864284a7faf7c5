-- boot_paths.lua: wrk script for boot_script_bench.sh. Each request takes the
-- next path from a list (one path per line, file given after `--`), so the
-- requests rotate over all nodes; each wrk thread starts at its own offset
-- (the thread count is the second argument after `--`).
-- At the end it prints one line for the benchmark to parse:
--   RESULT requests=N duration_us=N p50_us=N p90_us=N p99_us=N max_us=N
--          connect=N read=N write=N status=N timeout=N
-- (status: responses that were not 2xx or 3xx).

local next_id = 0

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
end

local paths = {}
local i = 0

function init(args)
  local file = assert(args[1], "usage: wrk ... -s boot_paths.lua URL -- PATHS_FILE THREADS")
  local nthreads = tonumber(args[2] or "1")
  for line in io.lines(file) do
    if #line > 0 then paths[#paths + 1] = line end
  end
  assert(#paths > 0, "no paths in " .. file)
  -- Spread the threads' starting points over the list.
  i = math.floor(id * #paths / math.max(1, nthreads)) % #paths
end

function request()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d " ..
    "connect=%d read=%d write=%d status=%d timeout=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, e.connect, e.read, e.write, e.status, e.timeout))
end
