--[[
  Takes over an Idempotency-Key's claim whose job was never stored, for a repeat of the request
  that made it: only if the claim is still the one the caller read, so of several repeats racing
  one wins and the others see a claim in progress. The claim keeps its expiry.

  Input:
    KEYS[1] the key's claim

    ARGV[1] the claim as the caller read it (JSON)
    ARGV[2] the claim as it is to be (JSON: the same job id and fingerprint, claimed now)

  Output:
    1 taken over
    0 the claim changed or is gone meanwhile (nothing written)
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
return 1
