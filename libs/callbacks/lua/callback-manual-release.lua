--[[
  Lets go of a manual attempt's request (see callback-manual-send.lua) when the run holding it gave
  up before sending anything, so that the next run to make the attempt need not wait for the hold to
  lapse. Never a hold another run has taken meanwhile.

  Input:
    KEYS[1] the request's hold

    ARGV[1] the id of the delivery job letting go

  Output:
    1 let go, 0 not held by that job (nothing changed)
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
