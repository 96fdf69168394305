--[[
  The status of a job record, or nil when the record cannot be decoded (written before
  encodeRecord existed, or by hand). Such a record must not wedge its job: the scripts that
  include this answer -2 for it, and their caller fails the job permanently.
]]
local function status_of(raw)
  local ok, record = pcall(cjson.decode, raw)
  if not ok or type(record) ~= 'table' then return nil end
  return record['status']
end

--[[
  What a script that changes a running job answers instead of writing, or nil when it may write:
  -1 no such job, -2 its record cannot be decoded, 0 it has finished already.
]]
local function refusal_for_unfinished(key)
  local raw = redis.call('GET', key)
  if not raw then return -1 end
  local status = status_of(raw)
  if status == nil then return -2 end
  if status == 'completed' or status == 'failed' then return 0 end
  return nil
end
