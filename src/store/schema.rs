//! The library's schema as a list of migrations. `PRAGMA user_version` is the number of
//! migrations applied; opening a library checks the header and applies the missing ones in one
//! IMMEDIATE transaction (so concurrent openers of a new library never race on its creation).
//! A migration is never edited once released: a change is a new entry at the end.

/// `PRAGMA application_id`: "ctlb", so a database of another program is never taken for ours.
pub const APPLICATION_ID: i32 = 0x6374_6c62;

/// Migration `i` takes the schema from version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 1: sessions referenced by path and hash, runs with their series, settings.
    "CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        session_key TEXT NOT NULL,
        title TEXT,
        format TEXT NOT NULL,
        files TEXT NOT NULL,
        source_hash TEXT NOT NULL,
        file_hash TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        stats TEXT NOT NULL,
        imported_at INTEGER NOT NULL,
        UNIQUE (files, session_key)
    );
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        created_at INTEGER NOT NULL,
        strategy TEXT NOT NULL,
        plugin TEXT,
        params TEXT NOT NULL,
        budget TEXT NOT NULL,
        counter TEXT NOT NULL,
        metrics TEXT NOT NULL,
        run TEXT NOT NULL,
        series BLOB NOT NULL,
        series_format TEXT NOT NULL
    );
    CREATE INDEX runs_by_session ON runs(session);
    CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
    // 2: tuned profiles; runs get the label the user knows them by (compare, tune).
    "CREATE TABLE profiles (
        id INTEGER PRIMARY KEY,
        strategy TEXT NOT NULL,
        name TEXT NOT NULL,
        params TEXT NOT NULL,
        note TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        UNIQUE (strategy, name)
    );
    ALTER TABLE runs ADD COLUMN label TEXT NOT NULL DEFAULT '';",
];

/// The schema version this build writes.
pub const VERSION: u32 = MIGRATIONS.len() as u32;
