-- end: a held hold becomes released or expired and its units go back with
-- INCRBY. Expiring checks the hold is due (an Extend may have moved it).
-- KEYS[1] hold hash, KEYS[2] expiry zset, KEYS[3..] counters
-- ARGV[1] now ms, ARGV[2] retention ms, ARGV[3] target status,
-- ARGV[4] lines the caller read, ARGV[5..] quantities
local h = redis.call('HMGET', KEYS[1], 'status', 'lines', 'created', 'expires', 'deadline', 'ended')
if not h[1] then
  redis.call('ZREM', KEYS[2], KEYS[1])
  return {'missing'}
end
if h[1] ~= 'held' or h[2] ~= ARGV[4] then
  if ARGV[3] == 'expired' then redis.call('ZREM', KEYS[2], KEYS[1]) end
  return {'exists', h[1], h[2], h[3], h[4], h[5], h[6] or ''}
end
if ARGV[3] == 'expired' and tonumber(h[4]) > tonumber(ARGV[1]) then
  return {'notdue'}
end
for i = 1, #KEYS - 2 do
  redis.call('INCRBY', KEYS[2 + i], tonumber(ARGV[4 + i]))
end
redis.call('HSET', KEYS[1], 'status', ARGV[3], 'ended', ARGV[1])
redis.call('ZREM', KEYS[2], KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {'ended', ARGV[3], h[2], h[3], h[4], h[5], ARGV[1]}
