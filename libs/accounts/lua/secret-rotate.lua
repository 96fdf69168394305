--[[
  Makes a new signing secret current (or a new ed25519 signing key pair: its list has the same
  shape). The previous current secret gets its end time and keeps signing until then; any older
  one is dropped at once, so a rotation always leaves exactly two
  secrets signing (spec 4.5: two signatures during the overlap) and rotating twice after a leak
  ends the leaked secret. Read and write in one step, so two rotations at once cannot both keep
  their own previous secret.

  Input:
    KEYS[1] the workspace's signing secrets (JSON list of {secret, created_ms, expires_ms}), or its
            signing key pairs (JSON list of {secret_key, public_key, created_ms, expires_ms})

    ARGV[1] the new entry (JSON, expires_ms 0)
    ARGV[2] now ms
    ARGV[3] the overlap, ms: how long the previous secret keeps signing

  Output:
    when the previous secret stops signing, ms; 0 when there was none
]]
local list = {}
local raw = redis.call('GET', KEYS[1])
if raw then list = cjson.decode(raw) end
local now = tonumber(ARGV[2])
local out = { cjson.decode(ARGV[1]) }
local ends = 0
for _, s in ipairs(list) do
  if s.expires_ms == 0 then
    s.expires_ms = now + tonumber(ARGV[3]); ends = s.expires_ms
    if s.expires_ms > now then table.insert(out, s) end
  end
end
redis.call('SET', KEYS[1], cjson.encode(out))
return ends
