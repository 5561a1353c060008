-- reserve: the seeds' Redis hold, made atomic per cart. For each line,
-- DECRBY its key's counter; when it goes negative, give it (and the lines
-- already taken) back with INCRBY and answer the short lines.
-- KEYS[1] hold hash, KEYS[2] expiry zset, KEYS[3..] counters (line order)
-- ARGV[1] now ms, ARGV[2] expires ms, ARGV[3] deadline ms, ARGV[4] lines,
-- ARGV[5..] quantities (line order)
local st = redis.call('HGET', KEYS[1], 'status')
if st then
  local h = redis.call('HMGET', KEYS[1], 'status', 'lines', 'created', 'expires', 'deadline', 'ended')
  return {'exists', h[1], h[2], h[3], h[4], h[5], h[6] or ''}
end
local n = #KEYS - 2
for i = 1, n do
  local q = tonumber(ARGV[4 + i])
  local v = redis.call('DECRBY', KEYS[2 + i], q)
  if v < 0 then
    for j = 1, i do
      redis.call('INCRBY', KEYS[2 + j], tonumber(ARGV[4 + j]))
    end
    local out = {'short'}
    for j = 1, n do
      local have = tonumber(redis.call('GET', KEYS[2 + j]) or '0')
      if have < tonumber(ARGV[4 + j]) then
        table.insert(out, tostring(j))
        table.insert(out, tostring(have))
      end
    end
    return out
  end
end
redis.call('HSET', KEYS[1], 'status', 'held', 'lines', ARGV[4], 'created', ARGV[1], 'expires', ARGV[2], 'deadline', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[2], KEYS[1])
return {'held', 'held', ARGV[4], ARGV[1], ARGV[2], ARGV[3], ''}
