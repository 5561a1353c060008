-- extend: a held hold's expiry moves to now + ttl, within its deadline.
-- KEYS[1] hold hash, KEYS[2] expiry zset; ARGV[1] now ms, ARGV[2] ttl ms
local h = redis.call('HMGET', KEYS[1], 'status', 'lines', 'created', 'expires', 'deadline', 'ended')
if not h[1] then return {'missing'} end
if h[1] ~= 'held' then return {'exists', h[1], h[2], h[3], h[4], h[5], h[6] or ''} end
local e = tonumber(ARGV[1]) + tonumber(ARGV[2])
if e > tonumber(h[5]) then return {'lifetime'} end
redis.call('HSET', KEYS[1], 'expires', tostring(e))
redis.call('ZADD', KEYS[2], e, KEYS[1])
return {'held', 'held', h[2], h[3], tostring(e), h[5], ''}
