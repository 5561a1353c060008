-- Dead letters in total and per endpoint, for the doctor.
SELECT count(*), count(DISTINCT endpoint_id) FROM webhook_dead_letters
