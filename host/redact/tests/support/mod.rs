//! Helpers shared by the integration tests and the benchmark.

#[allow(dead_code, reason = "each test binary uses part of the support module")]
pub mod corpus;
pub mod planted;
