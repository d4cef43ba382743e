//! Text that did not come from tally, made safe to show: every process and
//! file name escaped one way ([`escape_name`]) and every path displayed
//! through it or kept losslessly in JSON ([`path`]). A leaf of the ground
//! floor: it imports nothing of tally, so every floor above can use it.

pub mod escape;
pub mod path;

pub use escape::{Foreign, controls_escaped, escape_name, escape_text};
