//! A history store in one SQLite file (SQLite itself is bundled into the
//! static binary). The file is made, when missing, by the one opener
//! ([`crate::place::open_append`]: planted links refused, never replaced,
//! a read-only place said before any run); SQLite then opens the path the
//! opener resolved, with `SQLITE_OPEN_NOFOLLOW`.
//!
//! Concurrent writers: the store is in WAL mode (readers never wait), each
//! recording is one `BEGIN IMMEDIATE` transaction, and a writer waits up to
//! [`BUSY_TIMEOUT`] for another's. A crafted file is opened defensively:
//! `trusted_schema` off (no function with side effects runs from the
//! schema), `SQLITE_DBCONFIG_DEFENSIVE` on (the schema cannot be written
//! by SQL), cell sizes checked as pages are read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, params};

use super::schema::{self, Dialect};
use super::{
    Backend, Fault, MachineRow, Mode, PointMeta, PointRow, Prepare, Query, Recording, ResultRow,
    SeriesRow, check,
    pack::{self, PackRow},
};
use crate::text::path::display;

/// How long a writer waits for another's transaction.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// The environment variable that sets another wait, in milliseconds (1
/// to 3,600,000), for a CI that would rather keep a side file than wait.
pub const BUSY_VAR: &str = "TALLY_HISTORY_BUSY_MS";

/// The wait for another writer: [`BUSY_VAR`] where it is a number in
/// range, else [`BUSY_TIMEOUT`].
pub fn busy_timeout() -> Duration {
    std::env::var(BUSY_VAR)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|ms| (1..=3_600_000).contains(ms))
        .map_or(BUSY_TIMEOUT, Duration::from_millis)
}

pub struct Sqlite {
    conn: Connection,
    path: PathBuf,
}

impl Sqlite {
    /// Opens the store at `path`: to read, it must exist; to write, it is
    /// made if missing and must be writable, with its directory (SQLite
    /// keeps `-wal` and `-shm` files beside it).
    pub fn open(path: &Path, mode: Mode) -> Result<Sqlite, Fault> {
        let dest = crate::place::resolve(path).map_err(|e| Fault::Unreachable(e.to_string()))?;
        match dest.existing {
            crate::place::Existing::Dir => {
                return Err(Fault::Refused("it is a directory: give a file".into()));
            }
            crate::place::Existing::Special => {
                return Err(Fault::Refused(
                    "it is a device, FIFO or socket: give a regular file".into(),
                ));
            }
            crate::place::Existing::Nothing if mode == Mode::Read => return Err(Fault::Missing),
            _ => {}
        }
        let mut flags = OpenFlags::SQLITE_OPEN_NOFOLLOW | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if mode == Mode::Write {
            let (_file, regular) =
                crate::place::open_append(path).map_err(|e| Fault::ReadOnly(e.to_string()))?;
            if !regular {
                return Err(Fault::Refused("it is not a regular file".into()));
            }
            flags |= OpenFlags::SQLITE_OPEN_READ_WRITE;
        } else {
            flags |= OpenFlags::SQLITE_OPEN_READ_ONLY;
        }
        let conn = Connection::open_with_flags(&dest.path, flags).map_err(|e| fault(e, None))?;
        let mut me = Sqlite {
            conn,
            path: dest.path,
        };
        me.configure(mode)?;
        Ok(me)
    }

    fn configure(&mut self, mode: Mode) -> Result<(), Fault> {
        use rusqlite::config::DbConfig;
        let c = &self.conn;
        c.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)
            .map_err(|e| fault(e, None))?;
        c.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)
            .map_err(|e| fault(e, None))?;
        c.busy_timeout(busy_timeout()).map_err(|e| fault(e, None))?;
        c.execute_batch("PRAGMA cell_size_check = ON; PRAGMA foreign_keys = ON;")
            .map_err(|e| fault(e, None))?;
        if mode == Mode::Write {
            // WAL is kept in the file: set once, every later open finds it.
            let journal: String = c
                .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
                .map_err(|e| writing(e, &self.path))?;
            if !journal.eq_ignore_ascii_case("wal") {
                return Err(Fault::ReadOnly(format!(
                    "SQLite kept journal mode {journal} where WAL was asked: the file system \
                     may not support it"
                )));
            }
            c.execute_batch("PRAGMA synchronous = FULL;")
                .map_err(|e| fault(e, None))?;
        }
        Ok(())
    }
}

/// A SQLite error as a [`Fault`], `table` naming what was being read.
fn fault(e: rusqlite::Error, table: Option<&str>) -> Fault {
    use rusqlite::ErrorCode as C;
    let at = table.map(|t| format!("table {t}: ")).unwrap_or_default();
    match &e {
        rusqlite::Error::SqliteFailure(f, _) => match f.code {
            C::NotADatabase => Fault::Foreign("it is not a SQLite database".into()),
            C::DatabaseCorrupt => Fault::Damaged(format!("{at}{e}")),
            C::DatabaseBusy | C::DatabaseLocked => Fault::Unreachable(format!(
                "another writer held it for {} ms: try again",
                busy_timeout().as_millis()
            )),
            C::ReadOnly => Fault::ReadOnly(format!(
                "{e}: check the file and its directory are writable"
            )),
            C::CannotOpen | C::PermissionDenied => Fault::Unreachable(format!("{e}")),
            C::DiskFull => Fault::Failed(format!("{at}the disk is full: free space and try again")),
            C::SystemIoFailure => Fault::Failed(format!("{at}{e}")),
            C::ConstraintViolation => Fault::Refused(format!("{at}{e}")),
            _ => Fault::Failed(format!("{at}{e}")),
        },
        rusqlite::Error::InvalidColumnType(_, name, ty) => Fault::Damaged(format!(
            "{at}field {name} holds {}, not what tally writes there",
            ty.to_string().to_lowercase()
        )),
        rusqlite::Error::IntegralValueOutOfRange(_, v) => {
            Fault::Damaged(format!("{at}a field holds {v}, out of range"))
        }
        _ => Fault::Failed(format!("{at}{e}")),
    }
}

/// An error while starting to write: a read-only place is said as such.
fn writing(e: rusqlite::Error, path: &Path) -> Fault {
    match fault(e, None) {
        Fault::ReadOnly(why) | Fault::Unreachable(why) => Fault::ReadOnly(format!(
            "{why} (SQLite writes {0}-wal and {0}-shm beside it: its directory must be writable too)",
            display(path)
        )),
        other => other,
    }
}

impl Sqlite {
    fn in_transaction<T>(
        &mut self,
        f: impl FnOnce(&mut Sqlite) -> Result<T, Fault>,
    ) -> Result<T, Fault> {
        let path = self.path.clone();
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| writing(e, &path))?;
        match f(self) {
            Ok(v) => {
                if let Err(e) = self.conn.execute_batch("COMMIT") {
                    let _ = self.conn.execute_batch("ROLLBACK");
                    return Err(writing(e, &path));
                }
                Ok(v)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    fn write_one(
        &mut self,
        r: &Recording,
        series: &mut HashMap<(String, String), i64>,
    ) -> Result<(), Fault> {
        let c = &self.conn;
        let m = &r.machine;
        c.prepare_cached(
            "INSERT INTO machines (fingerprint, cpu_model, cpus, kernel, counting, counting_version) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (fingerprint) DO NOTHING",
        )
        .and_then(|mut s| {
            s.execute(params![m.fingerprint, m.cpu_model, m.cpus, m.kernel, m.counting, m.counting_version])
        })
        .map_err(|e| fault(e, Some("machines")))?;
        let machine: i64 = c
            .prepare_cached("SELECT id FROM machines WHERE fingerprint = ?1")
            .and_then(|mut s| s.query_row(params![m.fingerprint], |row| row.get(0)))
            .map_err(|e| fault(e, Some("machines")))?;
        let p = &r.point;
        let point: i64 = c
            .prepare_cached(
                "INSERT INTO points (recorded_at_ns, commit_id, dirty, branch, tool, machine_id, \
                 tally_version, origin) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING id",
            )
            .and_then(|mut s| {
                s.query_row(
                    params![
                        p.recorded_at_ns,
                        p.commit,
                        i64::from(p.dirty),
                        p.branch,
                        p.tool,
                        machine,
                        p.tally_version,
                        p.origin
                    ],
                    |row| row.get(0),
                )
            })
            .map_err(|e| fault(e, Some("points")))?;
        for f in &r.figures {
            let key = (f.command.clone(), f.figure.clone());
            let id = match series.get(&key) {
                Some(id) => *id,
                None => {
                    let id = self.series_id(&f.command, &f.figure, &f.unit)?;
                    series.insert(key, id);
                    id
                }
            };
            self.conn
                .prepare_cached(
                    "INSERT INTO results (series_id, point_id, n, median, mad, min, max, samples) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        id,
                        point,
                        i64::try_from(f.n).unwrap_or(i64::MAX),
                        f.median,
                        f.mad,
                        f.min,
                        f.max,
                        check::samples_blob(&f.samples)
                    ])
                })
                .map_err(|e| fault(e, Some("results")))?;
        }
        Ok(())
    }

    /// The id of series (command, figure), made if new; a unit other than
    /// the one it was recorded in is refused.
    fn series_id(&mut self, command: &str, figure: &str, unit: &str) -> Result<i64, Fault> {
        let c = &self.conn;
        c.prepare_cached(
            "INSERT INTO series (command, figure, unit) VALUES (?1, ?2, ?3) \
             ON CONFLICT (command, figure) DO NOTHING",
        )
        .and_then(|mut s| s.execute(params![command, figure, unit]))
        .map_err(|e| fault(e, Some("series")))?;
        let (id, had): (i64, String) = c
            .prepare_cached("SELECT id, unit FROM series WHERE command = ?1 AND figure = ?2")
            .and_then(|mut s| s.query_row(params![command, figure], |r| Ok((r.get(0)?, r.get(1)?))))
            .map_err(|e| fault(e, Some("series")))?;
        super::same_unit(command, figure, &had, unit)?;
        Ok(id)
    }
}

impl Backend for Sqlite {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn objects(&mut self) -> Result<Vec<(String, String)>, Fault> {
        let mut s = self
            .conn
            .prepare(
                "SELECT type, name FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
            )
            .map_err(|e| fault(e, Some("sqlite_schema")))?;
        let rows = s
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(|e| fault(e, Some("sqlite_schema")))?;
        let mut out = Vec::new();
        for row in rows {
            out.push(row.map_err(|e| fault(e, Some("sqlite_schema")))?);
            if out.len() > 10_000 {
                return Err(Fault::Foreign("it holds over 10,000 tables".into()));
            }
        }
        Ok(out)
    }

    fn columns(&mut self, table: &str) -> Result<Vec<schema::Found>, Fault> {
        let mut s = self
            .conn
            .prepare("SELECT name, type, \"notnull\" FROM pragma_table_info(?1) ORDER BY cid")
            .map_err(|e| fault(e, Some(table)))?;
        let rows = s
            .query_map([table], |r| {
                Ok(schema::Found {
                    name: r.get(0)?,
                    kind: r.get(1)?,
                    null: r.get::<_, i64>(2)? == 0,
                })
            })
            .map_err(|e| fault(e, Some(table)))?;
        rows.take(1_000)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| fault(e, Some(table)))
    }

    fn meta(&mut self) -> Result<Vec<(String, String)>, Fault> {
        let mut s = self
            .conn
            .prepare("SELECT key, value FROM meta LIMIT 1000")
            .map_err(|e| fault(e, Some("meta")))?;
        let rows = s
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| fault(e, Some("meta")))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| fault(e, Some("meta")))
    }

    fn prepare(
        &mut self,
        plan: &dyn Fn(&mut dyn Backend) -> Result<Prepare, Fault>,
    ) -> Result<(), Fault> {
        self.in_transaction(|me| match plan(me)? {
            Prepare::Ready => Ok(()),
            Prepare::Create => {
                let mut sql = schema::ddl(Dialect::Sqlite, "");
                sql.push(schema::meta_start(""));
                me.execute(&sql)
            }
            Prepare::Migrate(mut sql) => {
                sql.push(format!(
                    "UPDATE meta SET value = '{}' WHERE key = 'schema_version'",
                    schema::SCHEMA_VERSION
                ));
                me.execute(&sql)
            }
        })
    }

    fn execute(&mut self, statements: &[String]) -> Result<(), Fault> {
        for s in statements {
            self.conn
                .execute_batch(&s.replace("{p}", ""))
                .map_err(|e| fault(e, None))?;
        }
        Ok(())
    }

    fn write(&mut self, recordings: &[Recording]) -> Result<(), Fault> {
        self.in_transaction(|me| {
            let mut series = HashMap::new();
            for r in recordings {
                me.write_one(r, &mut series)?;
            }
            Ok(())
        })
    }

    fn machines(
        &mut self,
        each: &mut dyn FnMut(MachineRow) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        let t = Some("machines");
        let mut s = self
            .conn
            .prepare("SELECT id, fingerprint, cpu_model, cpus, kernel, counting, counting_version FROM machines")
            .map_err(|e| fault(e, t))?;
        let mut rows = s.query([]).map_err(|e| fault(e, t))?;
        while let Some(r) = rows.next().map_err(|e| fault(e, t))? {
            let row = (|| {
                Ok(MachineRow {
                    id: r.get(0)?,
                    machine: super::Machine {
                        fingerprint: r.get(1)?,
                        cpu_model: r.get(2)?,
                        cpus: r.get(3)?,
                        kernel: r.get(4)?,
                        counting: r.get(5)?,
                        counting_version: r.get(6)?,
                    },
                })
            })()
            .map_err(|e| fault(e, t))?;
            each(row)?;
        }
        Ok(())
    }

    fn points(
        &mut self,
        q: &Query,
        each: &mut dyn FnMut(PointRow) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        let t = Some("points");
        let mut s = self
            .conn
            .prepare(
                "SELECT id, recorded_at_ns, commit_id, dirty, branch, tool, machine_id, tally_version, \
                 origin FROM points WHERE recorded_at_ns >= ?1",
            )
            .map_err(|e| fault(e, t))?;
        let mut rows = s
            .query([q.since_ns.unwrap_or(i64::MIN)])
            .map_err(|e| fault(e, t))?;
        while let Some(r) = rows.next().map_err(|e| fault(e, t))? {
            let dirty: i64 = r.get(3).map_err(|e| fault(e, t))?;
            let id: i64 = r.get(0).map_err(|e| fault(e, t))?;
            if dirty != 0 && dirty != 1 {
                return Err(Fault::Damaged(format!(
                    "table points: field dirty of point {id} is {dirty}, not 0 or 1"
                )));
            }
            let row = (|| {
                Ok(PointRow {
                    id,
                    meta: PointMeta {
                        recorded_at_ns: r.get(1)?,
                        commit: r.get(2)?,
                        dirty: dirty == 1,
                        branch: r.get(4)?,
                        tool: r.get(5)?,
                        tally_version: r.get(7)?,
                        origin: r.get(8)?,
                    },
                    machine_id: r.get(6)?,
                })
            })()
            .map_err(|e| fault(e, t))?;
            each(row)?;
        }
        Ok(())
    }

    fn series(
        &mut self,
        each: &mut dyn FnMut(SeriesRow) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        let t = Some("series");
        let mut s = self
            .conn
            .prepare("SELECT id, command, figure, unit FROM series")
            .map_err(|e| fault(e, t))?;
        let mut rows = s.query([]).map_err(|e| fault(e, t))?;
        while let Some(r) = rows.next().map_err(|e| fault(e, t))? {
            let row = (|| {
                Ok(SeriesRow {
                    id: r.get(0)?,
                    command: r.get(1)?,
                    figure: r.get(2)?,
                    unit: r.get(3)?,
                })
            })()
            .map_err(|e| fault(e, t))?;
            each(row)?;
        }
        Ok(())
    }

    fn results(
        &mut self,
        q: &Query,
        each: &mut dyn FnMut(ResultRow) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        let t = Some("results");
        let all = [None];
        let some: Vec<Option<i64>> = q.series.iter().flatten().map(|&i| Some(i)).collect();
        let which: &[Option<i64>] = if q.series.is_some() { &some } else { &all };
        const COLUMNS: &str = "SELECT series_id, point_id, n, median, mad, min, max FROM results";
        // In series order: the primary key's, so no sort.
        let sql = if q.series.is_some() {
            format!(
                "{COLUMNS} WHERE series_id = ?1 AND point_id >= ?2 AND point_id <= ?3 \
                 ORDER BY point_id"
            )
        } else {
            format!("{COLUMNS} ORDER BY series_id")
        };
        let from = q.from_point.unwrap_or(i64::MIN);
        let to = q.to_point.unwrap_or(i64::MAX);
        let mut s = self.conn.prepare_cached(&sql).map_err(|e| fault(e, t))?;
        for series in which {
            let mut rows = match series {
                Some(id) => s.query([*id, from, to]),
                None => s.query([]),
            }
            .map_err(|e| fault(e, t))?;
            while let Some(r) = rows.next().map_err(|e| fault(e, t))? {
                let n: i64 = r.get(2).map_err(|e| fault(e, t))?;
                let row = (|| {
                    Ok(ResultRow {
                        series_id: r.get(0)?,
                        point_id: r.get(1)?,
                        n: u64::try_from(n).unwrap_or(0),
                        median: r.get(3)?,
                        mad: r.get(4)?,
                        min: r.get(5)?,
                        max: r.get(6)?,
                    })
                })()
                .map_err(|e| fault(e, t))?;
                each(row)?;
            }
        }
        Ok(())
    }

    fn begin_read(&mut self) -> Result<(), Fault> {
        // Deferred: the first read takes the snapshot (WAL), and the rest
        // of the read sees it.
        self.conn.execute_batch("BEGIN").map_err(|e| fault(e, None))
    }

    fn end_read(&mut self) -> Result<(), Fault> {
        self.conn
            .execute_batch("COMMIT")
            .map_err(|e| fault(e, None))
    }

    fn newest_point(&mut self) -> Result<i64, Fault> {
        self.conn
            .query_row("SELECT COALESCE(MAX(id), 0) FROM points", [], |r| r.get(0))
            .map_err(|e| fault(e, Some("points")))
    }

    fn packs(
        &mut self,
        series_id: i64,
        from_point: i64,
        each: &mut dyn FnMut(PackRow) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        let t = Some("packs");
        let mut s = self
            .conn
            .prepare_cached(
                "SELECT series_id, first_point_id, last_point_id, count, length(data), \
                 CASE WHEN length(data) <= ?3 THEN data END FROM packs \
                 WHERE series_id = ?1 AND last_point_id >= ?2 ORDER BY first_point_id",
            )
            .map_err(|e| fault(e, t))?;
        let mut rows = s
            .query([series_id, from_point, pack::MAX_DATA])
            .map_err(|e| fault(e, t))?;
        while let Some(r) = rows.next().map_err(|e| fault(e, t))? {
            let (row, len) = (|| {
                let data: Option<Vec<u8>> = r.get(5)?;
                let row = PackRow {
                    series_id: r.get(0)?,
                    first_point_id: r.get(1)?,
                    last_point_id: r.get(2)?,
                    count: r.get(3)?,
                    data: data.unwrap_or_default(),
                };
                Ok((row, r.get::<_, i64>(4)?))
            })()
            .map_err(|e| fault(e, t))?;
            if len > pack::MAX_DATA {
                return Err(pack::oversized(row.series_id, row.first_point_id, len));
            }
            each(row)?;
        }
        Ok(())
    }

    fn alone(
        &mut self,
        f: &mut dyn FnMut(&mut dyn Backend) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        // BEGIN IMMEDIATE: one writer at a time, and none is mid-way.
        self.in_transaction(|me| f(me))
    }

    fn add_packs(&mut self, packs: &[PackRow], through: i64) -> Result<(), Fault> {
        let t = Some("packs");
        let mut s = self
            .conn
            .prepare_cached(
                "INSERT INTO packs (series_id, first_point_id, last_point_id, count, data) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .map_err(|e| fault(e, t))?;
        for p in packs {
            s.execute(params![
                p.series_id,
                p.first_point_id,
                p.last_point_id,
                p.count,
                p.data
            ])
            .map_err(|e| fault(e, t))?;
        }
        self.conn
            .execute(
                "UPDATE meta SET value = ?1 WHERE key = ?2",
                params![through.to_string(), pack::THROUGH],
            )
            .map_err(|e| fault(e, Some("meta")))?;
        Ok(())
    }
}
