//! `tally history`: every recorded result kept in a store, and the commit
//! where a figure changed found (E-divisive means, as Apache Otava does).

pub mod edivisive;
mod ttest;
