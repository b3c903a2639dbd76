//! Models propose the next action; they never run anything. This module holds the contract every
//! model implements and the models looptrace ships: scripted, raw JSON text through the strict
//! adapter, and live model servers over HTTP. The model that replays a recorded run lives with
//! replay (`crate::replay::ReplayModel`), above the trace format it reads.

mod contract;
mod json_adapter;
pub mod live;
mod scripted;

pub use contract::{
    CallRecord, InvalidOutput, InvalidOutputKind, LiveIdentity, Model, ModelError, ProviderError,
    ProviderErrorKind, RawModel, RetriedAttempt, TurnItem, Usage,
};
pub use json_adapter::{JsonModelAdapter, action_from_value, json_type_name, parse_json_action};
pub use scripted::{ModelCall, ScriptPlayer, ScriptedModel, ScriptedRawModel};
