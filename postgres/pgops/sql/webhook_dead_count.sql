-- Dead letters in total and per endpoint, for the doctor.
SELECT count(*), count(DISTINCT (shop_id, endpoint_id)) FROM webhook_dead_letters
