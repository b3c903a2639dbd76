//! Integration tests: the library's public API and the built `looptrace` binary.

mod support;
