--[[
  Ends a rotation's overlap: only the current signing secret is kept. In one step so that a
  rotation meanwhile is not undone.

  Input:
    KEYS[1] the workspace's signing secrets (JSON list)

  Output:
    how many secrets are left (0 when the workspace has none)
]]
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local out = {}
for _, s in ipairs(cjson.decode(raw)) do
  if s.expires_ms == 0 then table.insert(out, s) end
end
redis.call('SET', KEYS[1], cjson.encode(out))
return #out
