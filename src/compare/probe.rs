//! The speed probe, shared with `run -n`: see [`crate::run::probe`].

pub use crate::run::probe::*;
