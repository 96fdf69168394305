--[[
  Changes a dashboard member's role, or removes the member, refusing to leave the workspace
  without an owner. In one script: two owners demoting each other at once must not both succeed.
  A new role comes with a new session epoch, which ends the member's sessions (opened under the
  old role).

  Input:
    KEYS[1] the workspace's members (hash: e-mail -> member JSON)
    KEYS[2] the member's workspaces (set, indexed by the e-mail's hash)

    ARGV[1] e-mail (normalized)
    ARGV[2] the new role, or '' to remove the member
    ARGV[3] workspace id
    ARGV[4] the new session epoch

  Output:
    'ok', 'missing' (no such member) or 'last_owner' (refused)
]]
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 'missing' end
local member = cjson.decode(raw)
if member.role == 'owner' and ARGV[2] ~= 'owner' then
  local owners = 0
  for _, v in ipairs(redis.call('HVALS', KEYS[1])) do
    if cjson.decode(v).role == 'owner' then owners = owners + 1 end
  end
  if owners <= 1 then return 'last_owner' end
end
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('SREM', KEYS[2], ARGV[3])
else
  member.role = ARGV[2]
  member.session_epoch = ARGV[4]
  redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(member))
end
return 'ok'
