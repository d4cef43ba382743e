//! `tally mem` arguments.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::Config;
use super::group::{GroupBy, Grouping, SortKey};
use super::name::NameMode;
use super::privilege::Privilege;
use super::report::{Unit, View};
use crate::failure::Usage;
use crate::procfs::ProcRoot;
use crate::report::Format;

#[derive(Debug, Args)]
#[command(
    after_help = "Columns: Private, Shared (= PSS − private), RAM used (= PSS, each shared \
        page divided among the processes mapping it), Swap (SwapPss), in MiB unless told. \
        Rows ascend, so the biggest is next to the prompt. The TOTAL line adds the swap in \
        use that no process's SwapPss holds (tmpfs, SysV and shared anonymous memory). \
        tally leaves itself out. With NVIDIA's nvidia-smi on PATH, a GPU column: the GPU \
        memory the driver attributes to the row's processes, at the moment of the scan.\n\n\
        Examples:\n  \
        tally mem\n  \
        tally mem --by user --human\n  \
        tally mem --filter '^python' --split-args --name comm\n  \
        tally mem --by cgroup --top 10\n  \
        tally mem --format prometheus > /var/lib/node_exporter/textfile/mem.prom\n  \
        tally mem --textfile /var/lib/node_exporter/textfile --every 60\n\n\
        Users other than root see their own processes. To let every user see the memory \
        of every process /proc shows them (hidepid still hides what it hides): setcap \
        cap_sys_ptrace,cap_dac_read_search+ep $(which tally)"
)]
pub struct MemArgs {
    /// What one row stands for.
    #[arg(long = "by", value_enum, default_value_t = GroupBy::Program, value_name = "WHAT")]
    pub group_by: GroupBy,

    /// Which name of a process is its program name.
    #[arg(long, value_enum, default_value_t = NameMode::Exe)]
    pub name: NameMode,

    /// Add the arguments to the program name (`python3 app.py` apart from
    /// `python3 other.py`).
    #[arg(long)]
    pub split_args: bool,

    /// Only processes whose program name matches REGEX.
    #[arg(long, value_name = "REGEX", value_parser = parse_regex)]
    pub filter: Option<regex::Regex>,

    /// Only these processes (comma-separated PIDs).
    #[arg(short = 'p', long = "pid", value_name = "LIST", value_delimiter = ',', num_args = 1..,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub pids: Vec<u32>,

    /// Only processes of this user (name or uid; the real uid).
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,

    /// Sort rows by this column, ascending.
    #[arg(long, value_enum, default_value_t = SortKey::RAM)]
    pub sort: SortKey,

    /// Biggest first.
    #[arg(long)]
    pub reverse: bool,

    /// Show only the N biggest rows (the total still covers all).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub top: Option<u64>,

    /// Show only the TOTAL line (ps_mem's -t).
    #[arg(short = 't', long)]
    pub total_only: bool,

    /// Unit of sizes: b, k (KiB), m (MiB), g (GiB), auto (the default for
    /// people: KiB below a 10 MiB total, GiB from 10 GiB, MiB between);
    /// CSV defaults to bytes.
    #[arg(long, value_enum, value_name = "UNIT")]
    pub unit: Option<Unit>,

    /// Each size in its own unit (1.5 MiB, 2.0 GiB). (-h is help, as
    /// everywhere.)
    #[arg(long = "human", conflicts_with = "unit")]
    pub human: bool,

    /// Redraw every SECS seconds (in place on a terminal, appended on a pipe)
    /// until interrupted.
    #[arg(long, value_name = "SECS", value_parser = crate::units::parse_seconds)]
    pub watch: Option<Duration>,

    /// Where the report goes.
    #[command(flatten)]
    pub out: crate::report::OutputArgs,

    /// Write the Prometheus metrics to DIR/tally_mem.prom for
    /// node_exporter's textfile collector, atomically (a temporary file in
    /// DIR renamed into place), instead of printing the report.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["watch", "format", "export", "output", "html"])]
    pub textfile: Option<PathBuf>,

    /// With --textfile: write again every SECS seconds until interrupted.
    #[arg(long, value_name = "SECS", value_parser = crate::units::parse_seconds, requires = "textfile")]
    pub every: Option<Duration>,

    /// GPU memory per row, from NVIDIA's driver (nvidia-smi): shown
    /// whenever nvidia-smi is on PATH and answers; --gpu also says why
    /// when it cannot be measured, and matches a --procfs tree's pids.
    #[arg(long)]
    pub gpu: bool,

    /// Where proc is mounted (a fixture tree for tests).
    #[arg(long, value_name = "PATH")]
    pub procfs: Option<PathBuf>,

    /// Scan workers (0: one per core).
    #[arg(long, hide = true, default_value_t = 0)]
    pub threads: usize,
}

impl MemArgs {
    /// The measurement the arguments ask for, checked against the
    /// install's `privilege` (setuid or file capabilities keep their rights
    /// for one scan only, and read only /proc). A `--user` name is looked up
    /// when measuring, with the caller's rights.
    pub fn config(&self, privilege: Privilege) -> Result<Config, Usage> {
        let elevated = privilege.is_elevated();
        if elevated && self.watch.is_some() {
            return Err(Usage::new(
                "--watch is not available in a setuid or capability install, which keeps its \
                 privilege for one scan only; run `watch tally mem` instead",
            ));
        }
        if self.watch.is_some()
            && self
                .out
                .output
                .as_ref()
                .is_some_and(|p| p.as_os_str() != "-")
        {
            return Err(Usage::new(
                "--watch writes its frames to stdout: drop -o, or use --textfile DIR for a file \
                 kept current",
            ));
        }
        if elevated && self.textfile.is_some() && self.every.is_some() {
            return Err(Usage::new(
                "--every is not available in a setuid or capability install, which keeps its \
                 privilege for one scan only; run tally mem --textfile from a timer instead",
            ));
        }
        let mut notes = Vec::new();
        if elevated && self.procfs.is_some() {
            notes.push("--procfs ignored: this install reads /proc only".to_string());
        }
        let machine = matches!(
            self.out.format,
            Format::CSV | Format::JSON | Format::PROMETHEUS
        );
        Ok(Config {
            procfs: match &self.procfs {
                Some(path) if !elevated => ProcRoot::new(path),
                _ => ProcRoot::default(),
            },
            pids: (!self.pids.is_empty()).then(|| {
                let mut pids = self.pids.clone();
                pids.sort_unstable();
                pids.dedup();
                pids
            }),
            grouping: Grouping {
                by: self.group_by,
                name: self.name,
                split_args: self.split_args,
                filter: self.filter.clone(),
                uid: None,
                sort: self.sort,
                reverse: self.reverse,
                top: self.top.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                check_replaced: !elevated,
            },
            view: View {
                unit: self
                    .unit
                    .unwrap_or(if machine { Unit::B } else { Unit::Auto }),
                human_sizes: self.human,
                total_only: self.total_only,
            },
            threads: self.threads,
            read_status: self.user.is_some(),
            user: self.user.clone(),
            notes,
            gpu: if self.gpu {
                super::gpu::Want::Asked
            } else {
                super::gpu::Want::Auto
            },
        })
    }
}

fn parse_regex(s: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(s).map_err(|e| format!("not a valid regular expression: {e}"))
}
