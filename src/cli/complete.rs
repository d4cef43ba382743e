//! Shell completion scripts, generated from the clap definitions.
//!
//! zsh and fish complete `tally run`'s trailing COMMAND from its value
//! hint (`CommandWithArguments`); clap's bash script ignores value hints
//! of positionals and would offer tally's own options after `--`, so the
//! bash script gets the same rule added to its `run` case.

use std::io::{self, Write};

use clap_complete::Shell;

/// Inserted at the start of the bash script's `tally run` case: after
/// `--`, the first word is a command, the rest are files.
const BASH_RUN_COMMAND: &str = r#"            # After `--` comes the measured command: complete commands
            # for its first word and files after it, not tally's options.
            local tally_i
            for (( tally_i = 2; tally_i < COMP_CWORD; tally_i++ )); do
                if [[ "${COMP_WORDS[tally_i]}" == "--" ]]; then
                    if (( COMP_CWORD == tally_i + 1 )); then
                        COMPREPLY=( $(compgen -c -- "${cur}") )
                    else
                        compopt -o filenames 2>/dev/null
                        COMPREPLY=( $(compgen -f -- "${cur}") )
                    fi
                    return 0
                fi
            done
"#;

/// Inserted at the start of the bash script's `tally compare` case: after
/// `--`, every word is a command (one quoted string each).
const BASH_COMPARE_COMMANDS: &str = r#"            # After `--` come the compared commands: complete commands.
            local tally_i
            for (( tally_i = 2; tally_i < COMP_CWORD; tally_i++ )); do
                if [[ "${COMP_WORDS[tally_i]}" == "--" ]]; then
                    COMPREPLY=( $(compgen -c -- "${cur}") )
                    return 0
                fi
            done
"#;

/// Writes the completion script for `shell`.
pub fn write(shell: Shell, out: &mut dyn Write) -> io::Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut super::command(), "tally", &mut script);
    if shell == Shell::Bash {
        let mut text = String::from_utf8_lossy(&script).into_owned();
        for (anchor, rule) in [
            ("        tally__subcmd__run)\n", BASH_RUN_COMMAND),
            ("        tally__subcmd__compare)\n", BASH_COMPARE_COMMANDS),
        ] {
            if let Some(at) = text.find(anchor) {
                text.insert_str(at + anchor.len(), rule);
            }
        }
        return out.write_all(text.as_bytes());
    }
    out.write_all(&script)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_completes_commands_after_the_double_dash_of_run() {
        let mut out = Vec::new();
        write(Shell::Bash, &mut out).expect("write");
        let text = String::from_utf8_lossy(&out);
        let run = text
            .find("        tally__subcmd__run)\n")
            .expect("the run case");
        assert!(
            text[run..].starts_with(&format!("        tally__subcmd__run)\n{BASH_RUN_COMMAND}"))
        );
    }

    #[test]
    fn bash_completes_commands_after_the_double_dash_of_compare() {
        let mut out = Vec::new();
        write(Shell::Bash, &mut out).expect("write");
        let text = String::from_utf8_lossy(&out);
        let compare = text
            .find("        tally__subcmd__compare)\n")
            .expect("the compare case");
        assert!(text[compare..].starts_with(&format!(
            "        tally__subcmd__compare)\n{BASH_COMPARE_COMMANDS}"
        )));
        // The run rule is still in place.
        assert!(text.contains(BASH_RUN_COMMAND));
    }
}
