package sqlite

import sqlitelib "modernc.org/sqlite/lib"

// LibraryVersion returns the version of the SQLite library the store is
// built with, such as "3.54.1".
func LibraryVersion() string { return sqlitelib.SQLITE_VERSION }
