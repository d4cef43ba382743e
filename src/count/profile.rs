//! Where the instructions went: per function, from Cachegrind's files
//! of every process of a run, and between two runs which functions the
//! change is in.
//!
//! Functions are keyed by (file, function), as `cg_diff` keys them, so
//! that a function's instructions in every process of a run add up (the
//! C library's `memcpy` in a shell and in the program it starts are one
//! function). Code without symbols (Cachegrind's `???`) is kept apart per
//! process, under the program that process ran: that is the object it
//! most likely sits in, and the one to give symbols to.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// The most functions a profile keeps (by instructions); the rest are
/// added up in [`Profile::other_instructions`].
pub const MAX_KEPT: usize = 2_000;

/// One function's instructions over a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionCost {
    /// The function's name, `???` when the code has no symbol.
    pub function: String,
    /// The source file Valgrind's debug information names, `???` when it
    /// has none.
    pub file: String,
    /// For code without symbols: the program of the process it ran in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    pub instructions: u64,
}

impl FunctionCost {
    /// For people: `deflate_slow (deflate.c)`, `code without symbols
    /// (gzip)`; foreign text escaped.
    pub fn describe(&self) -> String {
        let base = |p: &str| {
            std::path::Path::new(p)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.to_string())
        };
        let name = crate::text::escape_text(&self.function);
        match (&self.object, self.file.as_str()) {
            (Some(obj), _) if self.function == "???" => format!(
                "code without symbols ({})",
                crate::text::escape_text(&base(obj))
            ),
            (_, "???") => name,
            (_, file) => format!("{name} ({})", crate::text::escape_text(&base(file))),
        }
    }

    fn key(&self) -> (&str, &str, Option<&str>) {
        (&self.function, &self.file, self.object.as_deref())
    }
}

/// Where a run's instructions went.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// Every instruction counted, in every process.
    pub total_instructions: u64,
    /// The functions with the most instructions, most first (at most
    /// [`MAX_KEPT`]).
    pub functions: Vec<FunctionCost>,
    /// Instructions of the functions not kept.
    pub other_instructions: u64,
}

/// The process a file came from: its command (`cmd:`) and the costs.
pub struct ProcessCosts<'a> {
    /// The program the process ran, as Valgrind named it.
    pub program: &'a str,
    pub functions: &'a [super::cachegrind::FunctionCosts],
    /// The position of `Ir` among the file's events.
    pub ir: usize,
}

impl Profile {
    /// The profile of every process of a run together.
    pub fn of(processes: &[ProcessCosts]) -> Profile {
        let mut at: HashMap<(String, String, Option<String>), u64> = HashMap::new();
        let mut total = 0u64;
        for p in processes {
            for f in p.functions {
                let ir = f.costs.get(p.ir).copied().unwrap_or(0);
                if ir == 0 {
                    continue;
                }
                total = total.saturating_add(ir);
                let object = (f.function == "???").then(|| p.program.to_string());
                let slot = at
                    .entry((f.function.clone(), f.file.clone(), object))
                    .or_default();
                *slot = slot.saturating_add(ir);
            }
        }
        let mut functions: Vec<FunctionCost> = at
            .into_iter()
            .map(|((function, file, object), instructions)| FunctionCost {
                function,
                file,
                object,
                instructions,
            })
            .collect();
        functions.sort_by(|a, b| {
            b.instructions
                .cmp(&a.instructions)
                .then_with(|| a.key().cmp(&b.key()))
        });
        let other = functions
            .iter()
            .skip(MAX_KEPT)
            .fold(0u64, |s, f| s.saturating_add(f.instructions));
        functions.truncate(MAX_KEPT);
        Profile {
            total_instructions: total,
            functions,
            other_instructions: other,
        }
    }

    /// The profile with at most `most` functions (the others added to
    /// `other_instructions`) and names and files cut to `text` bytes: what
    /// a baseline keeps.
    pub fn truncated(&self, most: usize, text: usize) -> Profile {
        let cut = |s: &str| -> String {
            let mut end = s.len().min(text);
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s[..end].to_string()
        };
        let dropped = self
            .functions
            .iter()
            .skip(most)
            .fold(0u64, |a, f| a.saturating_add(f.instructions));
        Profile {
            total_instructions: self.total_instructions,
            functions: self
                .functions
                .iter()
                .take(most)
                .map(|f| FunctionCost {
                    function: cut(&f.function),
                    file: cut(&f.file),
                    object: f.object.as_deref().map(cut),
                    instructions: f.instructions,
                })
                .collect(),
            other_instructions: self.other_instructions.saturating_add(dropped),
        }
    }

    /// Why the profile, read from a file, does not hold together: more
    /// instructions in its functions than in all.
    pub fn check(&self, most: usize, text: usize) -> Result<(), String> {
        if self.functions.len() > most {
            return Err(format!(
                "{} functions, at most {most}",
                self.functions.len()
            ));
        }
        if let Some(f) = self.functions.iter().find(|f| {
            f.function.len() > text
                || f.file.len() > text
                || f.object.as_ref().is_some_and(|o| o.len() > text)
        }) {
            return Err(format!(
                "a function's name or file of {} bytes, at most {text}",
                f.function.len().max(f.file.len())
            ));
        }
        let kept = self
            .functions
            .iter()
            .try_fold(self.other_instructions, |a, f| {
                a.checked_add(f.instructions)
            });
        match kept {
            Some(k) if k == self.total_instructions => Ok(()),
            _ => Err(format!(
                "its functions and other_instructions do not add up to total_instructions ({})",
                self.total_instructions
            )),
        }
    }

    /// The instructions of code without symbols, per program, most first.
    pub fn without_symbols(&self) -> Vec<(&str, u64)> {
        let mut out: Vec<(&str, u64)> = self
            .functions
            .iter()
            .filter(|f| f.function == "???")
            .filter_map(|f| Some((f.object.as_deref()?, f.instructions)))
            .collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        out
    }
}

/// One function's part in a change between two runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionChange {
    #[serde(flatten)]
    pub function: FunctionCost,
    /// Its instructions in the reference's run (`instructions` is this
    /// run's); 0 where it ran in one of them only.
    pub reference_instructions: u64,
    /// This run's over the reference's, signed.
    pub change: i64,
    /// `change` over the whole change of the run's instructions.
    pub share: f64,
}

/// Which functions a change of instructions is in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// The whole change: this run's instructions less the reference's.
    pub change: i64,
    /// The functions whose instructions changed most (by size of their
    /// change, at most the number asked for), each with its share.
    pub functions: Vec<FunctionChange>,
    /// The part of the change in functions neither profile kept (see
    /// [`MAX_KEPT`]), which cannot be put on any function.
    pub unattributed: i64,
}

/// The functions whose instructions changed most from `reference` to
/// `now`, at most `most`. `None` when the instructions did not change.
///
/// A function kept by one profile only changed by all of its
/// instructions when the other profile is whole (kept every function);
/// when the other dropped some (see [`MAX_KEPT`], and a baseline's
/// shorter list), it may be among them, and its part of the change
/// cannot be told: it goes to [`Attribution::unattributed`] with every
/// other part no function can be given.
pub fn attribute(now: &Profile, reference: &Profile, most: usize) -> Option<Attribution> {
    let change = signed(now.total_instructions) - signed(reference.total_instructions);
    if change == 0 {
        return None;
    }
    let then: HashMap<_, &FunctionCost> =
        reference.functions.iter().map(|f| (f.key(), f)).collect();
    let here: HashMap<_, &FunctionCost> = now.functions.iter().map(|f| (f.key(), f)).collect();
    let mut changes: Vec<FunctionChange> = Vec::new();
    for f in &now.functions {
        match then.get(&f.key()) {
            Some(g) => changes.push(change_of(f.clone(), g.instructions, change)),
            None if reference.other_instructions == 0 => {
                changes.push(change_of(f.clone(), 0, change))
            }
            None => {}
        }
    }
    for g in &reference.functions {
        if !here.contains_key(&g.key()) && now.other_instructions == 0 {
            let gone = FunctionCost {
                instructions: 0,
                ..(*g).clone()
            };
            changes.push(change_of(gone, g.instructions, change));
        }
    }
    changes.retain(|c| c.change != 0);
    let attributed = changes.iter().fold(0i64, |a, c| a.saturating_add(c.change));
    changes.sort_by(|a, b| {
        b.change
            .unsigned_abs()
            .cmp(&a.change.unsigned_abs())
            .then_with(|| a.function.key().cmp(&b.function.key()))
    });
    changes.truncate(most);
    Some(Attribution {
        change,
        functions: changes,
        unattributed: change.saturating_sub(attributed),
    })
}

fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn change_of(f: FunctionCost, before: u64, whole: i64) -> FunctionChange {
    let change = signed(f.instructions) - signed(before);
    FunctionChange {
        share: change as f64 / whole as f64,
        function: f,
        reference_instructions: before,
        change,
    }
}

#[cfg(test)]
mod tests {
    use super::super::cachegrind::FunctionCosts;
    use super::*;

    fn costs(file: &str, function: &str, ir: u64) -> FunctionCosts {
        FunctionCosts {
            file: file.into(),
            function: function.into(),
            costs: vec![ir, 0],
        }
    }

    fn profile(processes: &[(&str, Vec<FunctionCosts>)]) -> Profile {
        let p: Vec<ProcessCosts> = processes
            .iter()
            .map(|(program, f)| ProcessCosts {
                program,
                functions: f,
                ir: 0,
            })
            .collect();
        Profile::of(&p)
    }

    #[test]
    fn a_function_in_two_processes_is_one_and_code_without_symbols_stays_with_its_program() {
        let p = profile(&[
            (
                "sh",
                vec![costs("memcpy.S", "memcpy", 10), costs("???", "???", 5)],
            ),
            (
                "/usr/bin/gzip",
                vec![costs("memcpy.S", "memcpy", 30), costs("???", "???", 100)],
            ),
        ]);
        assert_eq!(p.total_instructions, 145);
        assert_eq!(p.functions[0].describe(), "code without symbols (gzip)");
        assert_eq!(p.functions[1].describe(), "memcpy (memcpy.S)");
        assert_eq!(p.functions[1].instructions, 40);
        assert_eq!(p.without_symbols(), [("/usr/bin/gzip", 100), ("sh", 5)]);
    }

    #[test]
    fn the_change_is_put_on_the_functions_that_made_it() {
        let before = profile(&[(
            "./two",
            vec![
                costs("two.c", "work_a", 1000),
                costs("two.c", "work_b", 1000),
            ],
        )]);
        let after = profile(&[(
            "./two",
            vec![
                costs("two.c", "work_a", 2000),
                costs("two.c", "work_b", 1010),
                costs("two.c", "new", 5),
            ],
        )]);
        let a = attribute(&after, &before, 10).expect("a change");
        assert_eq!(a.change, 1015);
        assert_eq!(a.functions[0].function.function, "work_a");
        assert!((a.functions[0].share - 1000.0 / 1015.0).abs() < 1e-12);
        assert_eq!(a.functions.len(), 3);
        assert_eq!(a.unattributed, 0);
        assert_eq!(attribute(&before, &before, 10), None);
        // A function gone counts against the change.
        let gone = attribute(&before, &after, 10).expect("a change");
        assert_eq!(gone.functions[0].change, -1000);
        assert!(
            gone.functions
                .iter()
                .any(|f| f.function.function == "new" && f.change == -5)
        );
    }
}
