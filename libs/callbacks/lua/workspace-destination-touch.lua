--[[
  Notes that a workspace's callbacks went to a destination (what its dashboard lists). Apart from
  the destination's own script: a destination is shared by workspaces on every shard.

  Input:
    KEYS[1] the workspace's destinations (sorted set: id -> last use ms)

    ARGV[1] destination id
    ARGV[2] now ms
    ARGV[3] ms that the list is kept when idle
    ARGV[4] how many destinations the list keeps (the latest used)

  Output:
    0
]]
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
-- A workspace sending to ever new hosts keeps only its latest few on record.
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(tonumber(ARGV[4]) + 1))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 0
