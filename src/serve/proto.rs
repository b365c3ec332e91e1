//! The `cuzk.v1` gRPC code generated from `proto/cuzk/v1/proving.proto` by `build.rs`: the
//! messages, the `ProvingEngine` server `cuzk serve` implements, and the client its tests
//! and Curio's engine callers use.

#![allow(missing_docs, clippy::all, clippy::pedantic)]

tonic::include_proto!("cuzk.v1");
