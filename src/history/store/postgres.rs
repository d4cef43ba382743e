//! A history store in a PostgreSQL database, for teams whose runners are
//! many machines: the same tables as the SQLite store, in a schema of
//! their own (`tally_history`, so a shared database's other tables are
//! not tally's business), reached by URL with TLS as libpq does it
//! (`tls`).
//!
//! The URL is libpq's (`postgres://user:password@host:port/db?sslmode=…`);
//! where it leaves something out, libpq's environment fills it
//! (`PGUSER`, `PGPASSWORD`, `PGSSLMODE`, `PGSSLROOTCERT`), then the
//! defaults (the login name, `sslmode=prefer`). Every wait is bounded: 10
//! s to connect, 120 s a statement, 60 s for a lock.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use super::schema::{self, Dialect};
use super::tls::{self, Roots, SslMode};
use super::{
    Backend, Fault, Machine, MachineRow, Mode, PointMeta, PointRow, Prepare, Query, Recording,
    ResultRow, SeriesRow, check,
    pack::{self, PackRow},
};

/// The schema (namespace) tally's tables live in.
pub const NAMESPACE: &str = "tally_history";
const P: &str = "tally_history.";

/// The advisory lock between recordings (shared) and packing (alone):
/// packing waits for every recording under way and holds off new ones.
const PACKING_LOCK: i64 = 0x7461_6c6c_7970_6b00; // "tallypk"

/// A PostgreSQL URL: what tokio-postgres reads, and the TLS settings it
/// does not (libpq's names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// The URL less `sslmode`, `sslrootcert`.
    rest: String,
    shown: String,
    sslmode: Option<SslMode>,
    sslrootcert: Option<String>,
}

impl Url {
    /// Reads a URL and checks tokio-postgres can (no system call).
    pub fn parse(text: &str) -> Result<Url, String> {
        let (base, query) = text.split_once('?').unwrap_or((text, ""));
        let mut kept = Vec::new();
        let mut sslmode = None;
        let mut sslrootcert = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decode(v);
            match k {
                "sslmode" => {
                    sslmode = Some(SslMode::parse(&value).ok_or_else(|| {
                        format!(
                            "the PostgreSQL URL: sslmode {} is not one of disable, allow, prefer, \
                             require, verify-ca, verify-full",
                            crate::text::escape::escape_text(&value)
                        )
                    })?);
                }
                "sslrootcert" => sslrootcert = Some(value),
                "sslcert" | "sslkey" | "sslpassword" | "sslcrl" => {
                    return Err(format!(
                        "the PostgreSQL URL: {k} is not supported (client certificates): \
                         authenticate with a password, or through a local socket"
                    ));
                }
                _ => kept.push(pair),
            }
        }
        let rest = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        rest.parse::<postgres::Config>()
            .map_err(|e| format!("the PostgreSQL URL: {e}"))?;
        Ok(Url {
            shown: without_password(text),
            rest,
            sslmode,
            sslrootcert,
        })
    }

    /// The URL as messages show it: the password replaced by `…`.
    pub fn shown(&self) -> String {
        self.shown.clone()
    }
}

fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return crate::text::escape::escape_text(url);
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let shown = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:…@{host}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    crate::text::escape::escape_text(&format!("{scheme}://{shown}{tail}"))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(h) = b.get(i + 1..i + 3)
            && let Ok(v) = u8::from_str_radix(std::str::from_utf8(h).unwrap_or("zz"), 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub struct Postgres {
    client: postgres::Client,
}

impl Postgres {
    /// Connects; to write, makes tally's schema if it can.
    pub fn open(url: &Url, mode: Mode) -> Result<Postgres, Fault> {
        let mut config: postgres::Config = url
            .rest
            .parse()
            .map_err(|e| Fault::Refused(format!("the URL: {e}")))?;
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        if config.get_user().is_none() {
            let user = env("PGUSER")
                .or_else(|| env("USER"))
                .or_else(|| env("LOGNAME"))
                .ok_or_else(|| {
                    Fault::Refused(
                        "no user: name one in the URL (postgres://USER@host/db) or in PGUSER"
                            .into(),
                    )
                })?;
            config.user(&user);
        }
        if config.get_password().is_none()
            && let Some(p) = env("PGPASSWORD")
        {
            config.password(p);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        config.tcp_user_timeout(Duration::from_secs(60));
        config.application_name("tally");
        let mode_tls = url
            .sslmode
            .or_else(|| env("PGSSLMODE").and_then(|m| SslMode::parse(&m)))
            .unwrap_or(SslMode::Prefer);
        config.ssl_mode(mode_tls.negotiation());
        let roots = roots(url.sslrootcert.clone().or_else(|| env("PGSSLROOTCERT")));
        let connector = tls::connector(mode_tls, &roots).map_err(Fault::Refused)?;
        let mut client = config
            .connect(connector)
            .map_err(|e| Fault::Unreachable(chain(&e)))?;
        client
            .batch_execute("SET statement_timeout = '120s'; SET lock_timeout = '60s'")
            .map_err(|e| fault(&e, None))?;
        let mut me = Postgres { client };
        if mode == Mode::Write {
            let ro: String = me
                .client
                .query_one("SHOW transaction_read_only", &[])
                .and_then(|r| r.try_get(0))
                .map_err(|e| fault(&e, None))?;
            if ro == "on" {
                return Err(Fault::ReadOnly(
                    "the server takes no writes (a standby, or default_transaction_read_only): \
                     record into the primary"
                        .into(),
                ));
            }
        }
        Ok(me)
    }
}

/// The root certificates: as given, `system`, or `~/.postgresql/root.crt`
/// where it exists (as libpq).
fn roots(given: Option<String>) -> Roots {
    match given.as_deref() {
        Some("system") => Roots::System,
        Some(path) => Roots::File(PathBuf::from(path)),
        None => std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join(".postgresql/root.crt"))
            .filter(|p| p.is_file())
            .map_or(Roots::None, Roots::File),
    }
}

/// An error with every cause after it (tokio-postgres's own text is "error
/// connecting to server", its source says why).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    crate::text::escape::escape_text(&out)
}

/// A PostgreSQL error as a [`Fault`], by its SQLSTATE.
fn fault(e: &postgres::Error, table: Option<&str>) -> Fault {
    let at = table.map(|t| format!("table {t}: ")).unwrap_or_default();
    let Some(db) = e.as_db_error() else {
        return if e.is_closed() {
            Fault::Unreachable(format!("{at}the connection closed: {}", chain(e)))
        } else {
            Fault::Failed(format!("{at}{}", chain(e)))
        };
    };
    let code = db.code().code();
    let text = crate::text::escape::escape_text(db.message());
    match code {
        // insufficient_privilege, read_only_sql_transaction
        "42501" | "25006" => Fault::ReadOnly(format!(
            "{at}{text}: grant this user the right, or use another store"
        )),
        // lock_not_available, query_canceled (statement timeout)
        "55P03" | "57014" => Fault::Unreachable(format!(
            "{at}{text}: another writer held it too long; try again"
        )),
        // data_corrupted, index_corrupted
        "XX001" | "XX002" => Fault::Damaged(format!("{at}{text}")),
        // unique_violation, foreign_key_violation, not_null_violation
        "23505" | "23503" | "23502" => Fault::Refused(format!("{at}{text}")),
        c if c.starts_with("08") || c.starts_with("57") || c.starts_with("53") => {
            Fault::Unreachable(format!("{at}{text}"))
        }
        _ => Fault::Failed(format!("{at}{text} (SQLSTATE {code})")),
    }
}

impl Postgres {
    fn in_transaction<T>(
        &mut self,
        f: impl FnOnce(&mut Postgres) -> Result<T, Fault>,
    ) -> Result<T, Fault> {
        self.client
            .batch_execute("BEGIN")
            .map_err(|e| fault(&e, None))?;
        match f(self) {
            Ok(v) => {
                self.client
                    .batch_execute("COMMIT")
                    .map_err(|e| fault(&e, None))?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.client.batch_execute("ROLLBACK");
                Err(e)
            }
        }
    }

    fn write_one(
        &mut self,
        r: &Recording,
        series: &mut HashMap<(String, String), i64>,
    ) -> Result<(), Fault> {
        let m = &r.machine;
        let c = &mut self.client;
        c.execute(
            &format!(
                "INSERT INTO {P}machines (fingerprint, cpu_model, cpus, kernel, counting, counting_version) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (fingerprint) DO NOTHING"
            ),
            &[&m.fingerprint, &m.cpu_model, &m.cpus, &m.kernel, &m.counting, &m.counting_version],
        )
        .map_err(|e| fault(&e, Some("machines")))?;
        let machine: i64 = c
            .query_one(
                &format!("SELECT id FROM {P}machines WHERE fingerprint = $1"),
                &[&m.fingerprint],
            )
            .and_then(|row| row.try_get(0))
            .map_err(|e| fault(&e, Some("machines")))?;
        let p = &r.point;
        let point: i64 = c
            .query_one(
                &format!(
                    "INSERT INTO {P}points (recorded_at_ns, commit_id, dirty, branch, tool, machine_id, \
                     tally_version, origin) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id"
                ),
                &[
                    &p.recorded_at_ns,
                    &p.commit,
                    &i64::from(p.dirty),
                    &p.branch,
                    &p.tool,
                    &machine,
                    &p.tally_version,
                    &p.origin,
                ],
            )
            .and_then(|row| row.try_get(0))
            .map_err(|e| fault(&e, Some("points")))?;
        let insert = self
            .client
            .prepare(&format!(
                "INSERT INTO {P}results (series_id, point_id, n, median, mad, min, max, samples) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
            ))
            .map_err(|e| fault(&e, Some("results")))?;
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
            let n = i64::try_from(f.n).unwrap_or(i64::MAX);
            let samples = check::samples_blob(&f.samples);
            self.client
                .execute(
                    &insert,
                    &[&id, &point, &n, &f.median, &f.mad, &f.min, &f.max, &samples],
                )
                .map_err(|e| fault(&e, Some("results")))?;
        }
        Ok(())
    }

    fn series_id(&mut self, command: &str, figure: &str, unit: &str) -> Result<i64, Fault> {
        let c = &mut self.client;
        c.execute(
            &format!(
                "INSERT INTO {P}series (command, figure, unit) VALUES ($1, $2, $3) \
                 ON CONFLICT (command, figure) DO NOTHING"
            ),
            &[&command, &figure, &unit],
        )
        .map_err(|e| fault(&e, Some("series")))?;
        let row = c
            .query_one(
                &format!("SELECT id, unit FROM {P}series WHERE command = $1 AND figure = $2"),
                &[&command, &figure],
            )
            .map_err(|e| fault(&e, Some("series")))?;
        let id: i64 = row.try_get(0).map_err(|e| fault(&e, Some("series")))?;
        let had: String = row.try_get(1).map_err(|e| fault(&e, Some("series")))?;
        super::same_unit(command, figure, &had, unit)?;
        Ok(id)
    }

    /// Streams the rows of `sql`, each handed to `each`.
    fn rows(
        &mut self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
        table: &str,
        each: &mut dyn FnMut(&postgres::Row) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        use postgres::fallible_iterator::FallibleIterator;
        let mut it = self
            .client
            .query_raw(sql, params.iter().copied())
            .map_err(|e| fault(&e, Some(table)))?;
        while let Some(row) = it.next().map_err(|e| fault(&e, Some(table)))? {
            each(&row)?;
        }
        Ok(())
    }
}

/// A field of a row, or damage named by table and field.
fn get<'a, T: postgres::types::FromSql<'a>>(
    row: &'a postgres::Row,
    i: usize,
    table: &str,
    field: &str,
) -> Result<T, Fault> {
    row.try_get(i)
        .map_err(|e| Fault::Damaged(format!("table {table}: field {field}: {}", chain(&e))))
}

impl Backend for Postgres {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn objects(&mut self) -> Result<Vec<(String, String)>, Fault> {
        let sql = "SELECT CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'table' \
                   WHEN 'v' THEN 'view' WHEN 'm' THEN 'view' WHEN 'i' THEN 'index' \
                   WHEN 'I' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 'f' THEN 'foreign table' \
                   ELSE 'relation' END, c.relname::text \
                   FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 \
                   UNION ALL SELECT 'trigger', t.tgname::text FROM pg_trigger t \
                   JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
                   WHERE n.nspname = $1 AND NOT t.tgisinternal \
                   UNION ALL SELECT 'rule', r.rulename::text FROM pg_rewrite r \
                   JOIN pg_class c ON c.oid = r.ev_class JOIN pg_namespace n ON n.oid = c.relnamespace \
                   WHERE n.nspname = $1 AND r.rulename <> '_RETURN' \
                   UNION ALL SELECT 'function', p.proname::text FROM pg_proc p \
                   JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 \
                   LIMIT 10001";
        let mut out = Vec::new();
        self.rows(sql, &[&NAMESPACE], "pg_class", &mut |r| {
            out.push((
                get(r, 0, "pg_class", "relkind")?,
                get(r, 1, "pg_class", "relname")?,
            ));
            Ok(())
        })?;
        if out.len() > 10_000 {
            return Err(Fault::Foreign("it holds over 10,000 tables".into()));
        }
        Ok(out)
    }

    fn columns(&mut self, table: &str) -> Result<Vec<schema::Found>, Fault> {
        let sql = "SELECT column_name::text, data_type::text, is_nullable::text FROM information_schema.columns \
                   WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position LIMIT 1000";
        let mut out = Vec::new();
        self.rows(sql, &[&NAMESPACE, &table], table, &mut |r| {
            out.push(schema::Found {
                name: get(r, 0, table, "column_name")?,
                kind: get(r, 1, table, "data_type")?,
                null: get::<String>(r, 2, table, "is_nullable")? == "YES",
            });
            Ok(())
        })?;
        Ok(out)
    }

    fn meta(&mut self) -> Result<Vec<(String, String)>, Fault> {
        let mut out = Vec::new();
        self.rows(
            &format!("SELECT key, value FROM {P}meta LIMIT 1000"),
            &[],
            "meta",
            &mut |r| {
                out.push((get(r, 0, "meta", "key")?, get(r, 1, "meta", "value")?));
                Ok(())
            },
        )?;
        Ok(out)
    }

    fn prepare(
        &mut self,
        plan: &dyn Fn(&mut dyn Backend) -> Result<Prepare, Fault>,
    ) -> Result<(), Fault> {
        self.in_transaction(|me| {
            // One writer at a time makes or steps up the schema.
            me.client
                .batch_execute("SELECT pg_advisory_xact_lock(7306228)")
                .map_err(|e| fault(&e, None))?;
            // Made only where missing: a user who may write the tables but
            // not make schemas needs no right it does not use.
            let exists = me
                .client
                .query_opt(
                    "SELECT 1 FROM pg_namespace WHERE nspname = $1",
                    &[&NAMESPACE],
                )
                .map_err(|e| fault(&e, None))?
                .is_some();
            if !exists {
                me.client
                    .batch_execute(&format!("CREATE SCHEMA {NAMESPACE}"))
                    .map_err(|e| fault(&e, None))?;
            }
            match plan(me)? {
                Prepare::Ready => me.writable(),
                Prepare::Create => {
                    let mut sql = schema::ddl(Dialect::Postgres, P);
                    sql.push(schema::meta_start(P));
                    me.execute(&sql)
                }
                Prepare::Migrate(mut sql) => {
                    sql.push(format!(
                        "UPDATE {P}meta SET value = '{}' WHERE key = 'schema_version'",
                        schema::SCHEMA_VERSION
                    ));
                    me.execute(&sql)
                }
            }
        })
    }

    fn execute(&mut self, statements: &[String]) -> Result<(), Fault> {
        for s in statements {
            self.client
                .batch_execute(&s.replace("{p}", P))
                .map_err(|e| fault(&e, None))?;
        }
        Ok(())
    }

    fn write(&mut self, recordings: &[Recording]) -> Result<(), Fault> {
        self.in_transaction(|me| {
            // Shared: recordings run side by side; packing waits for them.
            me.client
                .execute("SELECT pg_advisory_xact_lock_shared($1)", &[&PACKING_LOCK])
                .map_err(|e| fault(&e, None))?;
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
        let t = "machines";
        let sql = format!(
            "SELECT id, fingerprint, cpu_model, cpus, kernel, counting, counting_version FROM {P}machines"
        );
        self.rows(&sql, &[], t, &mut |r| {
            each(MachineRow {
                id: get(r, 0, t, "id")?,
                machine: Machine {
                    fingerprint: get(r, 1, t, "fingerprint")?,
                    cpu_model: get(r, 2, t, "cpu_model")?,
                    cpus: get(r, 3, t, "cpus")?,
                    kernel: get(r, 4, t, "kernel")?,
                    counting: get(r, 5, t, "counting")?,
                    counting_version: get(r, 6, t, "counting_version")?,
                },
            })
        })
    }

    fn points(
        &mut self,
        q: &Query,
        each: &mut dyn FnMut(PointRow) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        let t = "points";
        let sql = format!(
            "SELECT id, recorded_at_ns, commit_id, dirty, branch, tool, machine_id, tally_version, origin \
             FROM {P}points WHERE recorded_at_ns >= $1"
        );
        let since = q.since_ns.unwrap_or(i64::MIN);
        self.rows(&sql, &[&since], t, &mut |r| {
            let id: i64 = get(r, 0, t, "id")?;
            let dirty: i64 = get(r, 3, t, "dirty")?;
            if dirty != 0 && dirty != 1 {
                return Err(Fault::Damaged(format!(
                    "table points: field dirty of point {id} is {dirty}, not 0 or 1"
                )));
            }
            each(PointRow {
                id,
                meta: PointMeta {
                    recorded_at_ns: get(r, 1, t, "recorded_at_ns")?,
                    commit: get(r, 2, t, "commit_id")?,
                    dirty: dirty == 1,
                    branch: get(r, 4, t, "branch")?,
                    tool: get(r, 5, t, "tool")?,
                    tally_version: get(r, 7, t, "tally_version")?,
                    origin: get(r, 8, t, "origin")?,
                },
                machine_id: get(r, 6, t, "machine_id")?,
            })
        })
    }

    fn series(
        &mut self,
        each: &mut dyn FnMut(SeriesRow) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        let t = "series";
        let sql = format!("SELECT id, command, figure, unit FROM {P}series");
        self.rows(&sql, &[], t, &mut |r| {
            each(SeriesRow {
                id: get(r, 0, t, "id")?,
                command: get(r, 1, t, "command")?,
                figure: get(r, 2, t, "figure")?,
                unit: get(r, 3, t, "unit")?,
            })
        })
    }

    fn results(
        &mut self,
        q: &Query,
        each: &mut dyn FnMut(ResultRow) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        let t = "results";
        let columns =
            format!("SELECT series_id, point_id, n, median, mad, min, max FROM {P}results");
        let mut one = |r: &postgres::Row| -> Result<(), Fault> {
            let n: i64 = get(r, 2, t, "n")?;
            each(ResultRow {
                series_id: get(r, 0, t, "series_id")?,
                point_id: get(r, 1, t, "point_id")?,
                n: u64::try_from(n).unwrap_or(0),
                median: get(r, 3, t, "median")?,
                mad: get(r, 4, t, "mad")?,
                min: get(r, 5, t, "min")?,
                max: get(r, 6, t, "max")?,
            })
        };
        match &q.series {
            None => self.rows(&format!("{columns} ORDER BY series_id"), &[], t, &mut one),
            Some(ids) => {
                let from = q.from_point.unwrap_or(i64::MIN);
                let to = q.to_point.unwrap_or(i64::MAX);
                let sql = format!(
                    "{columns} WHERE series_id = ANY($1) AND point_id >= $2 AND point_id <= $3 \
                     ORDER BY series_id, point_id"
                );
                self.rows(&sql, &[ids, &from, &to], t, &mut one)
            }
        }
    }

    fn begin_read(&mut self) -> Result<(), Fault> {
        self.client
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .map_err(|e| fault(&e, None))
    }

    fn end_read(&mut self) -> Result<(), Fault> {
        self.client
            .batch_execute("COMMIT")
            .map_err(|e| fault(&e, None))
    }

    fn newest_point(&mut self) -> Result<i64, Fault> {
        self.client
            .query_one(&format!("SELECT COALESCE(MAX(id), 0) FROM {P}points"), &[])
            .and_then(|r| r.try_get(0))
            .map_err(|e| fault(&e, Some("points")))
    }

    fn packs(
        &mut self,
        series_id: i64,
        from_point: i64,
        each: &mut dyn FnMut(PackRow) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        let t = "packs";
        let sql = format!(
            "SELECT series_id, first_point_id, last_point_id, count, octet_length(data)::bigint, \
             CASE WHEN octet_length(data) <= $3::bigint THEN data END FROM {P}packs \
             WHERE series_id = $1 AND last_point_id >= $2 ORDER BY first_point_id"
        );
        let most = pack::MAX_DATA;
        self.rows(&sql, &[&series_id, &from_point, &most], t, &mut |r| {
            let row = PackRow {
                series_id: get(r, 0, t, "series_id")?,
                first_point_id: get(r, 1, t, "first_point_id")?,
                last_point_id: get(r, 2, t, "last_point_id")?,
                count: get(r, 3, t, "count")?,
                data: get::<Option<Vec<u8>>>(r, 5, t, "data")?.unwrap_or_default(),
            };
            let len: i64 = get(r, 4, t, "data")?;
            if len > most {
                return Err(pack::oversized(row.series_id, row.first_point_id, len));
            }
            each(row)
        })
    }

    fn alone(
        &mut self,
        f: &mut dyn FnMut(&mut dyn Backend) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        self.in_transaction(|me| {
            // Exclusive: waits (up to lock_timeout) for the recordings
            // under way, whose shared hold ends at their commit.
            me.client
                .execute("SELECT pg_advisory_xact_lock($1)", &[&PACKING_LOCK])
                .map_err(|e| fault(&e, None))?;
            f(me)
        })
    }

    fn add_packs(&mut self, packs: &[PackRow], through: i64) -> Result<(), Fault> {
        let insert = self
            .client
            .prepare(&format!(
                "INSERT INTO {P}packs (series_id, first_point_id, last_point_id, count, data) \
                 VALUES ($1, $2, $3, $4, $5)"
            ))
            .map_err(|e| fault(&e, Some("packs")))?;
        for p in packs {
            self.client
                .execute(
                    &insert,
                    &[
                        &p.series_id,
                        &p.first_point_id,
                        &p.last_point_id,
                        &p.count,
                        &p.data,
                    ],
                )
                .map_err(|e| fault(&e, Some("packs")))?;
        }
        self.client
            .execute(
                &format!("UPDATE {P}meta SET value = $1 WHERE key = $2"),
                &[&through.to_string(), &pack::THROUGH],
            )
            .map_err(|e| fault(&e, Some("meta")))?;
        Ok(())
    }
}

impl Postgres {
    /// A current store this user may not write is said before any run.
    fn writable(&mut self) -> Result<(), Fault> {
        for table in ["points", "results", "series", "machines", "packs"] {
            let may: bool = self
                .client
                .query_one(
                    "SELECT has_table_privilege($1, 'INSERT')",
                    &[&format!("{P}{table}")],
                )
                .and_then(|r| r.try_get(0))
                .map_err(|e| fault(&e, Some(table)))?;
            if !may {
                return Err(Fault::ReadOnly(format!(
                    "this user may not insert into {P}{table}: GRANT INSERT ON ALL TABLES IN SCHEMA \
                     {NAMESPACE} (and USAGE on its sequences) to it"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_keep_libpq_tls_settings_and_hide_the_password() {
        let u = Url::parse("postgres://ci:s3cret@db.example:5433/perf?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&application_name=x").unwrap();
        assert_eq!(u.sslmode, Some(SslMode::VerifyFull));
        assert_eq!(u.sslrootcert.as_deref(), Some("/etc/ca.pem"));
        assert_eq!(
            u.rest,
            "postgres://ci:s3cret@db.example:5433/perf?application_name=x"
        );
        assert_eq!(
            u.shown(),
            "postgres://ci:…@db.example:5433/perf?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&application_name=x"
        );
        assert!(!u.shown().contains("s3cret"));
        let e = Url::parse("postgres://h/db?sslmode=maybe").unwrap_err();
        assert!(e.contains("sslmode maybe is not one of"), "{e}");
        let e = Url::parse("postgres://h/db?sslcert=c.pem").unwrap_err();
        assert!(e.contains("client certificates"), "{e}");
        let e = Url::parse("postgres://h/db?frobnicate=1").unwrap_err();
        assert!(e.starts_with("the PostgreSQL URL: "), "{e}");
        assert_eq!(
            Url::parse("postgresql://127.0.0.1:5432/t").unwrap().shown(),
            "postgresql://127.0.0.1:5432/t"
        );
    }
}
