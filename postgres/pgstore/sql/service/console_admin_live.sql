-- Whether the key with this id is still a live, unexpired admin key: asked
-- on every request of a console session.
-- $1 key id
SELECT EXISTS (
    SELECT 1 FROM api_keys
    WHERE id = $1 AND admin AND revoked_at IS NULL
      AND (expires_at IS NULL OR expires_at > clock_timestamp()))
