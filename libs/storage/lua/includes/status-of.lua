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
