package payments

import "github.com/redis/go-redis/v9"

// Every write is one of these scripts. A script runs atomically, so the Hash
// change, the version increment and the XADD of the notification happen
// together or not at all. Two rules keep "not at all" true, because Redis
// does not roll back a script that fails halfway:
//   - every check that can reject the command runs before the first write;
//   - the stream key's type is checked up front, so XADD cannot fail after
//     HSET has already run.
//
// The event envelope (id, source, type, time, subject) is built in Go; the
// script appends the data member, since only it knows the version it wrote.
//
// KEYS[1] = payment hash, KEYS[2] = notification stream.

// preamble is shared by all scripts: argument checks and the data composer.
const preamble = `
local function check_stream(key)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'stream' and t ~= 'none' then
    return redis.error_reply('ERR ' .. key .. ' holds a ' .. t .. ', not a stream')
  end
end

local function check_envelope(env)
  if string.sub(env, 1, 1) ~= '{' or string.sub(env, -1) ~= '}' or string.find(env, '"data"', 1, true) then
    return redis.error_reply('ERR event envelope must be a JSON object without data')
  end
end

-- The envelope is a JSON object without data; close it with the thin data
-- member. cjson.encode quotes the id safely; the version is an integer.
local function compose(env, id, version)
  return string.sub(env, 1, -2) .. ',"data":{"paymentId":' .. cjson.encode(id) ..
    ',"version":' .. string.format('%d', version) .. '}}'
end
`

// createScript: ARGV = id, amount_cents, currency, payer, payee, status, now, envelope.
var createScript = redis.NewScript(preamble + `
local err = check_stream(KEYS[2]) or check_envelope(ARGV[8])
if err then return err end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.error_reply('CONFLICT payment ' .. ARGV[1] .. ' already exists')
end
redis.call('HSET', KEYS[1],
  'id', ARGV[1], 'amount_cents', ARGV[2], 'currency', ARGV[3],
  'payer_account', ARGV[4], 'payee_account', ARGV[5], 'status', ARGV[6],
  'created_at', ARGV[7], 'updated_at', ARGV[7])
local v = redis.call('HINCRBY', KEYS[1], 'version', 1)
local xid = redis.call('XADD', KEYS[2], '*', 'event', compose(ARGV[8], ARGV[1], v))
return {xid, redis.call('HGETALL', KEYS[1])}
`)

// transitionScript: ARGV = id, from status, to status, now, envelope.
var transitionScript = redis.NewScript(preamble + `
local err = check_stream(KEYS[2]) or check_envelope(ARGV[5])
if err then return err end
local cur = redis.call('HGET', KEYS[1], 'status')
if not cur then
  return redis.error_reply('NOT_FOUND payment ' .. ARGV[1])
end
if cur ~= ARGV[2] then
  return redis.error_reply('CONFLICT payment ' .. ARGV[1] .. ' is ' .. cur .. ', must be ' .. ARGV[2])
end
redis.call('HSET', KEYS[1], 'status', ARGV[3], 'updated_at', ARGV[4])
local v = redis.call('HINCRBY', KEYS[1], 'version', 1)
local xid = redis.call('XADD', KEYS[2], '*', 'event', compose(ARGV[5], ARGV[1], v))
return {xid, redis.call('HGETALL', KEYS[1])}
`)

// removeScript: ARGV = id, envelope. The removal notification carries the
// version the payment would have had next, so versions stay gapless per
// payment even though the hash is gone.
var removeScript = redis.NewScript(preamble + `
local err = check_stream(KEYS[2]) or check_envelope(ARGV[2])
if err then return err end
local v = redis.call('HGET', KEYS[1], 'version')
if not v then
  return redis.error_reply('NOT_FOUND payment ' .. ARGV[1])
end
redis.call('DEL', KEYS[1])
local nv = tonumber(v) + 1
local xid = redis.call('XADD', KEYS[2], '*', 'event', compose(ARGV[2], ARGV[1], nv))
return {xid, nv}
`)
