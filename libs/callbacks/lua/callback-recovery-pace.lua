--[[
  Reserves send slots on a workspace's one recovery pace, so that recoveries started together
  queue behind each other instead of multiplying the rate at the receivers. Read and move in one
  step, so two recoveries never get the same slots.

  Input:
    KEYS[1] the workspace's recovery pace (when its reserved slots end, ms; expires when the pace
            is idle again)

    ARGV[1] now ms
    ARGV[2] how long the reserved slots last, ms

  Output:
    when the first reserved slot is, ms
]]
local start = math.max(tonumber(ARGV[1]), tonumber(redis.call('GET', KEYS[1]) or '0'))
local finish = start + tonumber(ARGV[2])
redis.call('SET', KEYS[1], finish, 'PX', math.max(1, finish - tonumber(ARGV[1])))
return start
