//! From the command line's commands, names and parameters to the list of
//! instances a comparison runs: each command once per combination of
//! parameter values, `{NAME}` replaced.

use std::ffi::OsString;
use std::path::PathBuf;

/// What to compare and how.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub instances: Vec<Instance>,
    /// Measured runs per command; `None`: by the time budget.
    pub runs: Option<u32>,
    pub min_runs: u32,
    pub max_runs: Option<u32>,
    pub warmup: u32,
    pub prepare: Option<String>,
    pub setup: Option<String>,
    pub cleanup: Option<String>,
    pub cold: Vec<PathBuf>,
    pub drop_caches: bool,
    pub warm: Vec<PathBuf>,
    /// 0-based; `None`: the fastest by median wall time.
    pub reference: Option<usize>,
    /// The family-wise error rate: the chance that a comparison flags any
    /// figure of any command when nothing differs.
    pub alpha: f64,
    /// A significant difference smaller than this fraction (0.01 for 1%)
    /// is reported as the same within it.
    pub threshold: f64,
    pub ignore_failure: bool,
    pub show_output: bool,
    pub seed: u64,
}

/// A parameter of `-P/--parameter-scan` or `-L/--parameter-list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parameter {
    pub name: String,
    pub values: Vec<String>,
}

/// One command as it is run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// `--name`, else the command; with parameters, `name (n=4)`.
    pub name: String,
    /// The command with its parameters filled in.
    pub command: String,
    /// What is executed: `sh -c COMMAND`, or the words of the command with
    /// `--no-shell`.
    pub argv: Vec<OsString>,
    pub parameters: Vec<(String, String)>,
}

/// A command line that cannot be compared; the message names the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

/// `-P NAME LO HI [-D STEP]`: the integers from LO to HI.
pub fn scan(name: &str, lo: &str, hi: &str, step: Option<u64>) -> Result<Parameter, PlanError> {
    check_name(name, "-P/--parameter-scan")?;
    let parse = |s: &str, what: &str| {
        s.trim().parse::<i64>().map_err(|_| {
            PlanError(format!(
                "-P/--parameter-scan {name}: {what} {s:?} is not an integer; give e.g. -P {name} 1 8"
            ))
        })
    };
    let (lo_n, hi_n) = (parse(lo, "LO")?, parse(hi, "HI")?);
    if lo_n > hi_n {
        return Err(PlanError(format!(
            "-P/--parameter-scan {name}: LO {lo_n} is above HI {hi_n}; give the range low to high"
        )));
    }
    let step = step.unwrap_or(1).max(1);
    let count = (hi_n.abs_diff(lo_n)) / step + 1;
    if count > 10_000 {
        return Err(PlanError(format!(
            "-P/--parameter-scan {name}: {count} values; at most 10,000 (a larger -D STEP?)"
        )));
    }
    let values = (0..count)
        .map(|i| (i128::from(lo_n) + i128::from(i) * i128::from(step)).to_string())
        .collect();
    Ok(Parameter {
        name: name.into(),
        values,
    })
}

/// `-L NAME a,b,c`.
pub fn list(name: &str, values: &str) -> Result<Parameter, PlanError> {
    check_name(name, "-L/--parameter-list")?;
    let values: Vec<String> = values.split(',').map(String::from).collect();
    if values.iter().all(String::is_empty) {
        return Err(PlanError(format!(
            "-L/--parameter-list {name}: no values; give them comma-separated, e.g. -L {name} a,b,c"
        )));
    }
    Ok(Parameter {
        name: name.into(),
        values,
    })
}

fn check_name(name: &str, option: &str) -> Result<(), PlanError> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(PlanError(format!(
            "{option}: {name:?} is not a parameter name; use letters, digits and _ (it is written {{NAME}} in the commands)"
        )));
    }
    Ok(())
}

/// The `{word}`s of a command that look like parameters.
fn placeholders(command: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = command;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) => {
                let word = &after[..close];
                if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    out.push(word);
                }
                rest = &after[close..];
            }
            None => break,
        }
    }
    out
}

/// The instances to run: every command once per combination of parameter
/// values. With parameters, a `{word}` that names none is an error, and so
/// is a parameter no command uses.
pub fn expand(
    commands: &[String],
    names: &[String],
    params: &[Parameter],
    no_shell: bool,
) -> Result<Vec<Instance>, PlanError> {
    if commands.is_empty() {
        return Err(PlanError(
            "no command to compare; give one or more, each one quoted string".into(),
        ));
    }
    if !names.is_empty() && names.len() != commands.len() {
        return Err(PlanError(format!(
            "{} --name for {} command{}; give one name per command, in order",
            names.len(),
            commands.len(),
            if commands.len() == 1 { "" } else { "s" }
        )));
    }
    for (i, c) in commands.iter().enumerate() {
        if c.trim().is_empty() {
            return Err(PlanError(format!("command {} is empty", i + 1)));
        }
        if !params.is_empty() {
            for word in placeholders(c) {
                if !params.iter().any(|p| p.name == word) {
                    let known: Vec<String> =
                        params.iter().map(|p| format!("{{{}}}", p.name)).collect();
                    return Err(PlanError(format!(
                        "command {}: unknown {{{word}}}; the parameters are {} (from -P/-L)",
                        i + 1,
                        known.join(", ")
                    )));
                }
            }
        }
    }
    for p in params {
        let used = format!("{{{}}}", p.name);
        if !commands.iter().any(|c| c.contains(&used)) {
            return Err(PlanError(format!(
                "parameter {} is not used: write {used} in a command",
                p.name
            )));
        }
    }
    // Every combination of parameter values, the first parameter slowest.
    let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for p in params {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                p.values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((p.name.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    let mut out = Vec::new();
    for (i, c) in commands.iter().enumerate() {
        for combo in &combos {
            let mut command = c.clone();
            for (name, value) in combo {
                command = command.replace(&format!("{{{name}}}"), value);
            }
            let base = names.get(i).cloned().unwrap_or_else(|| c.clone());
            let name = if combo.is_empty() {
                names.get(i).cloned().unwrap_or_else(|| command.clone())
            } else {
                let set: Vec<String> = combo.iter().map(|(n, v)| format!("{n}={v}")).collect();
                if names.get(i).is_some() {
                    format!("{base} ({})", set.join(", "))
                } else {
                    command.clone()
                }
            };
            let argv = if no_shell {
                command.split_whitespace().map(OsString::from).collect()
            } else {
                vec!["sh".into(), "-c".into(), command.clone().into()]
            };
            out.push(Instance {
                name,
                command,
                argv,
                parameters: combo.clone(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn scans_and_lists_expand_every_combination() {
        let p = vec![
            scan("n", "1", "5", Some(2)).unwrap(),
            list("mode", "read,mmap").unwrap(),
        ];
        assert_eq!(p[0].values, s(&["1", "3", "5"]));
        let got = expand(&s(&["load -t{n} --{mode}"]), &[], &p, true).unwrap();
        assert_eq!(got.len(), 6);
        assert_eq!(got[0].command, "load -t1 --read");
        assert_eq!(got[5].argv, ["load", "-t5", "--mmap"]);
        let named = expand(&s(&["x {n}"]), &s(&["x"]), &p[..1], false).unwrap();
        assert_eq!(named[1].name, "x (n=3)");
        assert_eq!(named[1].argv, ["sh", "-c", "x 3"]);
    }

    #[test]
    fn bad_plans_say_what_to_fix() {
        assert!(scan("n", "5", "1", None).unwrap_err().0.contains("above"));
        assert!(
            scan("n", "a", "1", None)
                .unwrap_err()
                .0
                .contains("not an integer")
        );
        assert!(scan("n-1", "1", "2", None).is_err());
        let p = vec![scan("n", "1", "2", None).unwrap()];
        let e = expand(&s(&["x {m}"]), &[], &p, false).unwrap_err();
        assert!(e.0.contains("unknown {m}"), "{e}");
        assert!(
            expand(&s(&["x"]), &[], &p, false)
                .unwrap_err()
                .0
                .contains("not used")
        );
        assert!(expand(&[], &[], &[], false).is_err());
        assert!(expand(&s(&["a", "b"]), &s(&["x"]), &[], false).is_err());
        // Without parameters, braces are the command's own business.
        assert!(expand(&s(&["awk '{print}'"]), &[], &[], false).is_ok());
    }
}
