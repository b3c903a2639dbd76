//! Models propose the next action; they never run anything. This module holds the contract every
//! model implements and the models looptrace ships: scripted, raw JSON text through the strict
//! adapter, and replay of a recorded run.

mod contract;
mod json_adapter;
mod scripted;

pub use contract::{InvalidOutput, InvalidOutputKind, Model, ModelError, RawModel};
pub use json_adapter::{JsonModelAdapter, parse_json_action};
pub use scripted::{ModelCall, ScriptedModel, ScriptedRawModel};
