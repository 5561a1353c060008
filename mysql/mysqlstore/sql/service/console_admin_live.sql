-- Whether the key with this id is still a live, unexpired admin key: asked
-- on every request of a console session.
-- ? key id
SELECT EXISTS (
    SELECT 1 FROM api_keys
    WHERE id = ? AND admin AND revoked_at IS NULL
      AND (expires_at IS NULL OR expires_at > UTC_TIMESTAMP(6)))
