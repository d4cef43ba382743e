//! The history store: where recorded results are kept, a SQLite file or a
//! PostgreSQL database with one schema ([`schema`]). The backends
//! ([`sqlite`], [`postgres`]) only move rows; what is written, what is
//! checked and what a bad row means is said here, once for both.
//!
//! Safe by construction: a store is checked table by table and column by
//! column before anything is read or written (a foreign table, a trigger,
//! a view or a column of another type is refused, naming it), every value
//! read is validated once at this boundary ([`check`]), a recording is
//! written in one transaction (concurrent writers wait for each other:
//! SQLite's write lock with a busy timeout, PostgreSQL's transactions),
//! and the rows a query may read are bounded.

pub mod check;
pub mod pack;
pub mod postgres;
pub mod schema;
pub mod sqlite;
mod tls;

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use crate::failure::Failure;

/// The most results one query reads (about 24 bytes each in memory).
pub const MAX_RESULTS: usize = 10_000_000;
/// The most points, series and machines one query reads.
pub const MAX_POINTS: usize = 5_000_000;
pub const MAX_SERIES: usize = 1_000_000;
pub const MAX_MACHINES: usize = 100_000;

/// Where a store is: a SQLite file, or a PostgreSQL URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Sqlite(PathBuf),
    Postgres(postgres::Url),
}

impl Target {
    /// Reads STORE: `postgres://…` or `postgresql://…` is PostgreSQL,
    /// anything else a file path. Pure (no system call).
    pub fn parse(store: &OsStr) -> Result<Target, crate::failure::Usage> {
        let bytes = std::os::unix::ffi::OsStrExt::as_bytes(store);
        if bytes.is_empty() {
            return Err(crate::failure::Usage::new(
                "the history store is empty: give a file (history.db) or a postgres:// URL",
            ));
        }
        let lower = String::from_utf8_lossy(&bytes[..bytes.len().min(16)]).to_ascii_lowercase();
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            let text = store.to_str().ok_or_else(|| {
                crate::failure::Usage::new("the PostgreSQL URL is not UTF-8: percent-encode it")
            })?;
            return postgres::Url::parse(text)
                .map(Target::Postgres)
                .map_err(crate::failure::Usage::new);
        }
        Ok(Target::Sqlite(PathBuf::from(OsString::from(store))))
    }

    /// The store as messages name it (a URL without its password).
    pub fn name(&self) -> String {
        match self {
            Target::Sqlite(p) => crate::text::path::display(p),
            Target::Postgres(u) => u.shown(),
        }
    }
}

/// A machine's fingerprint and what makes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Machine {
    /// A short hash of everything below: the key of a machine.
    pub fingerprint: String,
    pub cpu_model: Option<String>,
    pub cpus: Option<i64>,
    pub kernel: Option<String>,
    /// What counted the figures: `clock` for times alone, else the
    /// counting source (`perf`, `cachegrind`, …).
    pub counting: String,
    pub counting_version: Option<String>,
}

/// What identifies a recording.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PointMeta {
    /// When it was recorded (or, imported, when its report was made).
    pub recorded_at_ns: i64,
    pub commit: Option<String>,
    /// The work tree had changes not in the commit.
    pub dirty: bool,
    pub branch: Option<String>,
    /// The command that measured: `run`, `compare`, `bench`, or `import`.
    pub tool: String,
    pub tally_version: String,
    /// Where it came from: `recorded`, or the file it was imported from.
    pub origin: String,
}

/// One figure of one command in a recording: its summary and samples.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FigureResult {
    pub command: String,
    pub figure: String,
    pub unit: String,
    pub n: u64,
    pub median: f64,
    pub mad: f64,
    pub min: f64,
    pub max: f64,
    /// Every sample, where the report kept them; empty where it did not.
    pub samples: Vec<f64>,
}

/// One recording: a point of every series it has a figure of.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Recording {
    pub machine: Machine,
    pub point: PointMeta,
    pub figures: Vec<FigureResult>,
}

/// A machine as read, with its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineRow {
    pub id: i64,
    pub machine: Machine,
}

/// A point as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointRow {
    pub id: i64,
    pub meta: PointMeta,
    pub machine_id: i64,
}

/// A series as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesRow {
    pub id: i64,
    pub command: String,
    pub figure: String,
    pub unit: String,
}

/// A result as read (its samples are not: the analysis needs the
/// summary, and the samples stay in the store).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResultRow {
    pub series_id: i64,
    pub point_id: i64,
    pub n: u64,
    pub median: f64,
    pub mad: f64,
    pub min: f64,
    pub max: f64,
}

/// What a query asks the store for; the rest of the filtering is the
/// caller's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// Only points recorded at or after this (ns since the epoch).
    pub since_ns: Option<i64>,
    /// Only these series (all when `None`).
    pub series: Option<Vec<i64>>,
    /// Only results of points from this id on (set by the read itself,
    /// to the first point `since_ns` keeps: a seek per series, not a scan
    /// of the whole history).
    pub from_point: Option<i64>,
    /// Only results of points up to this id (with `series`).
    pub to_point: Option<i64>,
}

/// A store that could not be used, with the fix. The store's name comes
/// first in every message.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("history store {store}: cannot be reached: {why}")]
    Unreachable { store: String, why: String },
    #[error("history store {store}: cannot be written: {why}")]
    ReadOnly { store: String, why: String },
    #[error("history store {store}: there is none: record one first (--record {store})")]
    Missing { store: String },
    #[error(
        "history store {store}: not a tally history store: {what}; give a new file or \
         another store"
    )]
    Foreign { store: String, what: String },
    #[error("history store {store}: refused: {what}")]
    Refused { store: String, what: String },
    #[error(
        "history store {store}: damaged: {what}; restore it from a copy, or import its \
         reports into a new store (tally history import NEW FILE…)"
    )]
    Damaged { store: String, what: String },
    #[error("history store {store}: {what}")]
    Failed { store: String, what: String },
}

impl Failure for StoreError {
    fn exit_code(&self) -> u8 {
        1
    }
}

impl StoreError {
    /// Whether the store could not be reached at all (so a recording goes
    /// to a side file), rather than refused.
    pub fn unreachable(&self) -> bool {
        matches!(
            self,
            StoreError::Unreachable { .. } | StoreError::Failed { .. }
        )
    }
}

/// A failure inside a backend, before it is given the store's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    Unreachable(String),
    ReadOnly(String),
    Missing,
    Foreign(String),
    Refused(String),
    Damaged(String),
    Failed(String),
}

impl Fault {
    pub fn named(self, store: &str) -> StoreError {
        let store = store.to_string();
        match self {
            Fault::Unreachable(why) => StoreError::Unreachable { store, why },
            Fault::ReadOnly(why) => StoreError::ReadOnly { store, why },
            Fault::Missing => StoreError::Missing { store },
            Fault::Foreign(what) => StoreError::Foreign { store, what },
            Fault::Refused(what) => StoreError::Refused { store, what },
            Fault::Damaged(what) => StoreError::Damaged { store, what },
            Fault::Failed(what) => StoreError::Failed { store, what },
        }
    }
}

/// What a backend does with rows; [`Store`] says what the rows are.
pub trait Backend {
    /// The SQL dialect it speaks.
    fn dialect(&self) -> schema::Dialect;
    /// Every table, index, view and trigger in the store's namespace:
    /// `(kind, name)`, kind as SQLite names them.
    fn objects(&mut self) -> Result<Vec<(String, String)>, Fault>;
    /// The columns of `table`, in order.
    fn columns(&mut self, table: &str) -> Result<Vec<schema::Found>, Fault>;
    /// The rows of `meta`.
    fn meta(&mut self) -> Result<Vec<(String, String)>, Fault>;
    /// Makes the schema in an empty store, or steps an older one up, in
    /// one transaction that first checks again what the store holds (a
    /// concurrent writer may have made it meanwhile).
    fn prepare(
        &mut self,
        plan: &dyn Fn(&mut dyn Backend) -> Result<Prepare, Fault>,
    ) -> Result<(), Fault>;
    /// Runs `statements` (with `{p}` for the table prefix).
    fn execute(&mut self, statements: &[String]) -> Result<(), Fault>;
    /// Writes `recordings` in one transaction.
    fn write(&mut self, recordings: &[Recording]) -> Result<(), Fault>;
    /// Streams the rows of each table.
    fn machines(
        &mut self,
        each: &mut dyn FnMut(MachineRow) -> Result<(), Fault>,
    ) -> Result<(), Fault>;
    fn points(
        &mut self,
        q: &Query,
        each: &mut dyn FnMut(PointRow) -> Result<(), Fault>,
    ) -> Result<(), Fault>;
    fn series(&mut self, each: &mut dyn FnMut(SeriesRow) -> Result<(), Fault>)
    -> Result<(), Fault>;
    /// Results in series order (every row of one series before the next
    /// series' first), each series' in point order when `q` names them.
    fn results(
        &mut self,
        q: &Query,
        each: &mut dyn FnMut(ResultRow) -> Result<(), Fault>,
    ) -> Result<(), Fault>;
    /// Begins a read that sees one snapshot of the store until
    /// [`Backend::end_read`]: a recording committed meanwhile is not seen.
    fn begin_read(&mut self) -> Result<(), Fault>;
    fn end_read(&mut self) -> Result<(), Fault>;
    /// The newest point's id, 0 when there is none.
    fn newest_point(&mut self) -> Result<i64, Fault>;
    /// The packs of series `series_id` that reach point `from_point` or
    /// later, by their first point.
    fn packs(
        &mut self,
        series_id: i64,
        from_point: i64,
        each: &mut dyn FnMut(pack::PackRow) -> Result<(), Fault>,
    ) -> Result<(), Fault>;
    /// Runs `f` in one write transaction that no recording runs beside:
    /// every recording begun before it has committed, and none begins
    /// until it ends (waits bounded as every wait on the store is).
    fn alone(
        &mut self,
        f: &mut dyn FnMut(&mut dyn Backend) -> Result<(), Fault>,
    ) -> Result<(), Fault>;
    /// Adds `packs` and moves meta's `packed_through` to `through` (within
    /// [`Backend::alone`]).
    fn add_packs(&mut self, packs: &[pack::PackRow], through: i64) -> Result<(), Fault>;
}

/// What [`Backend::prepare`] is to do, decided from what the store holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prepare {
    /// The store is tally's and current.
    Ready,
    /// Empty: make every table.
    Create,
    /// Older: run these statements and record the new version.
    Migrate(Vec<String>),
}

/// How a store is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// To read: it must exist.
    Read,
    /// To write: made if missing, checked writable now.
    Write,
}

/// An open, checked store.
pub struct Store {
    name: String,
    backend: Box<dyn Backend>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("name", &self.name).finish()
    }
}

impl Store {
    /// Opens `target` and checks it is a tally history store of this
    /// schema (making it, or stepping it up, when writing).
    pub fn open(target: &Target, mode: Mode) -> Result<Store, StoreError> {
        let name = target.name();
        let backend: Box<dyn Backend> = match target {
            Target::Sqlite(path) => {
                Box::new(sqlite::Sqlite::open(path, mode).map_err(|f| f.named(&name))?)
            }
            Target::Postgres(url) => {
                Box::new(postgres::Postgres::open(url, mode).map_err(|f| f.named(&name))?)
            }
        };
        let mut store = Store { name, backend };
        store.settle(mode)?;
        Ok(store)
    }

    /// The store's name, for messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn settle(&mut self, mode: Mode) -> Result<(), StoreError> {
        let name = self.name.clone();
        let plan = |b: &mut dyn Backend| -> Result<Prepare, Fault> { decide(b) };
        match mode {
            Mode::Write => self.backend.prepare(&plan).map_err(|f| f.named(&name)),
            Mode::Read => match decide(self.backend.as_mut()).map_err(|f| f.named(&name))? {
                Prepare::Ready => Ok(()),
                Prepare::Create => Err(StoreError::Missing { store: name }),
                Prepare::Migrate(_) => Err(StoreError::Refused {
                    store: name,
                    what: "its schema is older than this tally's: record into it once \
                           (or run tally history import STORE, no files) to step it up"
                        .into(),
                }),
            },
        }
    }

    /// Writes `recordings` in one transaction, each checked first; then
    /// packs what has become due ([`pack`]). They are written when this
    /// returns `Ok`: a packing that failed is said in the note returned,
    /// and left for the next recording.
    pub fn write(&mut self, recordings: &[Recording]) -> Result<Option<String>, StoreError> {
        for r in recordings {
            check::recording(r).map_err(|what| StoreError::Refused {
                store: self.name.clone(),
                what,
            })?;
        }
        self.backend
            .write(recordings)
            .map_err(|f| f.named(&self.name))?;
        Ok(pack::due(self.backend.as_mut()).err().map(|f| {
            format!(
                "packing for reading left for the next recording: {}",
                f.named(&self.name)
            )
        }))
    }

    /// Begins a read of one snapshot of the store (see [`Snapshot`]).
    pub fn snapshot(&mut self) -> Result<Snapshot<'_>, StoreError> {
        self.backend.begin_read().map_err(|f| f.named(&self.name))?;
        Ok(Snapshot {
            store: self,
            open: true,
        })
    }
}

/// A read of one snapshot of a store: the machines, series and points
/// first ([`Snapshot::head`]), then each series' values
/// ([`Snapshot::values`]), so a result never names a point that a
/// recording committed between the two added. Ended by
/// [`Snapshot::finish`], or when dropped.
pub struct Snapshot<'a> {
    store: &'a mut Store,
    open: bool,
}

impl Snapshot<'_> {
    /// The machines, the series `keep` keeps and the points `q` asks for,
    /// every row validated.
    pub fn head(
        &mut self,
        q: &Query,
        keep: &dyn Fn(&SeriesRow) -> bool,
    ) -> Result<Loaded, StoreError> {
        head(self.store.backend.as_mut(), q, keep).map_err(|f| f.named(&self.store.name))
    }

    /// The values of `head`'s series, every row validated, handed to
    /// `each` one series at a time (an index into [`Loaded::series`], its
    /// values in no order), as each series is read whole.
    pub fn values(
        &mut self,
        head: &Loaded,
        each: &mut dyn FnMut(usize, Vec<Value>),
    ) -> Result<(), StoreError> {
        values(self.store.backend.as_mut(), head, each).map_err(|f| f.named(&self.store.name))
    }

    /// Ends the read.
    pub fn finish(mut self) -> Result<(), StoreError> {
        self.open = false;
        self.store
            .backend
            .end_read()
            .map_err(|f| f.named(&self.store.name))
    }
}

impl Drop for Snapshot<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.store.backend.end_read();
        }
    }
}

/// Decides what a store needs from what it holds: nothing (empty), tally's
/// tables of this schema, of an older one, or something else (refused).
fn decide(b: &mut dyn Backend) -> Result<Prepare, Fault> {
    let objects = b.objects()?;
    if objects.is_empty() {
        return Ok(Prepare::Create);
    }
    let ours = |kind: &str, name: &str| match kind {
        "table" => schema::TABLES.iter().any(|t| t.name == name),
        "index" => {
            schema::INDEXES.iter().any(|i| i.0 == name)
                || name.starts_with("sqlite_autoindex_")
                || name.ends_with("_pkey")
                || name.ends_with("_key")
        }
        // The sequence of an id column (PostgreSQL's identity).
        "sequence" => schema::TABLES.iter().any(|t| {
            t.columns.iter().any(|c| c.kind == schema::Kind::Id)
                && name == format!("{}_id_seq", t.name)
        }),
        _ => false,
    };
    if let Some((kind, name)) = objects.iter().find(|(k, n)| !ours(k, n)) {
        return Err(Fault::Foreign(format!(
            "{kind} {} is not tally's",
            crate::text::escape::escape_text(name)
        )));
    }
    if !objects.iter().any(|(k, n)| k == "table" && n == "meta") {
        return Err(Fault::Foreign("it has no table meta".into()));
    }
    let meta = b.meta()?;
    let get = |key: &str| meta.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    if get("format") != Some(schema::FORMAT) {
        return Err(Fault::Foreign(format!(
            "table meta: field value of key format is {}, not {}",
            get("format").map_or("missing".into(), |v| format!(
                "\"{}\"",
                crate::text::escape::escape_text(v)
            )),
            schema::FORMAT
        )));
    }
    let version: i64 = get("schema_version")
        .and_then(|v| v.parse().ok())
        .filter(|v| (1..=1_000_000).contains(v))
        .ok_or_else(|| {
            Fault::Damaged("table meta: field value of key schema_version is not a version".into())
        })?;
    let steps = schema::steps(version, schema::SCHEMA_VERSION, schema::MIGRATIONS)
        .map_err(Fault::Refused)?;
    if steps.is_empty() {
        for t in schema::TABLES {
            if !objects.iter().any(|(k, n)| k == "table" && n == t.name) {
                return Err(Fault::Damaged(format!("table {} is missing", t.name)));
            }
            let found = b.columns(t.name)?;
            schema::check_columns(t, &found, b.dialect()).map_err(Fault::Damaged)?;
        }
        return Ok(Prepare::Ready);
    }
    let statements = steps.iter().flat_map(|m| m.sql(b.dialect())).collect();
    Ok(Prepare::Migrate(statements))
}

/// What a query read before the values, every value checked.
#[derive(Debug)]
pub struct Loaded {
    pub machines: Vec<MachineRow>,
    pub points: Vec<PointRow>,
    pub series: Vec<SeriesRow>,
    /// The query the values are read with (the series kept named).
    query: Query,
    point_at: IdIndex,
    series_at: IdIndex,
    machine_at: IdIndex,
    /// Meta's `packed_through`: results of points up to it are read from
    /// their packs.
    packed_through: i64,
}

impl Loaded {
    /// The machine of id `id`.
    pub fn machine(&self, id: i64) -> Option<&MachineRow> {
        self.machine_at
            .get(id)
            .and_then(|i| self.machines.get(i as usize))
    }
}

/// One value of a series: the point (an index into [`Loaded::points`]),
/// its median, MAD and sample count.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Value {
    pub point: u32,
    pub median: f64,
    pub mad: f64,
    pub n: u32,
}

fn head(
    b: &mut dyn Backend,
    q: &Query,
    keep: &dyn Fn(&SeriesRow) -> bool,
) -> Result<Loaded, Fault> {
    let mut machines = Vec::new();
    let mut points = Vec::new();
    let mut series = Vec::new();
    let mut q = q.clone();
    let packed_through = pack::through(&b.meta()?)?;
    // Packs reach no further than the points: else rows after them would
    // go unread.
    let newest = b.newest_point()?;
    if packed_through > newest {
        return Err(Fault::Damaged(format!(
            "table meta: field value of key {} is {packed_through}, beyond the newest point \
             ({newest})",
            pack::THROUGH
        )));
    }
    b.machines(&mut |m| {
        check::machine_row(&m).map_err(Fault::Damaged)?;
        bounded(machines.len(), MAX_MACHINES, "machines")?;
        machines.push(m);
        Ok(())
    })?;
    b.series(&mut |s| {
        check::series_row(&s).map_err(Fault::Damaged)?;
        bounded(series.len(), MAX_SERIES, "series")?;
        series.push(s);
        Ok(())
    })?;
    let all = series.len();
    series.retain(|s| keep(s));
    if series.len() < all {
        q.series = Some(series.iter().map(|s| s.id).collect());
    }
    let machine_at = IdIndex::new(machines.iter().map(|m| m.id));
    b.points(&q, &mut |p| {
        check::point_row(&p).map_err(Fault::Damaged)?;
        if machine_at.get(p.machine_id).is_none() {
            return Err(Fault::Damaged(format!(
                "table points: field machine_id of point {} names no machine ({})",
                p.id, p.machine_id
            )));
        }
        bounded(points.len(), MAX_POINTS, "points")?;
        points.push(p);
        Ok(())
    })?;
    if q.since_ns.is_some() {
        // Ids grow as points are added, and an imported point may be
        // older than one before it: from the smallest id kept on, and the
        // points before --since among them left out one by one.
        q.from_point = Some(points.iter().map(|p| p.id).min().unwrap_or(i64::MAX));
        if q.series.is_none() {
            q.series = Some(series.iter().map(|s| s.id).collect());
        }
    }
    Ok(Loaded {
        point_at: IdIndex::new(points.iter().map(|p| p.id)),
        series_at: IdIndex::new(series.iter().map(|s| s.id)),
        machine_at,
        machines,
        points,
        series,
        query: q,
        packed_through,
    })
}

fn values(
    b: &mut dyn Backend,
    head: &Loaded,
    each: &mut dyn FnMut(usize, Vec<Value>),
) -> Result<(), Fault> {
    if head.packed_through > 0 {
        return packed_values(b, head, each);
    }
    let q = &head.query;
    let mut count = 0usize;
    // The series being read, and which have been read whole.
    let mut current: Option<(u32, Vec<Value>)> = None;
    let mut done = vec![false; head.series.len()];
    b.results(q, &mut |r| {
        check::result_row(&r).map_err(Fault::Damaged)?;
        let Some(s) = head.series_at.get(r.series_id) else {
            if q.series.is_some() {
                return Ok(());
            }
            return Err(Fault::Damaged(format!(
                "table results: field series_id names no series ({})",
                r.series_id
            )));
        };
        let Some(v) = read_value(head, &mut count, r.point_id, (r.n, r.median, r.mad), || {
            format!(
                "table results: field point_id names no point ({})",
                r.point_id
            )
        })?
        else {
            return Ok(());
        };
        if current.as_ref().is_none_or(|(c, _)| *c != s) {
            if done[s as usize] {
                return Err(Fault::Damaged(format!(
                    "table results: the rows of series {} came in two runs (the store's \
                     order is broken: rebuild its index with REINDEX)",
                    r.series_id
                )));
            }
            // Series of one store tend to be as long as each other.
            let mut room = 0;
            if let Some((c, vals)) = current.take() {
                done[c as usize] = true;
                room = vals.len();
                each(c as usize, vals);
            }
            current = Some((s, Vec::with_capacity(room)));
        }
        if let Some((_, vals)) = current.as_mut() {
            vals.push(v);
        }
        Ok(())
    })?;
    if let Some((c, vals)) = current.take() {
        each(c as usize, vals);
    }
    Ok(())
}

/// The value of a result of point `point_id` (its n, median and MAD),
/// counted against [`MAX_RESULTS`]: `None` for a point before --since,
/// which is not read. A point not there at all is damage (`missing` says
/// where), but telling the two apart would cost a lookup per result:
/// points are checked whole when no --since is given.
fn read_value(
    head: &Loaded,
    count: &mut usize,
    point_id: i64,
    (n, median, mad): (u64, f64, f64),
    missing: impl FnOnce() -> String,
) -> Result<Option<Value>, Fault> {
    let Some(point) = head.point_at.get(point_id) else {
        if head.query.since_ns.is_none() {
            return Err(Fault::Damaged(missing()));
        }
        return Ok(None);
    };
    *count += 1;
    bounded(*count - 1, MAX_RESULTS, "results")?;
    Ok(Some(Value {
        point,
        n: u32::try_from(n).unwrap_or(u32::MAX),
        median,
        mad,
    }))
}

/// [`values`] of a store with packs: each series' packs up to
/// `packed_through`, then its rows after it.
fn packed_values(
    b: &mut dyn Backend,
    head: &Loaded,
    each: &mut dyn FnMut(usize, Vec<Value>),
) -> Result<(), Fault> {
    let from = head.query.from_point.unwrap_or(1);
    let through = head.packed_through;
    let mut count = 0usize;
    let mut room = 0;
    for (i, s) in head.series.iter().enumerate() {
        let mut vals: Vec<Value> = Vec::with_capacity(room);
        let mut at = |point_id: i64, vals: &mut Vec<Value>, n, median, mad| {
            let v = read_value(head, &mut count, point_id, (n, median, mad), || {
                format!("series {}: a result names no point ({point_id})", s.id)
            })?;
            vals.extend(v);
            Ok(())
        };
        // Each pack decoded as it is read (one in memory at a time).
        let mut after = 0;
        b.packs(s.id, from, &mut |p| {
            pack::decode(&p, after, through, &mut |r| {
                if r.point_id < from {
                    return Ok(());
                }
                at(r.point_id, &mut vals, r.n, r.median, r.mad)
            })?;
            after = p.last_point_id;
            Ok(())
        })?;
        let q = Query {
            series: Some(vec![s.id]),
            from_point: Some(from.max(through.saturating_add(1))),
            ..Query::default()
        };
        b.results(&q, &mut |r| {
            check::result_row(&r).map_err(Fault::Damaged)?;
            at(r.point_id, &mut vals, r.n, r.median, r.mad)
        })?;
        room = vals.len();
        each(i, vals);
    }
    Ok(())
}

/// A series keeps the unit it was first recorded in.
fn same_unit(command: &str, figure: &str, had: &str, unit: &str) -> Result<(), Fault> {
    if had != unit {
        return Err(Fault::Refused(format!(
            "figure {} of {} was recorded in {} and now comes in {}: a series keeps one unit",
            crate::text::escape::escape_text(figure),
            crate::text::escape::escape_text(command),
            crate::text::escape::escape_text(had),
            crate::text::escape::escape_text(unit)
        )));
    }
    Ok(())
}

/// Where each id is in a list: a table by id where the ids are dense (as
/// a store assigns them), else a hash map.
#[derive(Debug)]
enum IdIndex {
    Dense { first: i64, at: Vec<u32> },
    Sparse(std::collections::HashMap<i64, u32>),
}

impl IdIndex {
    fn new(ids: impl Iterator<Item = i64> + Clone) -> IdIndex {
        let (lo, hi, n) = ids
            .clone()
            .fold((i64::MAX, i64::MIN, 0usize), |(lo, hi, n), id| {
                (lo.min(id), hi.max(id), n + 1)
            });
        let span = hi.saturating_sub(lo).saturating_add(1);
        if n > 0 && span > 0 && (span as u128) <= 4 * n as u128 + 1024 {
            let mut at = vec![u32::MAX; span as usize];
            for (i, id) in ids.enumerate() {
                at[(id - lo) as usize] = i as u32;
            }
            IdIndex::Dense { first: lo, at }
        } else {
            IdIndex::Sparse(ids.enumerate().map(|(i, id)| (id, i as u32)).collect())
        }
    }

    fn get(&self, id: i64) -> Option<u32> {
        match self {
            IdIndex::Dense { first, at } => {
                let k = usize::try_from(id.checked_sub(*first)?).ok()?;
                at.get(k).copied().filter(|&i| i != u32::MAX)
            }
            IdIndex::Sparse(m) => m.get(&id).copied(),
        }
    }
}

fn bounded(have: usize, max: usize, what: &str) -> Result<(), Fault> {
    if have >= max {
        return Err(Fault::Refused(format!(
            "more than {max} {what} for one query: narrow it with --since, --command or --figure"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recording(at: i64, median: f64) -> Recording {
        Recording {
            machine: crate::history::identity::machine(Some("cpu".into()), Some(2), None, None),
            point: PointMeta {
                recorded_at_ns: at,
                commit: Some(format!("{at:040x}")),
                dirty: false,
                branch: None,
                tool: "run".into(),
                tally_version: "0".into(),
                origin: "recorded".into(),
            },
            figures: vec![FigureResult {
                command: "app".into(),
                figure: "wall_ns".into(),
                unit: "ns".into(),
                n: 1,
                median,
                mad: 0.0,
                min: median,
                max: median,
                samples: Vec::new(),
            }],
        }
    }

    /// A recording committed between a read's points and its results
    /// named a point the read had not seen, and the read called the store
    /// damaged ("field point_id names no point").
    #[test]
    fn a_recording_during_a_read_is_not_seen_by_it() {
        let dir = tempfile::tempdir().unwrap();
        let target = Target::Sqlite(dir.path().join("h.db"));
        Store::open(&target, Mode::Write)
            .unwrap()
            .write(&[recording(1_800_000_000_000_000_000, 10.0)])
            .unwrap();
        let mut reader = Store::open(&target, Mode::Read).unwrap();
        let mut snap = reader.snapshot().unwrap();
        let head = snap.head(&Query::default(), &|_| true).unwrap();
        assert_eq!(head.points.len(), 1);
        Store::open(&target, Mode::Write)
            .unwrap()
            .write(&[recording(1_800_000_060_000_000_000, 11.0)])
            .unwrap();
        let mut seen = Vec::new();
        snap.values(&head, &mut |s, v| seen.push((s, v))).unwrap();
        snap.finish().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].1.len(), 1);
        assert_eq!(seen[0].1[0].median, 10.0);
        // A read begun after it sees both.
        let mut snap = reader.snapshot().unwrap();
        let head = snap.head(&Query::default(), &|_| true).unwrap();
        let mut n = 0;
        snap.values(&head, &mut |_, v| n += v.len()).unwrap();
        assert_eq!((head.points.len(), n), (2, 2));
    }

    /// `--since` reads from the first point it keeps on, by id: a point
    /// imported later (a larger id) from an older report is left out by
    /// its time, and one recorded before the first kept is not read.
    #[test]
    fn since_reads_the_points_it_keeps_whatever_their_order_of_ids() {
        let dir = tempfile::tempdir().unwrap();
        let target = Target::Sqlite(dir.path().join("h.db"));
        let base = 1_800_000_000_000_000_000i64;
        let mut store = Store::open(&target, Mode::Write).unwrap();
        // Ids 1, 2, 3 at times 100, 300, 200.
        for (at, v) in [(100, 1.0), (300, 3.0), (200, 2.0)] {
            store.write(&[recording(base + at, v)]).unwrap();
        }
        let mut medians = |since: i64| -> Vec<f64> {
            let mut snap = store.snapshot().unwrap();
            let q = Query {
                since_ns: Some(base + since),
                ..Query::default()
            };
            let head = snap.head(&q, &|_| true).unwrap();
            let mut got = Vec::new();
            snap.values(&head, &mut |_, v| got.extend(v.iter().map(|x| x.median)))
                .unwrap();
            got.sort_by(f64::total_cmp);
            got
        };
        assert_eq!(medians(0), [1.0, 2.0, 3.0]);
        assert_eq!(medians(150), [2.0, 3.0]);
        assert_eq!(medians(250), [3.0]);
        assert!(medians(400).is_empty());
    }

    /// A long history is read from packs and rows alike: every value
    /// once, in both, with and without --since, and a second series that
    /// began later packs only the points it has.
    #[test]
    fn packed_and_unpacked_results_read_as_one_history() {
        let dir = tempfile::tempdir().unwrap();
        let target = Target::Sqlite(dir.path().join("h.db"));
        let base = 1_800_000_000_000_000_000i64;
        let total = 2 * pack::SPAN + 100;
        let all: Vec<Recording> = (1..=total)
            .map(|i| {
                let mut r = recording(base + i, i as f64);
                if i > pack::SPAN + 50 {
                    let mut f = r.figures[0].clone();
                    f.figure = "cpu_ns".into();
                    f.median = -(i as f64);
                    f.n = 5;
                    f.mad = 0.5;
                    f.min = f.median - 1.0;
                    f.max = f.median + 1.0;
                    r.figures.push(f);
                }
                r
            })
            .collect();
        let mut store = Store::open(&target, Mode::Write).unwrap();
        // Written in two parts: the first packs nothing yet.
        assert_eq!(store.write(&all[..100]).unwrap(), None);
        assert_eq!(store.write(&all[100..]).unwrap(), None);
        let through = pack::through(&store.backend.meta().unwrap()).unwrap();
        assert_eq!(through, 2 * pack::SPAN);
        let mut packs = 0;
        for id in [1, 2] {
            store
                .backend
                .packs(id, 1, &mut |_| {
                    packs += 1;
                    Ok(())
                })
                .unwrap();
        }
        assert_eq!(packs, 3, "two of the first series, one of the second");
        let mut read = |since: i64| -> Vec<Vec<(f64, f64, u32)>> {
            let mut snap = store.snapshot().unwrap();
            let q = Query {
                since_ns: (since > 0).then_some(base + since),
                ..Query::default()
            };
            let head = snap.head(&q, &|_| true).unwrap();
            let mut got = vec![Vec::new(); head.series.len()];
            snap.values(&head, &mut |s, v| {
                got[s] = v.iter().map(|x| (x.median, x.mad, x.n)).collect();
            })
            .unwrap();
            snap.finish().unwrap();
            got
        };
        for since in [0, 7, pack::SPAN + 3, 2 * pack::SPAN + 1] {
            let got = read(since);
            let from = since.max(1);
            let first: Vec<(f64, f64, u32)> = (from..=total).map(|i| (i as f64, 0.0, 1)).collect();
            let second: Vec<(f64, f64, u32)> = (from.max(pack::SPAN + 51)..=total)
                .map(|i| (-(i as f64), 0.5, 5))
                .collect();
            assert_eq!(got, [first, second], "since {since}");
        }
    }
}
