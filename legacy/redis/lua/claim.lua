-- claim cleanup: the second step of the legacy claim, after the SQL ledger
-- was deducted. The counter already went down at reserve; cleaning up ends
-- the hold record so expiry will not give its units back. An 'expired'
-- hold (swept between the two steps) is marked claimed all the same: its
-- units already went back — the legacy's own race, kept as it was.
-- KEYS[1] hold hash, KEYS[2] expiry zset
-- ARGV[1] now ms, ARGV[2] retention ms
local h = redis.call('HMGET', KEYS[1], 'status', 'lines', 'created', 'expires', 'deadline', 'ended')
if not h[1] then return {'missing'} end
if h[1] == 'held' or h[1] == 'expired' then
  redis.call('HSET', KEYS[1], 'status', 'claimed', 'ended', ARGV[1])
  redis.call('ZREM', KEYS[2], KEYS[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'ended', 'claimed', h[2], h[3], h[4], h[5], ARGV[1], h[1]}
end
return {'exists', h[1], h[2], h[3], h[4], h[5], h[6] or ''}
