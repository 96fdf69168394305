--[[
  One page of a sorted-set index whose scores are creation times (Unix ms), after a cursor id, by
  rank arithmetic only: each step is one O(log n) lookup plus the page itself, so a page costs the
  same on an index of ten items and of ten million. In one step, so that an item added or removed
  while the page is read cannot shift the page against its cursor (a repeated or skipped item).

  Input:
    KEYS[1] the index
    KEYS[2..] where to look up, in turn, the score of a cursor that is no longer in the index: the
            index that holds every item of the list (a callback that left a state index while its
            list was being paged), the removed set of that index (includes/list-removed: an item
            deleted while its list was being paged)

    ARGV[1] 'desc' (newest first) or 'asc'
    ARGV[2] page size
    ARGV[3] the cursor: the id of the last item the client saw, or '' for the first page
    ARGV[4] inclusive lower bound on the score, or '-inf'
    ARGV[5] exclusive upper bound on the score, or '+inf'

  Output:
    { found, id... }: found is 1, or 0 when the cursor names no item of the list (then no ids);
    up to page size + 1 ids, the last one only telling that more follow
]]
local index = KEYS[1]
local desc = ARGV[1] == 'desc'
local limit = tonumber(ARGV[2])
local after = ARGV[3]
local min, max = ARGV[4], ARGV[5]

-- The window of ranks that satisfies the time bounds, in the order of reading.
local total = redis.call('ZCARD', index)
local below = 0
if min ~= '-inf' then below = redis.call('ZCOUNT', index, '-inf', '(' .. min) end
local at_or_above = 0
if max ~= '+inf' then at_or_above = redis.call('ZCOUNT', index, max, '+inf') end
local start, stop
if desc then
  start, stop = at_or_above, total - below - 1
else
  start, stop = below, total - at_or_above - 1
end

if after ~= '' then
  local rank
  if desc then rank = redis.call('ZREVRANK', index, after) else rank = redis.call('ZRANK', index, after) end
  if rank then
    start = math.max(start, rank + 1)
  else
    local score = false
    for i = 2, #KEYS do
      score = redis.call('ZSCORE', KEYS[i], after)
      if score then break end
    end
    if not score then return { 0 } end
    -- Items strictly past the cursor's time; items made in the same millisecond may repeat.
    local passed
    if desc then passed = redis.call('ZCOUNT', index, '(' .. score, '+inf') else passed = redis.call('ZCOUNT', index, '-inf', '(' .. score) end
    start = math.max(start, passed)
  end
end

local page = { 1 }
if start > stop then return page end
local last = math.min(stop, start + limit)
local ids
if desc then ids = redis.call('ZREVRANGE', index, start, last) else ids = redis.call('ZRANGE', index, start, last) end
for _, id in ipairs(ids) do page[#page + 1] = id end
return page
