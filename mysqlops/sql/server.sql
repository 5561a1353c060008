/* app='holdfast',route='ops' */ SELECT coalesce(DATABASE(), ''), concat(@@hostname, ':', @@port, ' (', @@version_comment, ' ', @@version, ')')
