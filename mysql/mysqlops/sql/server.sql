SELECT coalesce(DATABASE(), ''), concat(@@hostname, ':', @@port, ' (', @@version_comment, ' ', @@version, ')')
