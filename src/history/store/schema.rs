//! The one schema of a history store, declared once as data: both backends
//! make their tables from it ([`ddl`]), check an existing store against it
//! column by column ([`check_columns`]), and step an older store up to it
//! ([`MIGRATIONS`]).
//!
//! ```text
//! meta      key, value                     format = tally-history, schema_version
//! machines  id, fingerprint, cpu_model, cpus, kernel, counting, counting_version
//! points    id, recorded_at_ns, commit_id, dirty, branch, tool, machine_id,
//!           tally_version, origin           one per recording (one run of a command)
//! series    id, command, figure, unit      one per command and figure
//! results   series_id, point_id, n, median, mad, min, max, samples
//!                                          one per point and series; samples are
//!                                          little-endian f64s (NULL: none kept)
//! packs     series_id, first_point_id, last_point_id, count, data
//!                                          a series' results of a range of point
//!                                          ids, packed for reading (`pack`); meta's
//!                                          packed_through: every result of a point
//!                                          up to it is in a pack
//! ```

/// The schema version this tally writes and reads.
pub const SCHEMA_VERSION: i64 = 2;

/// What `meta.format` holds in every store.
pub const FORMAT: &str = "tally-history";

/// A column's kind, spelled per backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The table's own id: assigned by the store, ascending.
    Id,
    Int,
    Real,
    Text,
    Blob,
}

/// One column.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    pub kind: Kind,
    pub null: bool,
}

/// One table: its columns, then its keys as SQL both backends read alike.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [Column],
    pub keys: &'static [&'static str],
}

const fn col(name: &'static str, kind: Kind, null: bool) -> Column {
    Column { name, kind, null }
}

/// Every table, in the order they are made (a table after those it names).
pub const TABLES: &[Table] = &[
    Table {
        name: "meta",
        columns: &[
            col("key", Kind::Text, false),
            col("value", Kind::Text, false),
        ],
        keys: &["PRIMARY KEY (key)"],
    },
    Table {
        name: "machines",
        columns: &[
            col("id", Kind::Id, false),
            col("fingerprint", Kind::Text, false),
            col("cpu_model", Kind::Text, true),
            col("cpus", Kind::Int, true),
            col("kernel", Kind::Text, true),
            col("counting", Kind::Text, false),
            col("counting_version", Kind::Text, true),
        ],
        keys: &["UNIQUE (fingerprint)"],
    },
    Table {
        name: "points",
        columns: &[
            col("id", Kind::Id, false),
            col("recorded_at_ns", Kind::Int, false),
            col("commit_id", Kind::Text, true),
            col("dirty", Kind::Int, false),
            col("branch", Kind::Text, true),
            col("tool", Kind::Text, false),
            col("machine_id", Kind::Int, false),
            col("tally_version", Kind::Text, false),
            col("origin", Kind::Text, false),
        ],
        keys: &["FOREIGN KEY (machine_id) REFERENCES machines (id)"],
    },
    Table {
        name: "series",
        columns: &[
            col("id", Kind::Id, false),
            col("command", Kind::Text, false),
            col("figure", Kind::Text, false),
            col("unit", Kind::Text, false),
        ],
        keys: &["UNIQUE (command, figure)"],
    },
    Table {
        name: "results",
        columns: &[
            col("series_id", Kind::Int, false),
            col("point_id", Kind::Int, false),
            col("n", Kind::Int, false),
            col("median", Kind::Real, false),
            col("mad", Kind::Real, false),
            col("min", Kind::Real, false),
            col("max", Kind::Real, false),
            col("samples", Kind::Blob, true),
        ],
        keys: &[
            "PRIMARY KEY (series_id, point_id)",
            "FOREIGN KEY (series_id) REFERENCES series (id)",
            "FOREIGN KEY (point_id) REFERENCES points (id)",
        ],
    },
    Table {
        name: "packs",
        columns: &[
            col("series_id", Kind::Int, false),
            col("first_point_id", Kind::Int, false),
            col("last_point_id", Kind::Int, false),
            col("count", Kind::Int, false),
            col("data", Kind::Blob, false),
        ],
        keys: &[
            "PRIMARY KEY (series_id, first_point_id)",
            "FOREIGN KEY (series_id) REFERENCES series (id)",
        ],
    },
];

/// The meta rows a new store starts with, beside its format and version.
pub const META_START: &[(&str, &str)] = &[("packed_through", "0")];

/// The statement that writes a new store's meta rows.
pub fn meta_start(prefix: &str) -> String {
    let version = SCHEMA_VERSION.to_string();
    let rows: Vec<String> = [("format", FORMAT), ("schema_version", version.as_str())]
        .iter()
        .chain(META_START)
        .map(|(k, v)| format!("('{k}', '{v}')"))
        .collect();
    format!(
        "INSERT INTO {prefix}meta (key, value) VALUES {}",
        rows.join(", ")
    )
}

/// The indexes beyond the keys: points by time, for `--since`.
pub const INDEXES: &[(&str, &str, &str)] = &[("points_by_time", "points", "recorded_at_ns, id")];

/// The SQL dialects of the two backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Kind {
    /// The column type as the backend declares it.
    pub fn spelled(self, d: Dialect) -> &'static str {
        match (self, d) {
            (Kind::Id, Dialect::Sqlite) => "INTEGER PRIMARY KEY",
            (Kind::Id, Dialect::Postgres) => "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
            (Kind::Int, Dialect::Sqlite) => "INTEGER",
            (Kind::Int, Dialect::Postgres) => "BIGINT",
            (Kind::Real, Dialect::Sqlite) => "REAL",
            (Kind::Real, Dialect::Postgres) => "DOUBLE PRECISION",
            (Kind::Text, _) => "TEXT",
            (Kind::Blob, Dialect::Sqlite) => "BLOB",
            (Kind::Blob, Dialect::Postgres) => "BYTEA",
        }
    }

    /// The type the backend reports for such a column (SQLite's
    /// `PRAGMA table_info`, PostgreSQL's `information_schema.columns`).
    pub fn reported(self, d: Dialect) -> &'static str {
        match (self, d) {
            (Kind::Id | Kind::Int, Dialect::Sqlite) => "INTEGER",
            (Kind::Id | Kind::Int, Dialect::Postgres) => "bigint",
            (Kind::Real, Dialect::Sqlite) => "REAL",
            (Kind::Real, Dialect::Postgres) => "double precision",
            (Kind::Text, Dialect::Sqlite) => "TEXT",
            (Kind::Text, Dialect::Postgres) => "text",
            (Kind::Blob, Dialect::Sqlite) => "BLOB",
            (Kind::Blob, Dialect::Postgres) => "bytea",
        }
    }
}

/// The statements that make every table and index, in order; `prefix` is
/// put before each table name (`tally_history.` in PostgreSQL).
pub fn ddl(d: Dialect, prefix: &str) -> Vec<String> {
    let mut out: Vec<String> = TABLES.iter().map(|t| table_ddl(t, d, prefix)).collect();
    for (name, table, cols) in INDEXES {
        // An index lives in its table's schema: its name takes no prefix.
        out.push(format!("CREATE INDEX {name} ON {prefix}{table} ({cols})"));
    }
    out
}

/// The statement that makes table `t`.
pub fn table_ddl(t: &Table, d: Dialect, prefix: &str) -> String {
    let mut parts: Vec<String> = t
        .columns
        .iter()
        .map(|c| {
            let null = if c.null || c.kind == Kind::Id {
                ""
            } else {
                " NOT NULL"
            };
            format!("{} {}{null}", c.name, c.kind.spelled(d))
        })
        .collect();
    parts.extend(
        t.keys
            .iter()
            .map(|k| k.replace("REFERENCES ", &format!("REFERENCES {prefix}"))),
    );
    let without_rowid = if d == Dialect::Sqlite && t.name == "results" {
        " WITHOUT ROWID"
    } else {
        ""
    };
    format!(
        "CREATE TABLE {prefix}{} ({}){without_rowid}",
        t.name,
        parts.join(", ")
    )
}

/// One column as a store reports it: its name, its type as reported, and
/// whether it may be NULL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub name: String,
    pub kind: String,
    pub null: bool,
}

/// Checks the columns a store reports for `table` against the schema:
/// the same names, in the same order, of the same types. The error names
/// the table and the field.
pub fn check_columns(table: &Table, found: &[Found], d: Dialect) -> Result<(), String> {
    for (i, want) in table.columns.iter().enumerate() {
        let Some(got) = found.get(i) else {
            return Err(format!(
                "table {}: field {} is missing",
                table.name, want.name
            ));
        };
        if got.name != want.name {
            return Err(format!(
                "table {}: field {} where {} belongs",
                table.name,
                crate::text::escape::escape_text(&got.name),
                want.name
            ));
        }
        if !got.kind.eq_ignore_ascii_case(want.kind.reported(d)) {
            return Err(format!(
                "table {}: field {} is of type {}, not {}",
                table.name,
                want.name,
                crate::text::escape::escape_text(&got.kind),
                want.kind.reported(d)
            ));
        }
        // An id is NOT NULL in PostgreSQL and may read either way in SQLite.
        if !want.null && got.null && want.kind != Kind::Id {
            return Err(format!(
                "table {}: field {} may be NULL, and tally's never is",
                table.name, want.name
            ));
        }
    }
    if let Some(extra) = found.get(table.columns.len()) {
        return Err(format!(
            "table {}: field {} is not tally's",
            table.name,
            crate::text::escape::escape_text(&extra.name)
        ));
    }
    Ok(())
}

/// One step of a store from one schema version to the next: the tables it
/// makes, then the statements, run in the transaction that records the
/// new version.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    pub from: i64,
    /// Tables of [`TABLES`] made by this step, as [`table_ddl`] makes them.
    pub creates: &'static [&'static str],
    /// Statements, each with `{p}` where the table prefix goes.
    pub statements: &'static [&'static str],
}

impl Migration {
    /// Every statement of this step in dialect `d`, `{p}` left for the
    /// backend to fill.
    pub fn sql(&self, d: Dialect) -> Vec<String> {
        let made = self.creates.iter().filter_map(|name| {
            TABLES
                .iter()
                .find(|t| t.name == *name)
                .map(|t| table_ddl(t, d, "{p}"))
        });
        made.chain(self.statements.iter().map(|s| s.to_string()))
            .collect()
    }
}

/// Every step from an older schema to [`SCHEMA_VERSION`]; a store of
/// version `v` is stepped through each migration whose `from` is `v`,
/// `v + 1`, … in one transaction.
pub const MIGRATIONS: &[Migration] = &[Migration {
    // Version 2: packs, for reading long histories (nothing packed yet:
    // the next recording packs what is due).
    from: 1,
    creates: &["packs"],
    statements: &["INSERT INTO {p}meta (key, value) VALUES ('packed_through', '0')"],
}];

/// The migrations that take a store from `version` to `target`, or why
/// none can: a newer store, or a missing step.
pub fn steps(
    version: i64,
    target: i64,
    migrations: &'static [Migration],
) -> Result<Vec<&'static Migration>, String> {
    if version > target {
        return Err(format!(
            "its schema is version {version}, newer than this tally's ({target}): use a newer tally"
        ));
    }
    let mut out = Vec::new();
    for v in version..target {
        let Some(m) = migrations.iter().find(|m| m.from == v) else {
            return Err(format!(
                "its schema is version {version}, and this tally has no step from version {v}"
            ));
        };
        out.push(m);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_dialects_make_every_table_and_index() {
        for d in [Dialect::Sqlite, Dialect::Postgres] {
            let sql = ddl(d, if d == Dialect::Postgres { "s." } else { "" });
            assert_eq!(sql.len(), TABLES.len() + INDEXES.len());
            assert!(sql[5].contains("PRIMARY KEY (series_id, first_point_id)"));
            assert!(
                sql[4].contains("PRIMARY KEY (series_id, point_id)"),
                "{}",
                sql[4]
            );
        }
        let pg = ddl(Dialect::Postgres, "tally_history.");
        assert!(
            pg[2].contains("REFERENCES tally_history.machines (id)"),
            "{}",
            pg[2]
        );
        assert!(pg[6].starts_with("CREATE INDEX points_by_time ON tally_history.points"));
    }

    fn reported(t: &Table, d: Dialect) -> Vec<Found> {
        t.columns
            .iter()
            .map(|c| Found {
                name: c.name.into(),
                kind: c.kind.reported(d).into(),
                null: c.null,
            })
            .collect()
    }

    #[test]
    fn columns_are_checked_by_name_type_and_null() {
        let t = &TABLES[4];
        let d = Dialect::Sqlite;
        assert_eq!(check_columns(t, &reported(t, d), d), Ok(()));
        let mut wrong = reported(t, d);
        wrong[3].kind = "TEXT".into();
        assert_eq!(
            check_columns(t, &wrong, d),
            Err("table results: field median is of type TEXT, not REAL".into())
        );
        let mut extra = reported(t, d);
        extra.push(Found {
            name: "evil\u{1b}[31m".into(),
            kind: "TEXT".into(),
            null: true,
        });
        assert_eq!(
            check_columns(t, &extra, d),
            Err("table results: field evil\\x1b[31m is not tally's".into())
        );
        let short = &reported(t, d)[..2];
        assert_eq!(
            check_columns(t, short, d),
            Err("table results: field n is missing".into())
        );
    }

    static STEP: &[Migration] = &[
        Migration {
            from: 1,
            creates: &[],
            statements: &["ALTER TABLE {p}points ADD COLUMN note TEXT"],
        },
        Migration {
            from: 2,
            creates: &["packs"],
            statements: &[],
        },
    ];

    #[test]
    fn migrations_step_up_one_version_at_a_time() {
        assert_eq!(steps(1, 1, STEP).map(|v| v.len()), Ok(0));
        assert_eq!(steps(1, 3, STEP).map(|v| v.len()), Ok(2));
        assert!(
            steps(4, 3, STEP)
                .unwrap_err()
                .contains("newer than this tally's")
        );
        assert!(
            steps(0, 3, STEP)
                .unwrap_err()
                .contains("no step from version 0")
        );
        assert!(steps(SCHEMA_VERSION, SCHEMA_VERSION, MIGRATIONS).is_ok());
        assert_eq!(steps(1, SCHEMA_VERSION, MIGRATIONS).map(|v| v.len()), Ok(1));
        let sql = STEP[1].sql(Dialect::Postgres);
        assert!(
            sql[0].starts_with("CREATE TABLE {p}packs (series_id BIGINT NOT NULL"),
            "{sql:?}"
        );
        assert!(sql[0].contains("REFERENCES {p}series (id)"), "{sql:?}");
    }
}
