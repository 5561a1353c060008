-- Where the server wrote its process ID.
SELECT @@pid_file
