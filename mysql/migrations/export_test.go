package migrations

// UpTo is Up that stops after migration limit: a database as an older
// release left it.
var UpTo = upTo
