//! What the history tests share: a real PostgreSQL server, started for a
//! test in a scratch directory on a free port as an unprivileged user
//! (65534 when the tests run as root) and stopped when the test ends, and
//! the stores the same tests run against (a SQLite file, that server).
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use crate::common::{Unable, command};

/// Where PostgreSQL's programs are: Debian's versioned directory, else
/// `pg_config --bindir`, else `PATH`.
pub fn bindir() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").is_file() && b.join("pg_ctl").is_file())
        .collect();
    versions.sort();
    if let Some(b) = versions.pop() {
        return Some(b);
    }
    let out = command("pg_config").arg("--bindir").output().ok()?;
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    dir.join("initdb").is_file().then_some(dir)
}

/// A PostgreSQL server of the test's own.
pub struct Pg {
    pub dir: tempfile::TempDir,
    pub port: u16,
    bin: PathBuf,
    as_nobody: bool,
    /// The password of user `tally` over TCP (SCRAM), where one is set.
    pub password: Option<String>,
    /// The CA that signed the server's certificate, where TLS is on.
    pub ca: Option<PathBuf>,
}

/// How a test wants its server.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// A password (SCRAM-SHA-256) for TCP connections, else trust.
    pub password: bool,
    /// TLS with a certificate for `localhost` signed by a test CA.
    pub tls: bool,
}

fn free_port() -> Result<u16, Unable> {
    let l = TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Unable::machine(format!("no free port: {e}")))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| Unable::machine(format!("no free port: {e}")))
}

impl Pg {
    /// Starts a server, or says why not (a missing PostgreSQL is a tool
    /// tests/install-deps.sh installs: a failure under CI).
    pub fn start(opts: Options) -> Result<Pg, Unable> {
        let bin = bindir().ok_or_else(|| {
            Unable::tool(
                "postgresql",
                "Debian package postgresql-15 (initdb, pg_ctl)",
            )
        })?;
        let as_nobody = crate::common::is_root();
        if as_nobody {
            crate::common::can_switch_users()?;
        }
        let dir = tempfile::Builder::new()
            .prefix("tally-pg-")
            .tempdir()
            .map_err(|e| Unable::machine(format!("no scratch directory: {e}")))?;
        let mut pg = Pg {
            port: free_port()?,
            dir,
            bin,
            as_nobody,
            password: opts.password.then(|| "s3cret pass".to_string()),
            ca: None,
        };
        if as_nobody {
            chown_nobody(pg.dir.path());
        }
        pg.initdb()?;
        if opts.tls {
            pg.certificates();
        }
        pg.start_again()?;
        Ok(pg)
    }

    /// `program ARGS` as the server's user.
    fn run(&self, program: &str, args: &[&str]) -> std::io::Result<Output> {
        let exe = self.bin.join(program);
        let mut cmd = if self.as_nobody {
            let mut c = command("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&exe);
            c
        } else {
            command(&exe)
        };
        cmd.args(args)
            .env("HOME", self.dir.path())
            .env("LC_ALL", "C.UTF-8")
            .current_dir(self.dir.path());
        cmd.output()
    }

    fn data(&self) -> String {
        self.dir.path().join("data").to_string_lossy().into_owned()
    }

    fn initdb(&self) -> Result<(), Unable> {
        let data = self.data();
        let mut args: Vec<String> = [
            "-D",
            &data,
            "-U",
            "tally",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
            "--auth-local=trust",
        ]
        .map(String::from)
        .to_vec();
        let pwfile = self.dir.path().join("pw");
        if let Some(p) = &self.password {
            std::fs::write(&pwfile, p).expect("write the password file");
            if self.as_nobody {
                chown_nobody(&pwfile);
            }
            args.push("--auth-host=scram-sha-256".into());
            args.push(format!("--pwfile={}", pwfile.display()));
        } else {
            args.push("--auth-host=trust".into());
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self
            .run("initdb", &refs)
            .map_err(|e| Unable::machine(format!("initdb: {e}")))?;
        if !out.status.success() {
            panic!("initdb failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(())
    }

    /// A CA, and a certificate for `localhost` (not for 127.0.0.1) it
    /// signed, for the server.
    fn certificates(&mut self) {
        let ca_key = rcgen::KeyPair::generate().expect("key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "tally test CA");
        let ca = ca_params.self_signed(&ca_key).expect("CA");
        let key = rcgen::KeyPair::generate().expect("key");
        let params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).expect("params");
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let cert = params.signed_by(&key, &issuer).expect("certificate");
        let d = self.dir.path();
        std::fs::write(d.join("server.crt"), cert.pem()).expect("write");
        std::fs::write(d.join("server.key"), key.serialize_pem()).expect("write");
        std::fs::write(d.join("ca.crt"), ca.pem()).expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(d.join("server.key"), std::fs::Permissions::from_mode(0o600))
            .expect("chmod");
        if self.as_nobody {
            chown_nobody(&d.join("server.crt"));
            chown_nobody(&d.join("server.key"));
        }
        self.ca = Some(d.join("ca.crt"));
    }

    /// Starts (again) the server of this data directory.
    pub fn start_again(&self) -> Result<(), Unable> {
        let d = self.dir.path().display().to_string();
        let mut o = format!(
            "-p {} -k {d} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=40",
            self.port
        );
        if self.ca.is_some() {
            o.push_str(&format!(
                " -c ssl=on -c ssl_cert_file={d}/server.crt -c ssl_key_file={d}/server.key"
            ));
        }
        let log = format!("{d}/log");
        let data = self.data();
        let out = self
            .run(
                "pg_ctl",
                &["-D", &data, "-o", &o, "-l", &log, "-w", "-t", "60", "start"],
            )
            .map_err(|e| Unable::machine(format!("pg_ctl: {e}")))?;
        if !out.status.success() {
            panic!(
                "pg_ctl start failed: {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        Ok(())
    }

    /// Stops the server at once.
    pub fn stop(&self) {
        let data = self.data();
        let _ = self.run(
            "pg_ctl",
            &["-D", &data, "-m", "immediate", "-w", "-t", "30", "stop"],
        );
    }

    /// The command line that stops this server (for a measured command).
    pub fn stop_command(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.as_nobody {
            v.extend(
                [
                    "setpriv",
                    "--reuid=65534",
                    "--regid=65534",
                    "--clear-groups",
                ]
                .map(String::from),
            );
        }
        v.push(self.bin.join("pg_ctl").display().to_string());
        v.extend([
            "-D".to_string(),
            self.data(),
            "-m".into(),
            "immediate".into(),
            "-w".into(),
            "stop".into(),
        ]);
        v
    }

    /// A URL for user `tally`, TCP to 127.0.0.1, with `query` after `?`.
    pub fn url(&self, query: &str) -> String {
        let auth = match &self.password {
            Some(p) => format!("tally:{}@", p.replace(' ', "%20")),
            None => "tally@".into(),
        };
        let q = if query.is_empty() {
            String::new()
        } else {
            format!("?{query}")
        };
        format!("postgres://{auth}127.0.0.1:{}/postgres{q}", self.port)
    }

    /// A client of the test's own, to look at or spoil the store.
    pub fn client(&self) -> postgres::Client {
        let mut cfg = postgres::Config::new();
        cfg.host("127.0.0.1")
            .port(self.port)
            .user("tally")
            .dbname("postgres");
        if let Some(p) = &self.password {
            cfg.password(p);
        }
        cfg.connect_timeout(Duration::from_secs(10));
        cfg.connect(postgres::NoTls)
            .expect("connect to the test server")
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        self.stop();
    }
}

fn chown_nobody(p: &Path) {
    std::os::unix::fs::chown(p, Some(65534), Some(65534)).expect("chown to 65534");
}

/// Where a test's store is.
pub enum Where {
    Sqlite(tempfile::TempDir),
    Postgres(Pg),
}

impl Where {
    pub fn sqlite() -> Where {
        Where::Sqlite(tempfile::tempdir().expect("temp dir"))
    }

    /// The STORE argument.
    pub fn store(&self) -> String {
        match self {
            Where::Sqlite(d) => d.path().join("history.db").display().to_string(),
            Where::Postgres(pg) => pg.url(""),
        }
    }

    /// A scratch directory for the test's other files.
    pub fn scratch(&self) -> &Path {
        match self {
            Where::Sqlite(d) => d.path(),
            Where::Postgres(pg) => pg.dir.path(),
        }
    }
}

/// Defines a test per store for each `fn case_NAME(w: &Where)`: `NAME`
/// against a SQLite file and `NAME` against a real PostgreSQL server
/// (skipped, counted and named, where PostgreSQL is missing outside CI).
#[macro_export]
macro_rules! both_stores {
    ($($name:ident),+ $(,)?) => {
        pub mod sqlite {
            $(
                #[test]
                fn $name() {
                    super::$name(&$crate::history_common::Where::sqlite());
                }
            )+
        }
        pub mod postgres {
            $(
                #[test]
                fn $name() {
                    let pg = $crate::common::require!($crate::history_common::Pg::start(Default::default()));
                    super::$name(&$crate::history_common::Where::Postgres(pg));
                }
            )+
        }
    };
}
