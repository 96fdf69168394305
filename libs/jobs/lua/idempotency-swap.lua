--[[
  Replaces or removes an Idempotency-Key's claim only if it is still the one the caller holds: a
  repeat taking over a claim whose job was never stored (of several racing, one wins), or a request
  giving back the claim it made when it failed before storing its job (never one another request
  has taken over meanwhile). A replaced claim keeps its expiry.

  Input:
    KEYS[1] the key's claim

    ARGV[1] the claim as the caller holds it (JSON)
    ARGV[2] the claim as it is to be (JSON), or '' to remove it

  Output:
    1 replaced or removed
    0 the claim changed or is gone meanwhile (nothing written)
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
end
return 1
